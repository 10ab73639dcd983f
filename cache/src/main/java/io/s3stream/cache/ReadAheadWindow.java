package io.s3stream.cache;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The read-ahead window of one sequential reader: how many bytes past its position to keep read ahead.
 *
 * <p>Design note: the window doubles whenever the reader had to wait for the object store (it asked for a block that
 * was neither cached nor read ahead, or was still in flight): the reader consumes faster than read-ahead supplies, so
 * read further ahead, up to {@code maxBytes}. It halves when a block read ahead for this reader was evicted unread:
 * the read-ahead area is crowded, or the reader slowed down or left, so keep less memory in its name. Both rules are
 * multiplicative, like TCP's congestion window, so several readers sharing one area settle on windows that fit it.
 * The window is updated from the reader's fetch completions and from eviction callbacks, hence atomic.
 */
public final class ReadAheadWindow implements ReadAheadListener {
    private final int minBytes;
    private final int maxBytes;
    private final AtomicInteger bytes;
    private final AtomicInteger evictedUnread = new AtomicInteger();

    /**
     * Creates a window.
     *
     * @param minBytes the smallest (and first) window, positive
     * @param maxBytes the largest window, at least {@code minBytes}
     */
    public ReadAheadWindow(int minBytes, int maxBytes) {
        if (minBytes <= 0 || maxBytes < minBytes) {
            throw new IllegalArgumentException("need 0 < minBytes <= maxBytes, got " + minBytes + ", " + maxBytes);
        }
        this.minBytes = minBytes;
        this.maxBytes = maxBytes;
        this.bytes = new AtomicInteger(minBytes);
    }

    /**
     * Returns the current window.
     *
     * @return bytes to keep read ahead
     */
    public int bytes() {
        return bytes.get();
    }

    /**
     * Returns how many blocks read ahead for this window were evicted unread.
     *
     * @return the count
     */
    public int evictedUnread() {
        return evictedUnread.get();
    }

    /** The reader waited for the store: grow. */
    public void onMiss() {
        bytes.updateAndGet(b -> (int) Math.min(maxBytes, 2L * b));
    }

    @Override
    public void evictedUnread(BlockKey key, int blockBytes) {
        evictedUnread.incrementAndGet();
        bytes.updateAndGet(b -> Math.max(minBytes, b / 2));
    }
}
