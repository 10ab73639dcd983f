package io.s3stream.internal.store;

import io.s3stream.internal.store.common.StoreSupport;
import io.s3stream.internal.util.MemNames;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreProvider;

import java.net.URI;

/**
 * Opens a {@link MemObjectStore} for {@code mem://name} (tests only: nothing survives the JVM). The only setting is
 * the query parameter {@code minPartSizeBytes} (default 5 MiB, as on S3).
 */
public final class MemObjectStoreProvider implements ObjectStoreProvider {

    /** Creates the provider; {@link java.util.ServiceLoader} calls this. */
    public MemObjectStoreProvider() {
    }

    @Override
    public String scheme() {
        return "mem";
    }

    @Override
    public ObjectStore open(URI uri) {
        return MemObjectStore.open(MemNames.of(uri, "mem object store"), StoreSupport.minPartSizeBytes(uri));
    }
}
