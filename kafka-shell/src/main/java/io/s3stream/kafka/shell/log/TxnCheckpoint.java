package io.s3stream.kafka.shell.log;

import io.s3stream.KeyValues;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The checkpoint of one partition's transaction state ({@link PartitionTxns}) in the key-value space
 * ({@code kafka/txn-index/<stream id>}): when one is due, writing them one at a time and never an older one over a
 * newer one, and the offset up to which the stored checkpoint covers the partition.
 *
 * <p>That offset matters to key compaction: an open rebuilds the transaction state from the stored checkpoint plus the
 * markers after it, so a marker at or above the covered offset must stay ({@link KafkaKeyCompaction}). It only grows:
 * every checkpoint written or found at an open covers at least what the one before it did.
 *
 * <p>The scheduling fields belong to the partition's appender; writes and the covered offset are thread-safe.
 */
final class TxnCheckpoint {
    /** Checkpoints are written at most this often while the state changes, and after this many bytes. */
    static final long INTERVAL_MS = 5_000;
    static final long BYTES = 64L << 20;

    private final KeyValues kv;
    private final String key;
    private boolean exists; // owned by the appender
    private boolean dirty; // owned by the appender
    private long atMs; // owned by the appender
    private long bytesSince; // owned by the appender
    private final CheckpointWrites writes;
    private volatile long covered;

    TxnCheckpoint(KeyValues kv, long streamId, String partition) {
        this.kv = kv;
        this.key = key(streamId);
        this.writes = new CheckpointWrites(kv, key, () -> partition
                + ": transaction checkpoint not written (the next open scans further back)");
    }

    static final String PREFIX = "kafka/txn-index/";

    static String key(long streamId) {
        return PREFIX + streamId;
    }

    /** Whether the partition has a checkpoint: it saw transactional data (on the appender). */
    boolean exists() {
        return exists;
    }

    /** The stored checkpoint, empty when the partition never saw transactional data; blocks. */
    Optional<byte[]> read() {
        return kv.get(key).join();
    }

    /**
     * At an open: the stored checkpoint holds the state as of {@code offset} (it was read and the stream scanned up to
     * there, or it was just rewritten at {@code offset}).
     */
    void opened(long offset) {
        exists = true;
        atMs = System.currentTimeMillis();
        cover(offset);
    }

    /** Writes {@code checkpoint}, the state as of {@code offset}, and waits for it (the first one, or at an open). */
    void writeNow(long offset, byte[] checkpoint) {
        kv.put(key, checkpoint).join();
        opened(offset);
    }

    /** The state changed (a transactional batch or a marker was appended). */
    void changed() {
        dirty = true;
    }

    /**
     * After an append of {@code bytes}: whether a checkpoint is due now (the state changed and the last one is at least
     * {@link #INTERVAL_MS} old, or {@link #BYTES} were appended since). Resets the schedule when it is.
     */
    boolean due(int bytes) {
        if (!exists) {
            return false;
        }
        bytesSince += bytes;
        long now = System.currentTimeMillis();
        if (bytesSince < BYTES && !(dirty && now - atMs >= INTERVAL_MS)) {
            return false;
        }
        dirty = false;
        bytesSince = 0;
        atMs = now;
        return true;
    }

    /**
     * While the partition takes no appends: whether a checkpoint is due (the state changed since the last one, at least
     * {@link #INTERVAL_MS} ago). Asked at each key compaction round, so that a compacted partition that went idle right
     * after a transaction still gets its markers covered. Resets the schedule when it is.
     */
    boolean dueIdle() {
        long now = System.currentTimeMillis();
        if (!exists || !dirty || now - atMs < INTERVAL_MS) {
            return false;
        }
        dirty = false;
        bytesSince = 0;
        atMs = now;
        return true;
    }

    /** Writes the state as of {@code offset} after the writes before it; one older than already written is dropped. */
    CompletableFuture<Void> write(long offset, byte[] checkpoint) {
        return writes.write(offset, checkpoint, this::cover);
    }

    /** Offsets below this are covered by the stored checkpoint; 0 when none is known to be. */
    long covered() {
        return covered;
    }

    private synchronized void cover(long offset) {
        if (offset > covered) {
            covered = offset;
        }
    }
}
