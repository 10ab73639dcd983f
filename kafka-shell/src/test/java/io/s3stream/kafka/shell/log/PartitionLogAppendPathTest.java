package io.s3stream.kafka.shell.log;

import io.s3stream.AppendResult;
import io.s3stream.FetchResult;
import io.s3stream.KeyCompaction;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Where a partition's append runs: on the calling thread (a connection's event loop) when the partition's appender
 * has nothing queued or running and nothing has to wait, on the appender otherwise; the offsets and outcomes are the
 * same either way.
 */
class PartitionLogAppendPathTest {
    private final String name = "append-path-" + UUID.randomUUID();
    private final ExecutorService blocking = Executors.newCachedThreadPool(r -> new Thread(r, "appender"));
    private StreamStorage storage;

    @AfterEach
    void close() {
        if (storage != null) {
            storage.close();
        }
        blocking.shutdownNow();
    }

    /** One call to the stream: which method, on which thread. */
    private record Call(String method, String thread) {
    }

    /** The engine's stream, recording its appends; {@code refuseTry} makes tryAppend answer "would wait". */
    private static final class RecordingStream implements Stream {
        final Stream delegate;
        final List<Call> calls = new CopyOnWriteArrayList<>();
        volatile boolean refuseTry;
        /** While set, acknowledgements wait for it: appends stay in flight. */
        volatile CompletableFuture<Void> gate;

        RecordingStream(Stream delegate) {
            this.delegate = delegate;
        }

        private CompletableFuture<AppendResult> held(CompletableFuture<AppendResult> f) {
            CompletableFuture<Void> g = gate;
            return f == null || g == null ? f : f.thenCombine(g, (r, v) -> r);
        }

        @Override
        public CompletableFuture<AppendResult> append(RecordBatch batch) {
            calls.add(new Call("append", Thread.currentThread().getName()));
            return held(delegate.append(batch));
        }

        @Override
        public CompletableFuture<AppendResult> tryAppend(RecordBatch batch) {
            calls.add(new Call("tryAppend", Thread.currentThread().getName()));
            return refuseTry ? null : held(delegate.tryAppend(batch));
        }

        @Override
        public long streamId() {
            return delegate.streamId();
        }

        @Override
        public long epoch() {
            return delegate.epoch();
        }

        @Override
        public long startOffset() {
            return delegate.startOffset();
        }

        @Override
        public long confirmedOffset() {
            return delegate.confirmedOffset();
        }

        @Override
        public long nextOffset() {
            return delegate.nextOffset();
        }

        @Override
        public CompletableFuture<FetchResult> fetch(long startOffset, long endOffset, int maxBytes) {
            return delegate.fetch(startOffset, endOffset, maxBytes);
        }

        @Override
        public CompletableFuture<Void> trim(long newStartOffset) {
            return delegate.trim(newStartOffset);
        }

        @Override
        public CompletableFuture<Void> close() {
            return delegate.close();
        }

        @Override
        public void compactKeys(KeyCompaction compaction) {
            delegate.compactKeys(compaction);
        }

        @Override
        public CompletableFuture<Void> destroy() {
            return delegate.destroy();
        }
    }

    private RecordingStream open(Path dir) {
        storage = StreamStorage.open(StorageConfig.builder().nodeId(1).dataDir(dir)
                .wal("mem://" + name + "-wal?capacity=16MiB").objectStore("mem://" + name).metadata("mem://" + name)
                .build());
        return new RecordingStream(storage.createStream(StreamOptions.defaults()).join());
    }

    /** A log whose open-time work on the appender (time index, transaction state) is done: the appender is idle. */
    private PartitionLog idleLog(RecordingStream stream) throws InterruptedException {
        PartitionLog log = new PartitionLog("t", 0, stream, blocking, storage.keyValues());
        assertThat(log.lastStableOffset().join()).isZero();
        awaitIdle(log);
        return log;
    }

    /** An append's outcome completes inside the appender's task: the appender lets go just after. */
    private static void awaitIdle(PartitionLog log) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!log.appenderIdle()) {
            assertThat(System.nanoTime()).as("the appender went idle").isLessThan(deadline);
            Thread.sleep(1);
        }
    }

    private static ByteBuffer plain(int records) {
        SimpleRecord[] rs = new SimpleRecord[records];
        for (int i = 0; i < records; i++) {
            rs[i] = new SimpleRecord(i, ("k" + i).getBytes(StandardCharsets.UTF_8), "v".getBytes(StandardCharsets.UTF_8));
        }
        return MemoryRecords.withRecords(0, Compression.NONE, rs).buffer();
    }

    private static ByteBuffer idempotent(long producerId, int baseSequence) {
        return MemoryRecords.withIdempotentRecords(Compression.NONE, producerId, (short) 0, baseSequence,
                new SimpleRecord(0, "k".getBytes(StandardCharsets.UTF_8), "v".getBytes(StandardCharsets.UTF_8)))
                .buffer();
    }

    private static PartitionLog.AppendOutcome done(CompletableFuture<PartitionLog.AppendOutcome> f) throws Exception {
        return f.get(10, TimeUnit.SECONDS);
    }

    @Test
    void anAppendToAnIdlePartitionRunsOnTheCallingThread(@TempDir Path dir) throws Exception {
        RecordingStream stream = open(dir);
        PartitionLog log = idleLog(stream);
        String caller = Thread.currentThread().getName();
        assertThat(done(log.append(plain(3), false))).isEqualTo(new PartitionLog.AppendOutcome(Errors.NONE, 0, -1));
        assertThat(done(log.append(plain(2), false))).isEqualTo(new PartitionLog.AppendOutcome(Errors.NONE, 3, -1));
        assertThat(stream.calls).containsExactly(new Call("tryAppend", caller), new Call("tryAppend", caller));
        assertThat(log.highWatermark()).isEqualTo(5);
    }

    /** Appends in flight do not send the next one to the appender: the stream sequences it behind them. */
    @Test
    void anAppendWhileTheLastIsUnacknowledgedAlsoRunsOnTheCallingThread(@TempDir Path dir) throws Exception {
        RecordingStream stream = open(dir);
        PartitionLog log = idleLog(stream);
        String caller = Thread.currentThread().getName();
        CompletableFuture<Void> gate = new CompletableFuture<>();
        stream.gate = gate;
        CompletableFuture<PartitionLog.AppendOutcome> first = log.append(plain(1), false);
        CompletableFuture<PartitionLog.AppendOutcome> second = log.append(plain(4), false);
        CompletableFuture<PartitionLog.AppendOutcome> third = log.append(plain(1), false);
        assertThat(first).isNotDone();
        stream.gate = null;
        gate.complete(null);
        assertThat(done(first).baseOffset()).isZero();
        assertThat(done(second).baseOffset()).isEqualTo(1);
        assertThat(done(third).baseOffset()).isEqualTo(5);
        assertThat(stream.calls).containsExactly(new Call("tryAppend", caller), new Call("tryAppend", caller),
                new Call("tryAppend", caller));
    }

    @Test
    void anAppendThatWouldWaitForLogCacheSpaceIsHandedToTheAppender(@TempDir Path dir) throws Exception {
        RecordingStream stream = open(dir);
        PartitionLog log = idleLog(stream);
        String caller = Thread.currentThread().getName();
        stream.refuseTry = true;
        assertThat(done(log.append(plain(2), false))).isEqualTo(new PartitionLog.AppendOutcome(Errors.NONE, 0, -1));
        stream.refuseTry = false;
        awaitIdle(log);
        assertThat(done(log.append(plain(1), false)).baseOffset()).isEqualTo(2);
        assertThat(stream.calls).containsExactly(new Call("tryAppend", caller), new Call("append", "appender"),
                new Call("tryAppend", caller));
    }

    @Test
    void anIdempotentProducersFirstAppendRebuildsProducerStateOnTheAppender(@TempDir Path dir) throws Exception {
        RecordingStream stream = open(dir);
        PartitionLog log = idleLog(stream);
        String caller = Thread.currentThread().getName();
        assertThat(done(log.append(idempotent(42, 0), false)).baseOffset()).isZero();
        awaitIdle(log);
        assertThat(done(log.append(idempotent(42, 1), false)).baseOffset()).isEqualTo(1);
        // A retried duplicate answered inline with its original's offset; a gap refused inline.
        assertThat(done(log.append(idempotent(42, 1), false))).isEqualTo(new PartitionLog.AppendOutcome(Errors.NONE, 1, -1));
        assertThat(done(log.append(idempotent(42, 5), false)).error()).isEqualTo(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER);
        assertThat(stream.calls).containsExactly(new Call("append", "appender"), new Call("tryAppend", caller));
    }
}
