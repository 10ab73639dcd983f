package io.s3stream.internal.metadata;

import io.s3stream.internal.util.MemNames;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.MetadataStoreProvider;
import io.s3stream.spi.ObjectStore;

import java.net.URI;
import java.time.InstantSource;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Serves {@code mem://name}: a handle on the JVM-wide in-memory manifest called {@code name}, created on first use.
 *
 * <p>Design note: the manifest outlives its handles so that an engine restarted in the same JVM (as tests do to
 * simulate a crash) finds the streams and objects its previous instance left. Closing a handle closes only that
 * handle; {@link #clear(String)} forgets a manifest so that tests start from nothing. Handles opened before a
 * {@code clear} keep the forgotten manifest. Shared manifests use the system clock; tests that need fake time build
 * an {@link InMemoryMetadataStore} directly. The engine's object store is ignored.
 */
public final class InMemoryMetadataStoreProvider implements MetadataStoreProvider {

    private static final ConcurrentMap<String, ManifestState> MANIFESTS = new ConcurrentHashMap<>();

    /** Used by {@link java.util.ServiceLoader}. */
    public InMemoryMetadataStoreProvider() {
    }

    @Override
    public String scheme() {
        return "mem";
    }

    @Override
    public MetadataStore open(URI uri, ObjectStore objectStore) {
        return new InMemoryMetadataStore(MANIFESTS.computeIfAbsent(MemNames.of(uri, "mem metadata"),
                name -> new ManifestState(InstantSource.system())));
    }

    /** Forgets the shared manifest called {@code name}, if any; the next {@code open} of it starts empty. */
    public static void clear(String name) {
        MANIFESTS.remove(name);
    }
}
