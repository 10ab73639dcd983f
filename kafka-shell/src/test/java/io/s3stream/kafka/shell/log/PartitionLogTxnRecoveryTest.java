package io.s3stream.kafka.shell.log;

import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.DefaultRecordBatch;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Rebuilding a partition's transaction state at open from its checkpoint and the batches after it, over data that key
 * compaction rewrote: stored batches that begin below the checkpoint, transactional batches whose commit marker is
 * gone, markers emptied in place.
 */
class PartitionLogTxnRecoveryTest {
    private static final long PRODUCER = 7;
    private final String name = "txn-recovery-" + UUID.randomUUID();
    private final ExecutorService blocking = Executors.newCachedThreadPool();
    private StreamStorage storage;

    @AfterEach
    void close() {
        if (storage != null) {
            storage.close();
        }
        blocking.shutdownNow();
    }

    private Stream open(Path dir) {
        storage = StreamStorage.open(StorageConfig.builder().nodeId(1).dataDir(dir)
                .wal("mem://" + name + "-wal?capacity=16MiB").objectStore("mem://" + name).metadata("mem://" + name)
                .build());
        return storage.createStream(StreamOptions.defaults()).join();
    }

    private static ByteBuffer concat(ByteBuffer... parts) {
        int size = 0;
        for (ByteBuffer p : parts) {
            size += p.remaining();
        }
        ByteBuffer out = ByteBuffer.allocate(size);
        for (ByteBuffer p : parts) {
            out.put(p.duplicate());
        }
        return out.flip();
    }

    /** A batch header without records, as compaction leaves the last Kafka batch of a stored batch. */
    private static ByteBuffer emptyHeader(long base, long last, boolean transactional, boolean control) {
        ByteBuffer b = ByteBuffer.allocate(DefaultRecordBatch.RECORD_BATCH_OVERHEAD);
        DefaultRecordBatch.writeEmptyHeader(b, org.apache.kafka.common.record.internal.RecordBatch.CURRENT_MAGIC_VALUE,
                PRODUCER, (short) 0, 0, base, last, 0, TimestampType.CREATE_TIME, 0, transactional, control);
        return b.flip();
    }

    private static SimpleRecord record(String key) {
        return new SimpleRecord(0, key.getBytes(StandardCharsets.UTF_8), "v".getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void aStoredBatchThatBeginsBelowTheCheckpointAddsNothingFromBelowIt(@TempDir Path dir) {
        Stream stream = open(dir);
        // Offsets 0..4, one stored batch as compaction merges them: transaction 1 of the producer (0..1) lost its
        // records, and its commit marker (2) was removed after its delete horizon, so only an empty transactional
        // header is left of it; then a plain batch (3..4), then an empty control batch (5: a marker emptied in place).
        ByteBuffer merged = concat(emptyHeader(0, 1, true, false),
                MemoryRecords.withRecords(3, Compression.NONE, record("a"), record("b")).buffer(),
                emptyHeader(5, 5, true, true));
        stream.append(RecordBatch.of(6, merged)).join();
        // Transaction 2 of the producer (6), aborted (7).
        stream.append(RecordBatch.of(1, MemoryRecords.withTransactionalRecords(6, Compression.NONE, PRODUCER,
                (short) 0, 2, 0, record("a")).buffer())).join();
        stream.append(RecordBatch.of(1, MemoryRecords.withEndTransactionMarker(7, 0, 0, PRODUCER, (short) 0,
                new EndTransactionMarker(ControlRecordType.ABORT, 0)).buffer())).join();
        // The checkpoint: the state as of offset 3, when nothing was open.
        storage.keyValues().put(TxnCheckpoint.key(stream.streamId()), "v1 3\n".getBytes(StandardCharsets.UTF_8))
                .join();

        PartitionLog log = new PartitionLog("t", 0, stream, blocking, storage.keyValues());

        assertThat(log.lastStableOffset().join()).isEqualTo(8);
        PartitionLog.ReadResult read = log.read(0, 1 << 20, true).join();
        read.records().release();
        // Not (7, 0, 7): the header below the checkpoint belongs to a committed transaction; an aborted range from 0
        // would make read_committed readers skip the producer's committed records in between.
        assertThat(read.abortedTransactions()).containsExactly(new PartitionTxns.Aborted(PRODUCER, 6, 7));
    }
    @Test
    void theCheckpointCoversWhatWasStoredAndOnlyGrows(@TempDir Path dir) {
        Stream stream = open(dir);
        TxnCheckpoint checkpoint = new TxnCheckpoint(storage.keyValues(), stream.streamId(), "t-0");
        assertThat(checkpoint.covered()).isZero();
        assertThat(checkpoint.due(1)).as("no transactional data, no checkpoint").isFalse();

        checkpoint.writeNow(10, "v1 10\n".getBytes(StandardCharsets.UTF_8));
        assertThat(checkpoint.covered()).isEqualTo(10);
        checkpoint.write(30, "v1 30\n".getBytes(StandardCharsets.UTF_8)).join();
        assertThat(checkpoint.covered()).isEqualTo(30);
        checkpoint.write(20, "v1 20\n".getBytes(StandardCharsets.UTF_8)).join();
        assertThat(checkpoint.covered()).isEqualTo(30);
        assertThat(new String(checkpoint.read().orElseThrow(), StandardCharsets.UTF_8)).isEqualTo("v1 30\n");

        // Due after a change once the interval passed, or after enough bytes whatever changed.
        assertThat(checkpoint.due(1)).isFalse();
        assertThat(checkpoint.due((int) TxnCheckpoint.BYTES)).isTrue();
        checkpoint.changed();
        assertThat(checkpoint.due(1)).as("changed, but the last one is recent").isFalse();
        assertThat(checkpoint.dueIdle()).as("the same while idle").isFalse();
    }
}
