package io.s3stream.spi;

import java.net.URI;

/**
 * Finds an {@link ObjectStore} backend by URI scheme ({@code file}, {@code mem}, {@code s3}, {@code azblob})
 * through {@link java.util.ServiceLoader}.
 */
public interface ObjectStoreProvider {

    /** The URI scheme this provider serves. */
    String scheme();

    /**
     * Opens the store. Implementations check what they cheaply can (the directory exists and is writable, the bucket
     * answers) and fail with {@link ObjectStoreException} naming the URI and the problem instead of hanging.
     */
    ObjectStore open(URI uri);
}
