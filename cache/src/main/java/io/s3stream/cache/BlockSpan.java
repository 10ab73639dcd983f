package io.s3stream.cache;

import java.util.Objects;

/**
 * A block to read: its identity and its length in bytes. Two spans are adjacent when they belong to the same object
 * and the second starts where the first ends; adjacent missing spans are loaded with one request.
 *
 * @param key the block
 * @param lengthBytes the block's size in bytes, positive
 */
public record BlockSpan(BlockKey key, int lengthBytes) {
    /**
     * Validates the span.
     *
     * @throws IllegalArgumentException if the length is not positive
     */
    public BlockSpan {
        Objects.requireNonNull(key, "key");
        if (lengthBytes <= 0) {
            throw new IllegalArgumentException("lengthBytes must be positive, got " + lengthBytes);
        }
    }

    /**
     * Returns whether {@code next} starts exactly where this span ends, in the same object.
     *
     * @param next the following span
     * @return {@code true} if one request can read both
     */
    public boolean isFollowedBy(BlockSpan next) {
        return next.key.objectId() == key.objectId() && next.key.position() == key.position() + lengthBytes;
    }
}
