package io.s3stream.internal.manifest;

import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.MetadataStoreProvider;
import io.s3stream.spi.ObjectStore;

import java.net.URI;
import java.time.InstantSource;

/**
 * Serves {@code manifest:<name>[?k=v...]}: a {@link ManifestMetadataStore} kept in the engine's object store, with
 * the settings of {@link ManifestConfig#fromUri} and the system clock. The engine picks this scheme by default when
 * no metadata URI is configured.
 */
public final class ManifestMetadataStoreProvider implements MetadataStoreProvider {

    /** Used by {@link java.util.ServiceLoader}. */
    public ManifestMetadataStoreProvider() {
    }

    @Override
    public String scheme() {
        return "manifest";
    }

    @Override
    public MetadataStore open(URI uri, ObjectStore objectStore) {
        return ManifestMetadataStore.open(objectStore, InstantSource.system(), ManifestConfig.fromUri(uri));
    }
}
