package io.s3stream.internal.compaction;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts the bytes compaction holds in buffers (read-ahead chunks, the open block, parts being uploaded) and the peak,
 * so the memory budget is measured, not assumed. Updated from the owner thread and from request completions.
 */
final class MemoryGauge {
    private final AtomicLong inUse = new AtomicLong();
    private final AtomicLong peak = new AtomicLong();

    void add(long bytes) {
        long now = inUse.addAndGet(bytes);
        peak.accumulateAndGet(now, Math::max);
    }

    void remove(long bytes) {
        inUse.addAndGet(-bytes);
    }

    long inUse() {
        return inUse.get();
    }

    long peak() {
        return peak.get();
    }
}
