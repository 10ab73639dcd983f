package io.s3stream.wal.blockdev.internal;

import java.util.ArrayDeque;

/**
 * The acknowledged, untrimmed part of the ring as a queue of {@code [start, endOfLastRecord)} entries in position
 * order; each start is a valid scan start for recovery. Consecutive records closer than the granularity share an
 * entry, so the queue stays short (about {@code ringBytes / granularity} entries) however small the records. Not
 * thread-safe: owned by the WAL's conductor (filled by recovery before the conductor starts).
 */
final class LiveRanges {

    private final ArrayDeque<long[]> entries = new ArrayDeque<>();
    private final long granularity;

    LiveRanges(long ringBytes) {
        this.granularity = Math.min(64 * 1024, ringBytes / 64);
    }

    /** Records {@code [start, end)}, which starts at or after the end of everything recorded so far. */
    void add(long start, long end) {
        long[] last = entries.peekLast();
        if (last != null && start - last[0] < granularity) {
            last[1] = end;
        } else {
            entries.addLast(new long[]{start, end});
        }
    }

    /** Forgets every entry that ends at or below {@code position}. */
    void trimTo(long position) {
        long[] first;
        while ((first = entries.peekFirst()) != null && first[1] <= position) {
            entries.pollFirst();
        }
    }

    boolean isEmpty() {
        return entries.isEmpty();
    }

    /** The start of the oldest entry; only when not {@link #isEmpty()}. */
    long firstStart() {
        return entries.getFirst()[0];
    }
}
