package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.s3stream.internal.util.Futures;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

/**
 * Range-read merging for {@link ObjectStorage}: ranged reads of one object that wait for a request slot at the same
 * time, and lie within {@code maxGap} bytes of each other, become one GET of at most {@code maxBytes}; each caller gets
 * its own retained slice of the one buffer.
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
     * starts its GET with {@code launch}, which must {@link Group#seal()} the group when the request is sent and then
     * read {@link Group#start()} and {@link Group#length()}.
     */
    CompletableFuture<ByteBuf> read(String key, long position, int length,
                                    Function<Group, CompletableFuture<ByteBuf>> launch) {
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

        /** The length of the merged range; fixed once sealed. */
        int length() {
            synchronized (open) {
                return (int) (end - start);
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

        /** Hands each waiter its slice (a retained slice of the one buffer), then drops the group's reference. */
        private void distribute(ByteBuf buf, Throwable error) {
            if (error != null) {
                Throwable cause = Futures.unwrap(error);
                for (Waiter w : waiters) {
                    w.result.completeExceptionally(cause);
                }
                return;
            }
            try {
                for (Waiter w : waiters) {
                    w.result.complete(buf.retainedSlice(buf.readerIndex() + (int) (w.position - start), w.length));
                }
            } finally {
                buf.release();
            }
        }
    }
}
