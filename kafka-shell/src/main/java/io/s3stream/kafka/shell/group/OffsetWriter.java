package io.s3stream.kafka.shell.group;

import io.s3stream.KeyValues;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

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
 */
final class OffsetWriter {
    /** At most this many keys per change, so one entry stays a modest object even when thousands queue. */
    static final int MAX_KEYS_PER_CHANGE = 10_000;

    private final KeyValues kv;
    private final Executor executor;
    private final ArrayDeque<Pending> queue = new ArrayDeque<>();
    private boolean writing;

    private record Pending(Map<String, byte[]> writes, CompletableFuture<Void> done) {
    }

    /** {@code executor} runs the next change after one completes (never the store's own completion thread). */
    OffsetWriter(KeyValues kv, Executor executor) {
        this.kv = kv;
        this.executor = executor;
    }

    /** Completes once {@code writes} are durable in the key-value space. */
    CompletableFuture<Void> write(Map<String, byte[]> writes) {
        Pending p = new Pending(writes, new CompletableFuture<>());
        synchronized (this) {
            queue.add(p);
            if (writing) {
                return p.done;
            }
            writing = true;
        }
        writeQueued();
        return p.done;
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
            writeQueued();
        }, executor);
    }
}
