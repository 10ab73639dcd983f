package io.s3stream.kafka.shell.group;

import io.s3stream.KeyValues;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Writes this shell's offset commits to the key-value space in as few changes as it can, without waiting on purpose:
 * the first commit is written at once, and the commits that arrive while a change is being written queue up and go
 * together in the next one (the group commit a WAL does, applied to offsets). Each change is one manifest entry, that
 * is one object-store write, so a consumer that commits after every poll costs at most one write per round trip of the
 * store instead of one per request: ~1,100 manifest entries a second in the soak test before, on {@code file://}.
 *
 * <p>A commit is acknowledged only once the change holding it is durable; if that change fails (the store, or this
 * shell fenced), every commit in it fails with the same error and none is applied, as when written alone. Commits
 * of the same key in one change keep the later one, the order they arrived in.
 *
 * <p>Coalescing only merges commits that are in flight at the same time: a consumer that commits synchronously has one
 * at a time, so with two members the soak test's entries held one or two commits each and the rate fell from ~645 to
 * ~470 a second on {@code file://} (a write there takes a millisecond or two; on S3, tens). A linger
 * ({@code s3stream.kafka.offsets.commit.linger.ms}) bounds the rate at the price of commit latency.
 */
final class OffsetWriter {
    /** At most this many keys per change, so one entry stays a modest object even when thousands queue. */
    static final int MAX_KEYS_PER_CHANGE = 10_000;

    private final KeyValues kv;
    private final Executor executor;
    private final ScheduledExecutorService timer;
    private final long lingerMs;
    private final ArrayDeque<Pending> queue = new ArrayDeque<>();
    private boolean writing;

    private record Pending(Map<String, byte[]> writes, CompletableFuture<Void> done, long arrivedNanos) {
    }

    /** {@code executor} runs the next change after one completes (never the store's own completion thread). */
    OffsetWriter(KeyValues kv, Executor executor) {
        this(kv, executor, null, 0);
    }

    /**
     * With {@code lingerMs > 0} a change is written {@code lingerMs} after the first commit it holds arrived
     * (scheduled on {@code timer}), so a shell writes at most about one change per linger: the cost knob for consumers
     * that commit after every poll, paid in commit latency.
     */
    OffsetWriter(KeyValues kv, Executor executor, ScheduledExecutorService timer, long lingerMs) {
        if (lingerMs < 0 || (lingerMs > 0 && timer == null)) {
            throw new IllegalArgumentException("linger " + lingerMs + " ms needs a timer");
        }
        this.kv = kv;
        this.executor = executor;
        this.timer = timer;
        this.lingerMs = lingerMs;
    }

    /** Completes once {@code writes} are durable in the key-value space. */
    CompletableFuture<Void> write(Map<String, byte[]> writes) {
        Pending p = new Pending(writes, new CompletableFuture<>(), System.nanoTime());
        synchronized (this) {
            queue.add(p);
            if (writing) {
                return p.done;
            }
            writing = true;
        }
        writeLater(p.arrivedNanos);
        return p.done;
    }

    /** Writes the queued commits once the oldest, which arrived at {@code oldestNanos}, has lingered long enough. */
    private void writeLater(long oldestNanos) {
        long waitNanos = TimeUnit.MILLISECONDS.toNanos(lingerMs) - (System.nanoTime() - oldestNanos);
        if (waitNanos <= 0) {
            writeQueued();
            return;
        }
        try {
            timer.schedule(() -> executor.execute(this::writeQueued), waitNanos, TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            writeQueued();
        }
    }

    private void writeQueued() {
        List<Pending> batch = new ArrayList<>();
        Map<String, byte[]> merged = new HashMap<>();
        synchronized (this) {
            while (!queue.isEmpty()
                    && (batch.isEmpty() || merged.size() + queue.peek().writes.size() <= MAX_KEYS_PER_CHANGE)) {
                Pending p = queue.poll();
                batch.add(p);
                merged.putAll(p.writes);
            }
            if (batch.isEmpty()) {
                writing = false;
                return;
            }
        }
        write(batch, merged);
    }

    private void write(List<Pending> batch, Map<String, byte[]> merged) {
        CompletableFuture<Void> change;
        try {
            change = kv.update(merged, List.of());
        } catch (RuntimeException e) {
            change = CompletableFuture.failedFuture(e);
        }
        change.whenCompleteAsync((v, error) -> {
            for (Pending p : batch) {
                if (error == null) {
                    p.done.complete(null);
                } else {
                    p.done.completeExceptionally(error);
                }
            }
            Pending oldest;
            synchronized (this) {
                oldest = queue.peek();
                writing = oldest != null;
            }
            if (oldest != null) {
                writeLater(oldest.arrivedNanos);
            }
        }, executor);
    }
}
