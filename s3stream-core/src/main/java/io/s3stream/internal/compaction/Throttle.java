package io.s3stream.internal.compaction;

/**
 * A token bucket limiting the bytes compaction moves through this node per second. Only the compactor's owner thread
 * calls {@link #acquire}, which sleeps that thread; nothing else ever waits on it.
 *
 * <p>The bucket holds at most one second of tokens, so an idle compactor cannot save up for a burst longer than that.
 */
final class Throttle {
    private final long bytesPerSecond;
    private long available;
    private long lastRefillNanos;
    /** Bytes taken since creation. */
    private long taken;

    Throttle(long bytesPerSecond) {
        this.bytesPerSecond = bytesPerSecond;
        this.available = bytesPerSecond;
        this.lastRefillNanos = System.nanoTime();
    }

    /** Takes {@code bytes} tokens, sleeping until the bucket has refilled enough (a debt is allowed, then repaid). */
    void acquire(long bytes) {
        refill();
        taken += bytes;
        available -= bytes;
        if (available < 0) {
            long waitNanos = -available * 1_000_000_000L / bytesPerSecond;
            try {
                Thread.sleep(waitNanos / 1_000_000, (int) (waitNanos % 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CompactionException("compaction interrupted while throttled", e);
            }
            refill();
        }
    }

    /** Bytes taken since creation (read by the owner thread, or after it is done). */
    long taken() {
        return taken;
    }

    private void refill() {
        long now = System.nanoTime();
        long earned = (now - lastRefillNanos) * bytesPerSecond / 1_000_000_000L;
        if (earned > 0) {
            available = Math.min(bytesPerSecond, available + earned);
            lastRefillNanos = now;
        }
    }
}
