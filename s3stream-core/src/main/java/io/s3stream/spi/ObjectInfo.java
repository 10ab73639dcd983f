package io.s3stream.spi;

/**
 * An object's key and size as listed by an {@link ObjectStore}.
 *
 * @param key          the key as the caller wrote it: a store that adds a prefix of its own strips it
 * @param sizeBytes    size
 * @param lastModifiedMs last modification time in epoch milliseconds, or 0 where the store does not say
 */
public record ObjectInfo(String key, long sizeBytes, long lastModifiedMs) {
}
