package io.s3stream.kafka.shell.log;

import io.s3stream.KeyCompaction;
import org.apache.kafka.common.record.TimestampType;
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
import java.util.List;
import java.util.Map;
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
 *   <li>Records of aborted transactions are removed and never supersede anything; control batches (markers) are
 *       kept (Kafka removes them after {@code delete.retention.ms} once their transaction's data is gone; here they
 *       stay — about 80 bytes per transaction and partition).</li>
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
     */
    public record Transactions(long lastStableOffset, List<PartitionTxns.Aborted> aborted) {
    }

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
        if (txns == null) {
            return 0; // transactions not known yet (the partition is opening): nothing is safe to compact
        }
        Map<Long, List<PartitionTxns.Aborted>> byProducer = new HashMap<>();
        for (PartitionTxns.Aborted a : txns.aborted()) {
            byProducer.computeIfAbsent(a.producerId(), k -> new ArrayList<>()).add(a);
        }
        aborted = byProducer;
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
        long now = clock.getAsLong();
        long deleteRetentionMs = this.deleteRetentionMs;
        boolean[] last = {false};
        MemoryRecords.RecordFilter filter = new MemoryRecords.RecordFilter(now, deleteRetentionMs) {
            @Override
            protected BatchRetentionResult checkBatchRetention(RecordBatch batch) {
                if (last[0]) {
                    return new BatchRetentionResult(BatchRetention.RETAIN_EMPTY, false); // see the class comment
                }
                return new BatchRetentionResult(isAborted(batch) ? BatchRetention.DELETE : BatchRetention.DELETE_EMPTY,
                        false);
            }

            @Override
            protected boolean shouldRetainRecord(RecordBatch batch, Record record) {
                if (batch.isControlBatch()) {
                    return true;
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
