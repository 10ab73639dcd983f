package io.s3stream.internal.manifest;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.s3stream.internal.util.Executors2;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectStoreException;

import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Writes the manifest's checkpoints and deletes what they make unnecessary. The <em>anchor</em> is the newest
 * checkpoint, other than the latest, that is older than the grace period: log entries it covers go (a reader that
 * fell that far behind reloads from a checkpoint instead of reading the entries), and so do checkpoints older than it.
 * The latest checkpoint and every one younger than the grace period stay. Runs on the manifest's checkpoint thread,
 * one checkpoint at a time.
 *
 * <p>Design note: an earlier version kept only the two latest checkpoints and anchored on the older of them. Under a
 * steady stream of small commits (consumer offsets: ~1,200 entries/s in the soak test) a checkpoint is due every
 * second, so that checkpoint was never older than the grace period and no entry was ever deleted: 900,000 log
 * objects in 14 minutes. Anchoring on the newest checkpoint past the grace period bounds the log to about one grace
 * period of entries at any rate.
 */
final class CheckpointWriter {
    private static final System.Logger LOG = System.getLogger(ManifestMetadataStore.class.getName());

    private final ManifestIo io;
    private final ManifestConfig config;
    private final InstantSource clock;
    /** When each known checkpoint was written (its header's time), by key: read once per checkpoint. */
    private final java.util.Map<String, Instant> checkpointTimes = new java.util.HashMap<>();
    private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "s3stream-manifest-checkpointer");
        t.setDaemon(true);
        return t;
    });

    CheckpointWriter(ManifestIo io, ManifestConfig config, InstantSource clock) {
        this.io = io;
        this.config = config;
        this.clock = clock;
    }

    /** Writes the checkpoint of the state after entry {@code seq} on the checkpoint thread, off the commit path. */
    void submit(long seq, byte[] bytes) {
        try {
            thread.execute(() -> write(seq, bytes));
        } catch (RejectedExecutionException e) {
            // closing: the next writer writes one
        }
    }

    /** Lets the checkpoint being written finish (within two request timeouts), then stops. */
    void close() {
        Executors2.stop(thread, config.requestTimeoutMs() * 2, TimeUnit.MILLISECONDS);
    }

    /**
     * Writes the checkpoint of the state after entry {@code seq} (a conditional create: another writer may write the
     * same state under the same number), then collects garbage. Failures are logged: a later checkpoint covers them.
     */
    void write(long seq, byte[] bytes) {
        String key = io.checkpointKey(seq);
        try {
            for (int attempt = 1; ; attempt++) {
                try {
                    io.counters.puts.incrementAndGet();
                    ByteBuf data = Unpooled.wrappedBuffer(bytes);
                    CompletableFuture<Boolean> put = io.store().putIfAbsent(key, data);
                    put.whenComplete((r, t) -> data.release());
                    io.await(put); // false: another writer wrote the same state at the same number
                    checkpointTimes.put(key, ManifestFormat.timeOf(bytes, key));
                    break;
                } catch (ObjectStoreException | TimeoutException e) {
                    if (attempt >= config.maxAttempts()) {
                        throw e;
                    }
                    io.backoff(attempt);
                }
            }
            io.counters.checkpoints.incrementAndGet();
            collectGarbage();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "manifest checkpoint " + key + " in " + io.store().description()
                    + " failed (a later one will cover it): " + e);
        }
    }

    /** Deletes the log entries and checkpoints the anchor (see the class comment) makes unnecessary. */
    private void collectGarbage() throws TimeoutException {
        List<ObjectInfo> checkpoints = io.list(io.checkpointPrefix());
        if (checkpoints.size() < 2) {
            return;
        }
        Instant horizon = clock.instant().minusMillis(config.gcGraceMs());
        int anchor = -1;
        for (int i = checkpoints.size() - 2; i >= 0; i--) {
            if (!timeOf(checkpoints.get(i).key()).isAfter(horizon)) {
                anchor = i;
                break;
            }
        }
        if (anchor < 0) {
            return; // every checkpoint but the latest is younger than the grace period
        }
        long anchorSeq = ManifestIo.seqOf(checkpoints.get(anchor).key(), io.checkpointPrefix());
        List<String> doomed = new ArrayList<>();
        for (int i = 0; i < anchor; i++) {
            doomed.add(checkpoints.get(i).key());
        }
        for (ObjectInfo info : io.list(io.logPrefix())) {
            if (io.logSeq(info) <= anchorSeq) {
                doomed.add(info.key());
            }
        }
        if (!doomed.isEmpty()) {
            io.counters.deletes.incrementAndGet();
            io.await(io.store().delete(doomed));
        }
        checkpointTimes.keySet().retainAll(checkpoints.subList(anchor, checkpoints.size()).stream()
                .map(ObjectInfo::key).toList());
    }

    /** The time in a checkpoint's header: from this writer's own write, or one ranged GET (then remembered). */
    private Instant timeOf(String key) throws TimeoutException {
        Instant known = checkpointTimes.get(key);
        if (known != null) {
            return known;
        }
        io.counters.gets.incrementAndGet();
        byte[] head = ManifestIo.toBytes(io.await(io.store().get(key, 0, ManifestFormat.PAYLOAD_OFFSET)));
        Instant time = ManifestFormat.timeOf(head, key);
        checkpointTimes.put(key, time);
        return time;
    }
}
