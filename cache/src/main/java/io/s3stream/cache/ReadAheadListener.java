package io.s3stream.cache;

/**
 * Told when a block it read ahead left the read-ahead area without being read; a read-ahead policy shrinks its
 * window on this signal.
 */
@FunctionalInterface
public interface ReadAheadListener {
    /** A listener that ignores the signal. */
    ReadAheadListener NONE = (key, bytes) -> { };

    /**
     * Called, outside the cache's locks, after a block read ahead for this listener was evicted unread.
     *
     * @param key the block
     * @param bytes its size
     */
    void evictedUnread(BlockKey key, int bytes);
}
