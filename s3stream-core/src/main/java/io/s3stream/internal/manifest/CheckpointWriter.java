package io.s3stream.internal.manifest;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectStoreException;

import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;

/**
 * Writes the manifest's checkpoints and deletes what they make unnecessary: the two latest checkpoints are kept, older
 * ones go, and log entries covered by the older kept checkpoint go once it is older than the grace period (a reader
 * that fell that far behind reloads from a checkpoint instead of reading the entries). Runs on the manifest's
 * checkpoint thread, one checkpoint at a time.
 */
final class CheckpointWriter {
    private static final System.Logger LOG = System.getLogger(ManifestMetadataStore.class.getName());

    private final ManifestIo io;
    private final ManifestConfig config;
    private final InstantSource clock;

    CheckpointWriter(ManifestIo io, ManifestConfig config, InstantSource clock) {
        this.io = io;
        this.config = config;
        this.clock = clock;
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

    /** Keeps the two latest checkpoints; deletes entries covered by the older one once it is old enough. */
    private void collectGarbage() throws TimeoutException {
        List<ObjectInfo> checkpoints = io.list(io.checkpointPrefix());
        if (checkpoints.size() < 2) {
            return;
        }
        List<String> doomed = new ArrayList<>();
        for (int i = 0; i < checkpoints.size() - 2; i++) {
            doomed.add(checkpoints.get(i).key());
        }
        String olderKept = checkpoints.get(checkpoints.size() - 2).key();
        long olderSeq = ManifestIo.seqOf(olderKept, io.checkpointPrefix());
        io.counters.gets.incrementAndGet();
        byte[] olderHead = ManifestIo.toBytes(io.await(io.store().get(olderKept, 0, ManifestFormat.PAYLOAD_OFFSET)));
        Instant olderTime = ManifestFormat.timeOf(olderHead, olderKept);
        if (!clock.instant().isBefore(olderTime.plusMillis(config.gcGraceMs()))) {
            for (ObjectInfo info : io.list(io.logPrefix())) {
                if (io.logSeq(info) <= olderSeq) {
                    doomed.add(info.key());
                }
            }
        }
        if (!doomed.isEmpty()) {
            io.counters.deletes.incrementAndGet();
            io.await(io.store().delete(doomed));
        }
    }
}
