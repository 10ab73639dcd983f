package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.s3stream.internal.util.Futures;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

/**
 * Range-read merging for {@link ObjectStorage}: ranged reads of one object that wait for a request slot at the same
 * time, and lie within {@code maxGap} bytes of each other, become one GET of at most {@code maxBytes}.
 *
 * <p>A group whose reads do not overlap is read as a split GET ({@code ObjectStore.getSplit}): one request, each read
 * (and each gap between two reads, released on arrival) in a buffer of its own, so a caller that keeps its buffer (the
 * block cache keeps blocks) holds exactly the bytes it asked for. Only reads that overlap (two readers of one index
 * range) share one buffer, each with a retained slice of it.
 *
 * <p>Design note: a read opens a {@link Group} and launches its GET at once; the GET's request waits in the scheduler
 * like any other. Until that request gets a slot and {@linkplain Group#seal() seals} the group, later reads nearby join
 * it instead of queueing their own GET. A merge therefore never delays a read: only reads that are queued anyway are
 * merged, and the range is fixed at the moment the GET is sent.
 */
final class ReadMerger {
    private final int maxGap;
    private final int maxBytes;
    private final LongAdder merged;
    private final Map<String, List<Group>> open = new HashMap<>(); // guarded by itself

    /**
     * @param maxGap   largest gap between two reads merged into one GET
     * @param maxBytes largest merged GET
     * @param merged   counts the reads served by another read's GET
     */
    ReadMerger(int maxGap, int maxBytes, LongAdder merged) {
        this.maxGap = maxGap;
        this.maxBytes = maxBytes;
        this.merged = merged;
    }

    /**
     * Reads {@code [position, position + length)} of {@code key}: joins an open group of that object, or opens one and
     * starts its GET with {@code launch}, which must {@link Group#seal()} the group when the request is sent, then read
     * {@link Group#start()} and {@link Group#pieces()} and answer one buffer per piece.
     */
    CompletableFuture<ByteBuf> read(String key, long position, int length,
                                    Function<Group, CompletableFuture<List<ByteBuf>>> launch) {
        Waiter waiter = new Waiter(position, length, new CompletableFuture<>());
        Group group;
        synchronized (open) {
            List<Group> groups = open.computeIfAbsent(key, k -> new ArrayList<>());
            for (Group g : groups) {
                if (g.absorb(waiter)) {
                    merged.increment();
                    return waiter.result;
                }
            }
            group = new Group(key, waiter);
            groups.add(group);
        }
        launch.apply(group).whenComplete(group::distribute);
        return waiter.result;
    }

    private record Waiter(long position, int length, CompletableFuture<ByteBuf> result) {
    }

    /** Reads of one object gathered while the first of them waits for a slot; sealed when it gets one. */
    final class Group {
        private final String key;
        private final List<Waiter> waiters = new ArrayList<>();
        private long start;
        private long end;
        private boolean sealed;
        private int[] pieces;

        private Group(String key, Waiter first) {
            this.key = key;
            waiters.add(first);
            start = first.position;
            end = first.position + first.length;
        }

        /** The first byte of the merged range; fixed once sealed. */
        long start() {
            synchronized (open) {
                return start;
            }
        }

        /**
         * The lengths the merged range is read in, consecutive from {@link #start()}: one per read and one per gap
         * between two reads, or the whole range as one piece when reads overlap. Set by {@link #seal()}.
         */
        int[] pieces() {
            synchronized (open) {
                if (!sealed) {
                    throw new IllegalStateException("the group's pieces are fixed when it is sealed");
                }
                return pieces;
            }
        }

        /** Called with the groups' lock held. */
        private boolean absorb(Waiter w) {
            if (sealed) {
                return false;
            }
            long newStart = Math.min(start, w.position);
            long newEnd = Math.max(end, w.position + w.length);
            boolean near = w.position <= end + maxGap && w.position + w.length >= start - maxGap;
            if (!near || newEnd - newStart > maxBytes) {
                return false;
            }
            start = newStart;
            end = newEnd;
            waiters.add(w);
            return true;
        }

        /** No read joins the group after this: its GET is being sent. Idempotent (a retried GET seals again). */
        void seal() {
            synchronized (open) {
                if (!sealed) {
                    sealed = true;
                    pieces = plan();
                    List<Group> groups = open.get(key);
                    if (groups != null) {
                        groups.remove(this);
                        if (groups.isEmpty()) {
                            open.remove(key);
                        }
                    }
                }
            }
        }

        /** Orders the waiters by position (for good: {@link #distribute} walks them in that order). */
        private int[] plan() {
            waiters.sort(Comparator.comparingLong(Waiter::position));
            int[] lengths = new int[2 * waiters.size()];
            int n = 0;
            long at = start;
            for (Waiter w : waiters) {
                if (w.position < at) {
                    return new int[] {(int) (end - start)};
                }
                if (w.position > at) {
                    lengths[n++] = (int) (w.position - at);
                }
                lengths[n++] = w.length;
                at = w.position + w.length;
            }
            return Arrays.copyOf(lengths, n);
        }

        /**
         * Hands each waiter its buffer: its own piece of a split read (the gaps' pieces are released), or a retained
         * slice of the one buffer when the reads overlap. A waiter that is already done does not take its buffer.
         */
        private void distribute(List<ByteBuf> parts, Throwable error) {
            if (error != null) {
                Throwable cause = Futures.unwrap(error);
                for (Waiter w : waiters) {
                    w.result.completeExceptionally(cause);
                }
                return;
            }
            if (waiters.size() == 1 || parts.size() > 1) {
                long at = start;
                int next = 0;
                for (Waiter w : waiters) {
                    if (w.position > at) {
                        parts.get(next++).release(); // the gap before this read
                    }
                    handOver(w, parts.get(next++));
                    at = w.position + w.length;
                }
                return;
            }
            ByteBuf buf = parts.getFirst();
            try {
                for (Waiter w : waiters) {
                    handOver(w, buf.retainedSlice(buf.readerIndex() + (int) (w.position - start), w.length));
                }
            } finally {
                buf.release();
            }
        }

        private static void handOver(Waiter w, ByteBuf buf) {
            if (!w.result.complete(buf)) {
                buf.release();
            }
        }
    }
}
