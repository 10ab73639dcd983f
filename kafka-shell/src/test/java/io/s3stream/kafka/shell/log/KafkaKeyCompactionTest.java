package io.s3stream.kafka.shell.log;

import io.s3stream.KeyCompaction;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One stored batch through {@link KafkaKeyCompaction#rewrite}: what goes, and that the Kafka batches of the result
 * always end at the stored batch's last offset (a consumer reading a compacted stretch can always reach the end).
 */
class KafkaKeyCompactionTest {
    private final AtomicLong now = new AtomicLong(1_000_000);
    private List<PartitionTxns.Aborted> aborted = List.of();
    private long checkpointed = Long.MAX_VALUE;
    private final KafkaKeyCompaction compaction = new KafkaKeyCompaction(
            () -> new KafkaKeyCompaction.Transactions(Long.MAX_VALUE, aborted, checkpointed),
            () -> Map.of("cleanup.policy", "compact", "delete.retention.ms", "100"), now::get);

    private static SimpleRecord record(String key, String value) {
        return new SimpleRecord(0, key.getBytes(StandardCharsets.UTF_8),
                value == null ? null : value.getBytes(StandardCharsets.UTF_8));
    }

    private static ByteBuffer concat(MemoryRecords... batches) {
        int size = 0;
        for (MemoryRecords b : batches) {
            size += b.sizeInBytes();
        }
        ByteBuffer out = ByteBuffer.allocate(size);
        for (MemoryRecords b : batches) {
            out.put(b.buffer().duplicate());
        }
        return out.flip();
    }

    /** The latest offset of each key, as the library's key map would hold it after indexing {@code payloads}. */
    private KeyCompaction.LatestFilter latestOf(ByteBuffer... payloads) {
        compaction.cleanableEndOffset();
        Map<ByteBuffer, Long> latest = new HashMap<>();
        for (ByteBuffer p : payloads) {
            compaction.keys(0, 0, p, (offset, key) -> latest.put(copy(key), offset));
        }
        return (offset, key) -> latest.getOrDefault(key, -1L) <= offset;
    }

    private static ByteBuffer copy(ByteBuffer b) {
        ByteBuffer c = ByteBuffer.allocate(b.remaining());
        return c.put(b.duplicate()).flip();
    }

    private static List<MutableRecordBatch> batches(ByteBuffer payload) {
        List<MutableRecordBatch> out = new ArrayList<>();
        for (MutableRecordBatch b : MemoryRecords.readableRecords(payload.duplicate()).batches()) {
            b.ensureValid();
            out.add(b);
        }
        return out;
    }

    private static List<Long> offsets(ByteBuffer payload) {
        List<Long> out = new ArrayList<>();
        for (MutableRecordBatch b : batches(payload)) {
            for (Record r : b) {
                out.add(r.offset());
            }
        }
        return out;
    }

    @Test
    void aLastKafkaBatchWhoseRecordsAreAllSupersededStaysAsAnEmptyHeaderWithItsProducer() {
        ByteBuffer stored = concat(
                MemoryRecords.withIdempotentRecords(10, Compression.NONE, 7, (short) 1, 0, 0,
                        record("a", "1"), record("b", "1")),
                MemoryRecords.withIdempotentRecords(12, Compression.NONE, 7, (short) 1, 2, 0,
                        record("a", "2"), record("b", "2")));
        ByteBuffer later = MemoryRecords.withRecords(20, Compression.NONE, record("a", "3"), record("b", "3")).buffer();

        ByteBuffer out = compaction.rewrite(10, 4, stored, latestOf(stored, later));

        List<MutableRecordBatch> kept = batches(out);
        assertThat(kept).hasSize(1);
        MutableRecordBatch tail = kept.getFirst();
        assertThat(tail.baseOffset()).isEqualTo(12);
        assertThat(tail.lastOffset()).isEqualTo(13);
        assertThat(tail.producerId()).isEqualTo(7);
        assertThat(tail.producerEpoch()).isEqualTo((short) 1);
        assertThat(tail.baseSequence()).isEqualTo(2);
        assertThat(tail.lastSequence()).isEqualTo(3);
        assertThat(tail.countOrNull()).isZero();
    }

    @Test
    void keptRecordsKeepTheirOffsetsAndTheLastBatchItsEnd() {
        ByteBuffer stored = concat(
                MemoryRecords.withRecords(0, Compression.NONE, record("a", "1"), record("b", "1")),
                MemoryRecords.withRecords(2, Compression.NONE, record("a", "2"), record("c", "1"), record("a", "3")));

        ByteBuffer out = compaction.rewrite(0, 5, stored, latestOf(stored));

        assertThat(offsets(out)).containsExactly(1L, 3L, 4L);
        assertThat(batches(out).getLast().lastOffset()).isEqualTo(4);
    }

    @Test
    void tombstonesGoAfterTheirHorizonButTheStoredBatchStillEndsWhereItDid() {
        ByteBuffer stored = concat(
                MemoryRecords.withRecords(0, Compression.NONE, record("a", "1")),
                MemoryRecords.withIdempotentRecords(1, Compression.NONE, 3, (short) 0, 5, 0,
                        record("a", null), record("b", null)));

        ByteBuffer first = compaction.rewrite(0, 3, stored, latestOf(stored));
        assertThat(offsets(first)).as("tombstones are kept until their horizon").containsExactly(1L, 2L);
        assertThat(compaction.rewriteAgainAtMs()).isEqualTo(now.get() + 100);

        now.addAndGet(100);
        ByteBuffer second = compaction.rewrite(0, 3, first, latestOf(first));
        assertThat(offsets(second)).isEmpty();
        List<MutableRecordBatch> kept = batches(second);
        assertThat(kept).hasSize(1);
        assertThat(kept.getFirst().baseOffset()).isEqualTo(1);
        assertThat(kept.getFirst().lastOffset()).isEqualTo(2);
        assertThat(kept.getFirst().producerId()).isEqualTo(3);
    }

    @Test
    void aStoredBatchWhoseKafkaBatchesEndShortGetsAnEmptyHeaderOverTheRest() {
        // As an older compaction left them: the Kafka batches stop before the stored batch's last offset.
        ByteBuffer stored = MemoryRecords.withRecords(10, Compression.NONE, record("a", "1"), record("b", "1")).buffer();

        ByteBuffer out = compaction.rewrite(10, 5, stored, latestOf(stored));

        List<MutableRecordBatch> kept = batches(out);
        assertThat(offsets(out)).containsExactly(10L, 11L);
        assertThat(kept).hasSize(2);
        assertThat(kept.getLast().baseOffset()).isEqualTo(12);
        assertThat(kept.getLast().lastOffset()).isEqualTo(14);
        assertThat(kept.getLast().producerId()).isEqualTo(RecordBatch.NO_PRODUCER_ID);

        ByteBuffer none = compaction.rewrite(20, 3, ByteBuffer.allocate(0), latestOf());
        assertThat(batches(none)).singleElement().satisfies(b -> {
            assertThat(b.baseOffset()).isEqualTo(20);
            assertThat(b.lastOffset()).isEqualTo(22);
        });
    }

    @Test
    void anAbortedLastBatchLosesItsRecordsButKeepsItsTransactionalHeader() {
        aborted = List.of(new PartitionTxns.Aborted(9, 0, 2));
        ByteBuffer stored = MemoryRecords.withTransactionalRecords(0, Compression.NONE, 9, (short) 0, 0, 0,
                record("a", "x"), record("b", "y")).buffer();

        ByteBuffer out = compaction.rewrite(0, 2, stored, latestOf(stored));

        assertThat(offsets(out)).isEmpty();
        assertThat(batches(out)).singleElement().satisfies(b -> {
            assertThat(b.isTransactional()).isTrue();
            assertThat(b.producerId()).isEqualTo(9);
            assertThat(b.lastOffset()).isEqualTo(1);
        });
    }

    private static MemoryRecords marker(long offset, long producerId, boolean commit) {
        return MemoryRecords.withEndTransactionMarker(offset, 0, 0, producerId, (short) 0,
                new EndTransactionMarker(commit ? ControlRecordType.COMMIT : ControlRecordType.ABORT, 0));
    }

    /** The control batches of a payload. */
    private static List<MutableRecordBatch> markers(ByteBuffer payload) {
        return batches(payload).stream().filter(RecordBatch::isControlBatch).toList();
    }

    @Test
    void aCommitMarkerGoesAfterDeleteRetentionOnceItsTransactionHasNoRecordsLeft() {
        ByteBuffer dataA = MemoryRecords.withTransactionalRecords(0, Compression.NONE, 5, (short) 0, 0, 0,
                record("a", "1"), record("b", "1")).buffer();
        ByteBuffer markerA = marker(2, 5, true).buffer();
        ByteBuffer later = MemoryRecords.withRecords(3, Compression.NONE, record("a", "2"), record("b", "2")).buffer();
        ByteBuffer dataB = MemoryRecords.withTransactionalRecords(5, Compression.NONE, 5, (short) 0, 2, 0,
                record("c", "1")).buffer();
        ByteBuffer markerB = marker(6, 5, true).buffer();

        // Pass 1: A's records go, so its marker gets a delete horizon; B still has a record, so its marker stays as is.
        KeyCompaction.LatestFilter latest = latestOf(dataA, markerA, later, dataB, markerB);
        ByteBuffer outA = compaction.rewrite(0, 2, dataA, latest);
        ByteBuffer outMarkerA = compaction.rewrite(2, 1, markerA, latest);
        ByteBuffer outLater = compaction.rewrite(3, 2, later, latest);
        ByteBuffer outB = compaction.rewrite(5, 1, dataB, latest);
        ByteBuffer outMarkerB = compaction.rewrite(6, 1, markerB, latest);
        assertThat(batches(outA)).singleElement().satisfies(b -> assertThat(b.countOrNull()).isZero());
        assertThat(markers(outMarkerA)).singleElement().satisfies(b -> {
            assertThat(b.deleteHorizonMs()).hasValue(now.get() + 100);
            assertThat(b.countOrNull()).isOne();
        });
        assertThat(markers(outMarkerB)).singleElement().satisfies(b -> assertThat(b.deleteHorizonMs()).isEmpty());
        assertThat(compaction.rewriteAgainAtMs()).as("run again at the horizon").isEqualTo(now.get() + 100);

        // Pass 2, before the horizon, with A's range merged into one stored batch: the marker stays.
        ByteBuffer merged = concat(MemoryRecords.readableRecords(outA), MemoryRecords.readableRecords(outMarkerA),
                MemoryRecords.readableRecords(outLater));
        now.addAndGet(99);
        latest = latestOf(merged, outB, outMarkerB);
        assertThat(markers(compaction.rewrite(0, 5, merged, latest))).hasSize(1);
        compaction.rewrite(5, 1, outB, latest);
        assertThat(markers(compaction.rewrite(6, 1, outMarkerB, latest))).hasSize(1);
        assertThat(compaction.rewriteAgainAtMs()).isEqualTo(now.get() + 1);

        // At the horizon, but the transaction checkpoint does not cover the marker yet: it stays, and a run is asked
        // for once the partition had time to write a checkpoint.
        now.addAndGet(1);
        checkpointed = 2;
        latest = latestOf(merged);
        assertThat(markers(compaction.rewrite(0, 5, merged, latest))).hasSize(1);
        assertThat(compaction.rewriteAgainAtMs()).isEqualTo(now.get() + TxnCheckpoint.INTERVAL_MS);

        checkpointed = 3;
        latest = latestOf(merged);
        ByteBuffer out = compaction.rewrite(0, 5, merged, latest);
        assertThat(markers(out)).isEmpty();
        assertThat(offsets(out)).containsExactly(3L, 4L);
        assertThat(batches(out).getLast().lastOffset()).isEqualTo(4);
    }

    @Test
    void anExpiredCommitMarkerThatEndsItsStoredBatchStaysAsAnEmptyControlBatch() {
        ByteBuffer markerOnly = marker(7, 5, true).buffer();
        ByteBuffer first = compaction.rewrite(7, 1, markerOnly, latestOf(markerOnly));
        now.addAndGet(100);
        ByteBuffer second = compaction.rewrite(7, 1, first, latestOf(first));
        assertThat(batches(second)).singleElement().satisfies(b -> {
            assertThat(b.isControlBatch()).isTrue();
            assertThat(b.countOrNull()).isZero();
            assertThat(b.lastOffset()).isEqualTo(7);
        });
        // An emptied marker decides nothing: it is dropped once it no longer ends a stored batch.
        ByteBuffer merged = concat(MemoryRecords.readableRecords(second),
                MemoryRecords.withRecords(8, Compression.NONE, record("x", "1")));
        assertThat(markers(compaction.rewrite(7, 2, merged, latestOf(merged)))).isEmpty();
    }

    @Test
    void abortMarkersStayEvenWhenTheirTransactionIsGone() {
        aborted = List.of(new PartitionTxns.Aborted(9, 0, 1));
        ByteBuffer stored = concat(MemoryRecords.withTransactionalRecords(0, Compression.NONE, 9, (short) 0, 0, 0,
                record("a", "x")), marker(1, 9, false),
                MemoryRecords.withRecords(2, Compression.NONE, record("b", "1")));
        ByteBuffer out = compaction.rewrite(0, 3, stored, latestOf(stored));
        now.addAndGet(1_000);
        out = compaction.rewrite(0, 3, out, latestOf(out));
        assertThat(markers(out)).singleElement().satisfies(b -> {
            assertThat(b.countOrNull()).isOne();
            assertThat(b.deleteHorizonMs()).isEmpty();
        });
        assertThat(compaction.rewriteAgainAtMs()).isEqualTo(Long.MAX_VALUE);
    }
}
