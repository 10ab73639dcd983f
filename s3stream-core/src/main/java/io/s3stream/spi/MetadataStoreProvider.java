package io.s3stream.spi;

import java.net.URI;

/** Finds a {@link MetadataStore} by URI scheme through {@link java.util.ServiceLoader}. */
public interface MetadataStoreProvider {

    String scheme();

    /**
     * Opens the store. {@code objectStore} is the engine's object store with its request and byte counters, so that
     * a manifest kept in object storage shows in the cost report; it is not behind the engine's retries or request
     * scheduler: a manifest keeps its own retry policy (a conditional write must not be blindly repeated) and its
     * commits must not queue behind catch-up reads. In-memory stores ignore it.
     */
    MetadataStore open(URI uri, ObjectStore objectStore);
}
