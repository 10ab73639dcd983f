package io.s3stream.kafka.shell.log;

import io.s3stream.KeyCompaction;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.DefaultRecordBatch;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecords.RecordFilter.BatchRetention;
import org.apache.kafka.common.record.internal.MemoryRecords.RecordFilter.BatchRetentionResult;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.BufferSupplier;
import org.apache.kafka.common.utils.CloseableIterator;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Kafka's log compaction ({@code cleanup.policy=compact}) for one partition, as the library's {@link KeyCompaction}:
 * the library finds the latest offset of every key and rewrites the objects; this class says what a key is in a
 * stream of Kafka record batches and rewrites one batch with Kafka's own record filter
 * ({@link MemoryRecords#filterTo}), which keeps each batch's base offset, last offset delta and producer fields.
 *
 * <p>As in Kafka's log cleaner:
 * <ul>
 *   <li>Compaction stops at the last stable offset: an undecided transaction is never compacted.</li>
 *   <li>Records of aborted transactions are removed and never supersede anything.</li>
 *   <li>A commit marker stays while a record of its transaction does. The first rewrite pass whose output keeps none
 *       stamps the marker with a delete horizon ({@code now + delete.retention.ms}), and a pass after the horizon
 *       removes it (as Kafka's cleaner does), so a read_committed consumer that read part of the transaction before
 *       its records went still sees it end. A pass sees a whole transaction: passes run in offset order from the
 *       stream's oldest data, and a producer has one transaction open per partition at a time. A marker the
 *       partition's transaction checkpoint does not cover yet ({@link Transactions#checkpointed}) stays until it does
 *       (a rewrite is asked for a few seconds later): an open rebuilds the transaction state from the checkpoint and
 *       the markers after it.</li>
 *   <li>Abort markers stay, about 80 bytes per aborted transaction: the partition's aborted-transaction index lists
 *       each aborted transaction until retention trims it, and a read_committed consumer handed an entry whose marker
 *       is gone would skip its producer's later transactions. Aborts are rare; commits are not (Kafka Streams under
 *       exactly-once commits every 100 ms).</li>
 *   <li>A tombstone (a record without a value) is kept while it is the latest of its key; the first rewrite that keeps
 *       it stamps its batch with a delete horizon ({@code now + delete.retention.ms}, KIP-534), and a rewrite after the
 *       horizon removes it, so consumers that read the topic within {@code delete.retention.ms} see the delete.</li>
 *   <li>Batches left without records are dropped (offsets keep their gaps, as in Kafka), except the last Kafka batch of
 *       each stored batch, which stays as an empty batch header with its offsets and producer fields (Kafka keeps a
 *       producer's last batch the same way). A stored batch's Kafka batches therefore always end at its last offset:
 *       a consumer can read past a stretch whose records are all gone (a tail of expired tombstones would otherwise
 *       leave it short of the end offset for good), and the producer state rebuilt from the tail after a restart still
 *       knows the producer's last sequence. A stored batch that ends short anyway (written before this rule) gets an
 *       empty header without a producer over the missing offsets.</li>
 *   <li>Records without a key are kept (producers cannot write them to a compacted topic).</li>
 * </ul>
 * {@code min.compaction.lag.ms} is applied by object age (an object written at least that long ago holds only older
 * data), {@code max.compaction.lag.ms} forces a run when the oldest dirty object waited that long, and
 * {@code min.cleanable.dirty.ratio} is the library's dirty share. Calls come from the library's compactor thread.
 */
public final class KafkaKeyCompaction implements KeyCompaction {
    /**
     * What compaction needs to know of a partition's transactions.
     *
     * @param lastStableOffset compaction stops here
     * @param aborted          aborted transactions whose records are removed
     * @param checkpointed     the partition's stored transaction checkpoint covers the offsets below this: markers at
     *                         or above it are kept
     */
    public record Transactions(long lastStableOffset, List<PartitionTxns.Aborted> aborted, long checkpointed) {
    }

    /** What a rewrite does with a control batch. */
    private enum Marker { KEEP, EXPIRING, REMOVE }

    private final Supplier<Transactions> transactions;
    private final Supplier<Map<String, String>> topicConfig;
    private final LongSupplier clock;
    private final BufferSupplier decompression = BufferSupplier.create();
    /** The earliest delete horizon of a tombstone kept since {@link #rewriteAgainAtMs()} was last asked. */
    private long earliestHorizon = Long.MAX_VALUE;
    /** The topic's delete.retention.ms, as of the last {@link #cleanableEndOffset()} (compactor thread only). */
    private long deleteRetentionMs;
    /** Aborted transactions by producer id, as of the last {@link #cleanableEndOffset()} (compactor thread only). */
    private Map<Long, List<PartitionTxns.Aborted>> aborted = Map.of();
    /** Markers at or above this offset are kept ({@link Transactions#checkpointed}), as of the round's start. */
    private long checkpointed;
    /** Producers whose transaction has records in the current rewrite pass's output so far (compactor thread only). */
    private final Set<Long> txnsWithRecords = new HashSet<>();
    /** Where the last rewritten batch ended: a rewrite below it starts a new pass. */
    private long rewrittenUpTo = -1;

    /**
     * @param transactions the partition's transactions now, or null while they are not known (nothing is compacted)
     * @param topicConfig  the topic's effective configs now
     * @param clock        milliseconds since the epoch (delete horizons)
     */
    public KafkaKeyCompaction(Supplier<Transactions> transactions, Supplier<Map<String, String>> topicConfig,
                              LongSupplier clock) {
        this.transactions = transactions;
        this.topicConfig = topicConfig;
        this.clock = clock;
    }

    /** Whether a topic's {@code cleanup.policy} (a list: compact, delete or both) includes compaction. */
    public static boolean compacts(Map<String, String> config) {
        return policyHas(config, "compact");
    }

    /** Whether a topic's {@code cleanup.policy} includes deletion by retention time and size. */
    public static boolean deletes(Map<String, String> config) {
        return policyHas(config, "delete");
    }

    private static boolean policyHas(Map<String, String> config, String policy) {
        for (String p : config.getOrDefault("cleanup.policy", "delete").split(",")) {
            if (p.trim().equals(policy)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public long cleanableEndOffset() {
        // Asked first in every run: the run's view of the topic configs and transactions is taken here, once.
        deleteRetentionMs = Long.parseLong(topicConfig.get().getOrDefault("delete.retention.ms", "86400000"));
        Transactions txns = transactions.get();
        txnsWithRecords.clear();
        rewrittenUpTo = -1;
        if (txns == null) {
            return 0; // transactions not known yet (the partition is opening): nothing is safe to compact
        }
        Map<Long, List<PartitionTxns.Aborted>> byProducer = new HashMap<>();
        for (PartitionTxns.Aborted a : txns.aborted()) {
            byProducer.computeIfAbsent(a.producerId(), k -> new ArrayList<>()).add(a);
        }
        aborted = byProducer;
        checkpointed = txns.checkpointed();
        return txns.lastStableOffset();
    }

    @Override
    public double minDirtyRatio() {
        return Double.parseDouble(topicConfig.get().getOrDefault("min.cleanable.dirty.ratio", "0.5"));
    }

    @Override
    public Duration minCompactionLag() {
        return Duration.ofMillis(Long.parseLong(topicConfig.get().getOrDefault("min.compaction.lag.ms", "0")));
    }

    @Override
    public Duration maxCompactionLag() {
        long ms = Long.parseLong(topicConfig.get().getOrDefault("max.compaction.lag.ms", Long.toString(Long.MAX_VALUE)));
        return ms == Long.MAX_VALUE ? null : Duration.ofMillis(ms);
    }

    @Override
    public long rewriteAgainAtMs() {
        long at = earliestHorizon;
        earliestHorizon = Long.MAX_VALUE;
        return at;
    }

    private boolean isAborted(RecordBatch batch) {
        if (!batch.isTransactional() || batch.isControlBatch()) {
            return false;
        }
        List<PartitionTxns.Aborted> list = aborted.get(batch.producerId());
        if (list != null) {
            for (PartitionTxns.Aborted a : list) {
                if (a.firstOffset() <= batch.baseOffset() && batch.baseOffset() < a.lastOffset()) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * The fate of a marker in the current pass, called once per control batch in offset order. Its transaction's
     * batches all came before it in this pass, so {@link #txnsWithRecords} says whether any record of it is left.
     */
    private Marker markerFate(RecordBatch marker, long now, long deleteRetentionMs) {
        boolean hasRecords = txnsWithRecords.remove(marker.producerId());
        if (hasRecords || !isCommit(marker)) {
            return Marker.KEEP;
        }
        long horizon = marker.deleteHorizonMs().orElse(now + deleteRetentionMs);
        if (now < horizon) {
            earliestHorizon = Math.min(earliestHorizon, horizon);
        } else if (marker.lastOffset() < checkpointed) {
            return Marker.REMOVE;
        } else {
            // The partition checkpoints its transaction state when asked for it at the next round (TxnCheckpoint).
            earliestHorizon = Math.min(earliestHorizon, now + TxnCheckpoint.INTERVAL_MS);
        }
        return Marker.EXPIRING; // the filter stamps the horizon if it has none yet
    }

    /** Whether a control batch holds a commit marker (false for one a rewrite already emptied). */
    private boolean isCommit(RecordBatch controlBatch) {
        try (CloseableIterator<Record> records = controlBatch.streamingIterator(decompression)) {
            return records.hasNext() && ControlRecordType.parse(records.next().key()) == ControlRecordType.COMMIT;
        }
    }

    @Override
    public void keys(long baseOffset, int count, ByteBuffer payload, KeyVisitor visitor) {
        for (MutableRecordBatch batch : MemoryRecords.readableRecords(payload.duplicate()).batches()) {
            if (batch.isControlBatch() || isAborted(batch)) {
                continue;
            }
            try (CloseableIterator<Record> records = batch.streamingIterator(decompression)) {
                while (records.hasNext()) {
                    Record r = records.next();
                    if (r.hasKey()) {
                        visitor.key(r.offset(), r.key());
                    }
                }
            }
        }
    }

    @Override
    public ByteBuffer rewrite(long baseOffset, int count, ByteBuffer payload, LatestFilter latest) {
        if (baseOffset < rewrittenUpTo) {
            txnsWithRecords.clear(); // a new pass
        }
        rewrittenUpTo = baseOffset + count;
        long now = clock.getAsLong();
        long deleteRetentionMs = this.deleteRetentionMs;
        boolean[] last = {false};
        boolean[] removeMarker = {false};
        MemoryRecords.RecordFilter filter = new MemoryRecords.RecordFilter(now, deleteRetentionMs) {
            @Override
            protected BatchRetentionResult checkBatchRetention(RecordBatch batch) {
                Marker fate = batch.isControlBatch() ? markerFate(batch, now, deleteRetentionMs) : Marker.KEEP;
                removeMarker[0] = fate == Marker.REMOVE;
                BatchRetention retention = last[0] ? BatchRetention.RETAIN_EMPTY // see the class comment
                        : isAborted(batch) || removeMarker[0] ? BatchRetention.DELETE : BatchRetention.DELETE_EMPTY;
                return new BatchRetentionResult(retention, fate == Marker.EXPIRING);
            }

            @Override
            protected boolean shouldRetainRecord(RecordBatch batch, Record record) {
                if (batch.isControlBatch()) {
                    return !removeMarker[0];
                }
                if (isAborted(batch)) {
                    return false; // the last batch is retained, not its records
                }
                if (!record.hasKey()) {
                    return true;
                }
                if (!latest.isLatest(record.offset(), record.key())) {
                    return false;
                }
                if (record.hasValue()) {
                    return true;
                }
                // A tombstone goes once its batch's delete horizon (set when it was first kept) has passed.
                long horizon = batch.deleteHorizonMs().isPresent() ? batch.deleteHorizonMs().getAsLong()
                        : now + deleteRetentionMs;
                if (now >= horizon) {
                    return false;
                }
                earliestHorizon = Math.min(earliestHorizon, horizon);
                return true;
            }
        };
        ByteBuffer out = ByteBuffer.allocate(payload.remaining() + DefaultRecordBatch.RECORD_BATCH_OVERHEAD);
        int at = payload.position();
        long nextOffset = baseOffset;
        for (MutableRecordBatch batch : MemoryRecords.readableRecords(payload.duplicate()).batches()) {
            // One batch at a time: filterTo stops after a batch that outgrew its buffer (a delete horizon can make
            // timestamp deltas longer), so it is handed exactly one, with room to grow.
            int size = batch.sizeInBytes();
            ByteBuffer one = payload.slice(at, size);
            at += size;
            last[0] = at == payload.limit();
            MemoryRecords.FilterResult result = MemoryRecords.readableRecords(one).filterTo(filter,
                    ByteBuffer.allocate(size + 64), decompression);
            ByteBuffer written = result.outputBuffer().flip();
            if (batch.isTransactional() && !batch.isControlBatch() && result.messagesRetained() > 0) {
                txnsWithRecords.add(batch.producerId());
            }
            if (written.hasRemaining()) {
                nextOffset = batch.nextOffset();
            }
            out = ensureRoom(out, written.remaining() + DefaultRecordBatch.RECORD_BATCH_OVERHEAD);
            out.put(written);
        }
        long lastOffset = baseOffset + count - 1;
        if (nextOffset <= lastOffset) {
            out = ensureRoom(out, DefaultRecordBatch.RECORD_BATCH_OVERHEAD);
            DefaultRecordBatch.writeEmptyHeader(out, RecordBatch.CURRENT_MAGIC_VALUE, RecordBatch.NO_PRODUCER_ID,
                    RecordBatch.NO_PRODUCER_EPOCH, RecordBatch.NO_SEQUENCE, nextOffset, lastOffset,
                    RecordBatch.NO_PARTITION_LEADER_EPOCH, TimestampType.CREATE_TIME, RecordBatch.NO_TIMESTAMP,
                    false, false);
        }
        return out.flip();
    }

    private static ByteBuffer ensureRoom(ByteBuffer out, int bytes) {
        if (out.remaining() >= bytes) {
            return out;
        }
        ByteBuffer bigger = ByteBuffer.allocate(Math.max(out.capacity() * 2, out.position() + bytes));
        return bigger.put(out.flip());
    }
}
