package io.s3stream.spi;

import java.net.URI;

/** Finds a {@link MetadataStore} by URI scheme through {@link java.util.ServiceLoader}. */
public interface MetadataStoreProvider {

    String scheme();

    /**
     * Opens the store. {@code objectStore} is the engine's object store (already wrapped with retries and counters),
     * which a manifest kept in object storage uses; in-memory stores ignore it.
     */
    MetadataStore open(URI uri, ObjectStore objectStore);
}
