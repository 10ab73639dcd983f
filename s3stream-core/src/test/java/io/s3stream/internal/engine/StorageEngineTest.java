package io.s3stream.internal.engine;

import io.s3stream.AppendResult;
import io.s3stream.FetchResult;
import io.s3stream.OffsetOutOfRangeException;
import io.s3stream.RecordBatch;
import io.s3stream.StorageIOException;
import io.s3stream.StorageMetrics;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamClosedException;
import io.s3stream.StreamFencedException;
import io.s3stream.StreamInfo;
import io.s3stream.StreamNotFoundException;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.testing.EngineFixture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class StorageEngineTest {
    private final EngineFixture fixture = new EngineFixture();
    private final long seed = System.nanoTime();
    private final Random random = new Random(seed);

    @AfterEach
    void close() {
        fixture.close();
    }

    /** What a stream should contain: base offset → payload. */
    private final Map<Long, Map<Long, byte[]>> expected = new java.util.HashMap<>();

    private byte[] payload(int size) {
        byte[] b = new byte[size];
        random.nextBytes(b);
        return b;
    }

    private AppendResult append(Stream stream, int count, byte[] data) throws Exception {
        AppendResult r = stream.append(RecordBatch.of(count, ByteBuffer.wrap(data))).get(10, TimeUnit.SECONDS);
        expected.computeIfAbsent(stream.streamId(), k -> new TreeMap<>()).put(r.baseOffset(), data);
        return r;
    }

    /** Reads [from, confirmed) in fetches of at most maxBytes and checks every batch against what was appended. */
    private int readAllAndCheck(Stream stream, long from, int maxBytes) throws Exception {
        Map<Long, byte[]> want = expected.getOrDefault(stream.streamId(), Map.of());
        long next = from;
        int batches = 0;
        while (next < stream.confirmedOffset()) {
            try (FetchResult result = stream.fetch(next, Long.MAX_VALUE, maxBytes).get(10, TimeUnit.SECONDS)) {
                assertThat(result.batches()).as("fetch at " + next + " returns at least one batch (seed " + seed + ")")
                        .isNotEmpty();
                for (StoredBatch b : result.batches()) {
                    if (batches == 0 && next == from) {
                        assertThat(b.baseOffset()).isLessThanOrEqualTo(next);
                        assertThat(b.endOffset()).isGreaterThan(next);
                    } else {
                        assertThat(b.baseOffset()).as("batches are contiguous").isEqualTo(next);
                    }
                    byte[] got = new byte[b.payload().remaining()];
                    b.payload().duplicate().get(got);
                    assertThat(got).as("payload at offset " + b.baseOffset() + " (seed " + seed + ")")
                            .isEqualTo(want.get(b.baseOffset()));
                    next = b.endOffset();
                    batches++;
                }
            }
        }
        return batches;
    }

    @Test
    void appendsAreAcknowledgedInOrderAndReadBackFromTheLogCache() throws Exception {
        StreamStorage storage = fixture.open(1);
        Stream stream = storage.createStream(StreamOptions.defaults()).get();
        assertThat(stream.epoch()).isZero();
        List<CompletableFuture<AppendResult>> futures = new ArrayList<>();
        List<Long> completionOrder = java.util.Collections.synchronizedList(new ArrayList<>());
        long offset = 0;
        for (int i = 0; i < 300; i++) {
            int count = 1 + random.nextInt(5);
            byte[] data = payload(1 + random.nextInt(3000));
            CompletableFuture<AppendResult> f = stream.append(RecordBatch.of(count, ByteBuffer.wrap(data)));
            long base = offset;
            expected.computeIfAbsent(stream.streamId(), k -> new TreeMap<>()).put(base, data);
            f.thenAccept(r -> completionOrder.add(r.baseOffset()));
            futures.add(f);
            offset += count;
        }
        CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
        assertThat(futures.stream().map(f -> f.join().baseOffset()).toList())
                .isEqualTo(new ArrayList<>(expected.get(stream.streamId()).keySet()));
        assertThat(stream.confirmedOffset()).isEqualTo(offset);
        assertThat(stream.nextOffset()).isEqualTo(offset);
        assertThat(readAllAndCheck(stream, 0, 10_000)).isEqualTo(300);
        assertThat(storage.metrics().appends().batches()).isEqualTo(300);
        try (FetchResult empty = stream.fetch(offset, offset + 10, 1000).get()) {
            assertThat(empty.batches()).isEmpty();
        }
    }

    @Test
    void oldDataIsReadFromObjectsAfterUploadAndEviction() throws Exception {
        StreamStorage storage = fixture.open(1);
        List<Stream> streams = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            streams.add(storage.createStream(StreamOptions.defaults()).get());
        }
        // 24 MiB through an 8 MiB log cache: most of it must come back from objects.
        for (int i = 0; i < 1200; i++) {
            Stream s = streams.get(i % 3 == 2 ? 2 : random.nextInt(2)); // stream 2 is large enough for stream objects
            append(s, 1 + random.nextInt(10), payload(10_000 + random.nextInt(20_000)));
        }
        StorageMetrics before = storage.metrics();
        assertThat(before.uploads().objects()).isPositive();
        for (Stream s : streams) {
            readAllAndCheck(s, 0, 100_000);
            readAllAndCheck(s, s.confirmedOffset() / 2, 1);
        }
        StorageMetrics after = storage.metrics();
        assertThat(after.objectStore().requests().get("GET")).isPositive();
        assertThat(after.blockCache().misses()).isPositive();
        assertThat(after.logCache().bytes()).isLessThanOrEqualTo(8L * 1024 * 1024);
    }

    @Test
    void everyAcknowledgedAppendSurvivesACrash() throws Exception {
        StreamStorage storage = fixture.open(1, b -> b.uploadThresholdBytes(512 * 1024));
        Stream a = storage.createStream(StreamOptions.defaults()).get();
        Stream b = storage.createStream(StreamOptions.builder().startOffset(1000).build()).get();
        for (int i = 0; i < 400; i++) {
            append(i % 2 == 0 ? a : b, 1 + random.nextInt(3), payload(1 + random.nextInt(8000)));
        }
        long aEnd = a.confirmedOffset();
        long bEnd = b.confirmedOffset();
        fixture.crash(storage);

        StreamStorage restarted = fixture.open(1);
        Stream a2 = restarted.openStream(a.streamId(), 1).get();
        Stream b2 = restarted.openStream(b.streamId(), 1).get();
        assertThat(a2.confirmedOffset()).isEqualTo(aEnd);
        assertThat(b2.nextOffset()).isEqualTo(bEnd);
        assertThat(b2.startOffset()).isEqualTo(1000);
        readAllAndCheck(a2, 0, 50_000);
        readAllAndCheck(b2, 1000, 50_000);
        AppendResult more = append(a2, 1, payload(100));
        assertThat(more.baseOffset()).isEqualTo(aEnd);
        readAllAndCheck(a2, 0, 1 << 20);
    }

    @Test
    void aStreamClosedOnOneNodeOpensOnAnotherWithEverything() throws Exception {
        StreamStorage one = fixture.open(1);
        Stream s = one.createStream(StreamOptions.defaults()).get();
        for (int i = 0; i < 50; i++) {
            append(s, 2, payload(5000));
        }
        StreamStorage two = fixture.open(2);
        assertThatThrownBy(() -> two.openStream(s.streamId(), 1).get())
                .hasCauseInstanceOf(StreamFencedException.class).hasMessageContaining("node 1");
        s.close().get(10, TimeUnit.SECONDS);
        assertThatThrownBy(() -> s.append(RecordBatch.of(1, ByteBuffer.allocate(1))).get())
                .hasCauseInstanceOf(StreamClosedException.class);
        Stream moved = two.openStream(s.streamId(), 1).get();
        assertThat(moved.confirmedOffset()).isEqualTo(100);
        readAllAndCheck(moved, 0, 20_000);
        assertThat(append(moved, 1, payload(10)).baseOffset()).isEqualTo(100);
    }

    @Test
    void openingWithAHigherEpochFencesTheOlderHandle() throws Exception {
        StreamStorage storage = fixture.open(1);
        Stream old = storage.createStream(StreamOptions.defaults()).get();
        append(old, 3, payload(100));
        Stream newer = storage.openStream(old.streamId(), 5).get();
        assertThat(newer.epoch()).isEqualTo(5);
        assertThatThrownBy(() -> old.append(RecordBatch.of(1, ByteBuffer.allocate(4))).get())
                .hasCauseInstanceOf(StreamFencedException.class).hasMessageContaining("epoch 5");
        assertThatThrownBy(() -> storage.openStream(old.streamId(), 4).get())
                .hasCauseInstanceOf(StreamFencedException.class);
        assertThat(append(newer, 1, payload(10)).baseOffset()).isEqualTo(3);
        readAllAndCheck(newer, 0, 1000);
    }

    @Test
    void trimMakesOldOffsetsUnreadable() throws Exception {
        StreamStorage storage = fixture.open(1);
        Stream s = storage.createStream(StreamOptions.defaults()).get();
        for (int i = 0; i < 20; i++) {
            append(s, 5, payload(100));
        }
        s.trim(50).get();
        assertThat(s.startOffset()).isEqualTo(50);
        assertThatThrownBy(() -> s.fetch(49, 100, 1000).get()).hasCauseInstanceOf(OffsetOutOfRangeException.class);
        readAllAndCheck(s, 50, 1000);
        assertThatThrownBy(() -> s.trim(101).get()).hasCauseInstanceOf(OffsetOutOfRangeException.class);
        assertThatThrownBy(() -> s.fetch(101, 200, 10).get()).hasCauseInstanceOf(OffsetOutOfRangeException.class);
    }

    @Test
    void trimmedDataThatWasNotUploadedYetIsNeverUploadedAndTheStreamContinuesAtItsStart() throws Exception {
        StreamStorage storage = fixture.open(1); // uploads every 30 s: everything below waits in the log cache
        Stream s = storage.createStream(StreamOptions.defaults()).get();
        Stream kept = storage.createStream(StreamOptions.defaults()).get();
        for (int i = 0; i < 20; i++) {
            append(s, 5, payload(1000));
        }
        append(kept, 1, payload(500));
        assertThatThrownBy(() -> s.trim(101).get()).hasCauseInstanceOf(OffsetOutOfRangeException.class)
                .hasMessageContaining("confirmed");
        s.trim(100).get(); // all of it, before any upload
        s.close().get(10, TimeUnit.SECONDS);
        kept.close().get(10, TimeUnit.SECONDS);
        StorageMetrics.Uploads uploads = storage.metrics().uploads();
        assertThat(uploads.bytes()).as("only the other stream's 500 bytes (and framing) were written")
                .isGreaterThan(500).isLessThan(20 * 1000);

        Stream reopened = storage.openStream(s.streamId(), 1).get(10, TimeUnit.SECONDS);
        assertThat(reopened.startOffset()).isEqualTo(100);
        assertThat(reopened.nextOffset()).as("offsets are never reused").isEqualTo(100);
        assertThat(reopened.confirmedOffset()).isEqualTo(100);
        assertThat(append(reopened, 3, payload(10)).baseOffset()).isEqualTo(100);
        reopened.close().get(10, TimeUnit.SECONDS);
        storage.close();

        StreamStorage again = fixture.open(1);
        Stream third = again.openStream(s.streamId(), 2).get(10, TimeUnit.SECONDS);
        assertThat(third.startOffset()).isEqualTo(100);
        assertThat(third.nextOffset()).isEqualTo(103);
        assertThat(readAllAndCheck(third, 100, 1000)).isEqualTo(1);
        readAllAndCheck(again.openStream(kept.streamId(), 1).get(10, TimeUnit.SECONDS), 0, 1000);
    }

    @Test
    void destroyRemovesTheStream() throws Exception {
        StreamStorage storage = fixture.open(1);
        Stream s = storage.createStream(StreamOptions.defaults()).get();
        append(s, 1, payload(10));
        s.destroy().get(10, TimeUnit.SECONDS);
        assertThatThrownBy(() -> storage.openStream(s.streamId(), 1).get())
                .hasCauseInstanceOf(StreamNotFoundException.class);
    }

    @Test
    void listStreamsShowsEveryNodesLiveStreamsWithTheirHoldersAndForgetsDestroyedOnes() throws Exception {
        StreamStorage one = fixture.open(1);
        StreamStorage two = fixture.open(2);
        Stream a = one.createStream(StreamOptions.builder().tags(Map.of("t", "a")).build()).get();
        Stream b = two.createStream(StreamOptions.builder().tags(Map.of("t", "b")).build()).get();
        Stream c = one.createStream(StreamOptions.defaults()).get();
        append(a, 3, payload(10));
        a.close().get(10, TimeUnit.SECONDS); // uploads: the committed end offset is 3
        c.destroy().get(10, TimeUnit.SECONDS);
        two.keyValues().sync().get(10, TimeUnit.SECONDS);
        one.keyValues().sync().get(10, TimeUnit.SECONDS); // both views caught up with the other node

        for (StreamStorage view : List.of(one, two)) {
            assertThat(view.listStreams().get(10, TimeUnit.SECONDS)).containsExactly(
                    new StreamInfo(a.streamId(), 0, 0, 3, -1, Map.of("t", "a")),
                    new StreamInfo(b.streamId(), 0, 0, 0, 2, Map.of("t", "b")));
        }
        assertThat(one.listStreams().get(10, TimeUnit.SECONDS).get(1).isOpen()).isTrue();
    }

    @Test
    void destroyingAHandleThatWasClosedFirstFailsAndDeletesNothing() throws Exception {
        StreamStorage storage = fixture.open(1);
        Stream s = storage.createStream(StreamOptions.defaults()).get();
        append(s, 1, payload(10));
        s.close().get(10, TimeUnit.SECONDS);
        assertThatThrownBy(() -> s.destroy().get(10, TimeUnit.SECONDS))
                .hasCauseInstanceOf(StreamClosedException.class).hasMessageContaining("open it again to destroy it");
        Stream again = storage.openStream(s.streamId(), 1).get(10, TimeUnit.SECONDS);
        assertThat(readAllAndCheck(again, 0, 1000)).isEqualTo(1);
        CompletableFuture<Void> first = again.destroy();
        CompletableFuture<Void> second = again.destroy(); // waits for the same deletion
        first.get(10, TimeUnit.SECONDS);
        second.get(10, TimeUnit.SECONDS);
        assertThat(again.close()).succeedsWithin(Duration.ofSeconds(10));
        assertThatThrownBy(() -> storage.openStream(s.streamId(), 2).get())
                .hasCauseInstanceOf(StreamNotFoundException.class);
    }

    @Test
    void oversizedBatchIsRefusedWithoutFencing() throws Exception {
        StreamStorage storage = fixture.open(1);
        Stream s = storage.createStream(StreamOptions.defaults()).get();
        assertThatThrownBy(() -> s.append(RecordBatch.of(1, ByteBuffer.allocate(256 * 1024 + 1))).get())
                .hasCauseInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxBatchBytes");
        assertThat(append(s, 1, payload(10)).baseOffset()).isZero();
    }

    @Test
    void aWalFailureFencesAppendsButKeepsAcknowledgedData() throws Exception {
        StreamStorage storage = fixture.open(1);
        Stream s = storage.createStream(StreamOptions.defaults()).get();
        for (int i = 0; i < 10; i++) {
            append(s, 1, payload(1000));
        }
        fixture.failWalAfter(1, 0);
        ExecutionException failed = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                () -> s.append(RecordBatch.of(1, ByteBuffer.wrap(payload(10)))).get(10, TimeUnit.SECONDS));
        assertThat(failed.getCause()).isInstanceOf(StorageIOException.class).hasMessageContaining("EIO");
        assertThatThrownBy(() -> s.append(RecordBatch.of(1, ByteBuffer.allocate(1))).get())
                .hasCauseInstanceOf(StorageIOException.class);
        readAllAndCheck(s, 0, 100_000);
        storage.close(); // uploads what was acknowledged

        StreamStorage restarted = fixture.open(1);
        Stream again = restarted.openStream(s.streamId(), 1).get();
        assertThat(again.confirmedOffset()).isEqualTo(10);
        readAllAndCheck(again, 0, 3000);
    }

    @Test
    void concurrentAppendersOnManyStreamsKeepPerStreamOrder() throws Exception {
        StreamStorage storage = fixture.open(1, b -> b.uploadThresholdBytes(256 * 1024));
        int streams = 8;
        List<Stream> handles = new ArrayList<>();
        for (int i = 0; i < streams; i++) {
            handles.add(storage.createStream(StreamOptions.defaults()).get());
        }
        Map<Long, Map<Long, byte[]>> written = new java.util.concurrent.ConcurrentHashMap<>();
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < 4; t++) {
            long threadSeed = random.nextLong();
            threads.add(Thread.ofPlatform().start(() -> {
                Random r = new Random(threadSeed);
                try {
                    List<CompletableFuture<Void>> pending = new ArrayList<>();
                    for (int i = 0; i < 500; i++) {
                        Stream s = handles.get(r.nextInt(streams));
                        byte[] data = new byte[1 + r.nextInt(2000)];
                        r.nextBytes(data);
                        pending.add(s.append(RecordBatch.of(1, ByteBuffer.wrap(data))).thenAccept(res ->
                                written.computeIfAbsent(s.streamId(), k -> new java.util.concurrent.ConcurrentSkipListMap<>())
                                        .put(res.baseOffset(), data)));
                    }
                    CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
                } catch (Throwable e) {
                    errors.add(e);
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        assertThat(errors).isEmpty();
        expected.putAll(written);
        long total = 0;
        for (Stream s : handles) {
            Map<Long, byte[]> w = written.getOrDefault(s.streamId(), Map.of());
            assertThat(s.confirmedOffset()).isEqualTo(w.size());
            total += readAllAndCheck(s, 0, 64 * 1024);
        }
        assertThat(total).isEqualTo(2000);
    }

    /**
     * Regression (found by wal-blockdev's StorageEngineCrashTest): the upload ticker ran while {@code open} was still
     * recovering the WAL, so the uploader thread sealed and uploaded recovered blocks concurrently with recovery's
     * own uploads. Recovery could then find the active block already taken, trim the WAL past data whose commit was
     * still in flight, and return; opening the stream at a new epoch fenced that commit and the acknowledged data was
     * gone (it also trimmed before {@code recover()} returned, which the blockdev WAL refuses). A WAL that recovers
     * slowly (as one read from disk does), slow PUTs and a 1 ms upload interval make the ticker fire mid-recovery.
     */
    @Test
    void uploadsDoNotRunConcurrentlyWithRecovery() throws Exception {
        String storeName = "recovery-race-" + java.util.UUID.randomUUID();
        try {
            StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + storeName)
                    .uploadThresholdBytes(4L * 1024 * 1024).uploadInterval(Duration.ofSeconds(30)));
            List<Stream> streams = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                streams.add(storage.createStream(StreamOptions.defaults()).get());
            }
            for (int i = 0; i < 40; i++) { // stays in the log cache and the WAL
                append(streams.get(i % 2), 1 + random.nextInt(3), payload(8_000 + random.nextInt(4_000)));
            }
            Map<Long, Long> ends = new java.util.HashMap<>();
            for (Stream s : streams) {
                ends.put(s.streamId(), s.confirmedOffset());
            }
            assertThat(storage.metrics().uploads().objects()).isZero();
            fixture.crash(storage);

            io.s3stream.testing.FaultyObjectStoreProvider.onOpen(storeName, store ->
                    store.on(io.s3stream.testing.FaultInjectingObjectStore.Operation.PUT).always()
                            .delay(Duration.ofMillis(100)));
            StreamStorage restarted = fixture.open(1, b -> b.objectStore("faulty://" + storeName)
                    .wal("slowrecovery://" + fixture.walName(1) + "?capacity=64MiB&recordDelayMs=15")
                    .uploadThresholdBytes(1024 * 1024).uploadInterval(Duration.ofMillis(1)));
            for (Stream s : streams) {
                Stream reopened = restarted.openStream(s.streamId(), 1).get(30, TimeUnit.SECONDS);
                assertThat(reopened.confirmedOffset()).as("recovered end of stream " + s.streamId())
                        .isEqualTo(ends.get(s.streamId()));
                readAllAndCheck(reopened, 0, 1 << 20);
            }
            restarted.close();

            io.s3stream.testing.FaultyObjectStoreProvider.onOpen(storeName, store -> { });
            StreamStorage third = fixture.open(1, b -> b.objectStore("faulty://" + storeName));
            for (Stream s : streams) {
                Stream reopened = third.openStream(s.streamId(), 2).get(30, TimeUnit.SECONDS);
                assertThat(reopened.confirmedOffset()).as("end of stream " + s.streamId() + " after a clean close")
                        .isEqualTo(ends.get(s.streamId()));
                readAllAndCheck(reopened, 0, 1 << 20);
            }
        } finally {
            io.s3stream.testing.FaultyObjectStoreProvider.forget(storeName);
        }
    }

    @Test
    void aFailingObjectStoreTurnsIntoBackPressureAndNothingAcknowledgedIsLost() throws Exception {
        String storeName = "bp-" + java.util.UUID.randomUUID();
        try {
            StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + storeName)
                    .backpressureTimeout(Duration.ofMillis(500)));
            var faults = io.s3stream.testing.FaultyObjectStoreProvider.faults(storeName);
            faults.on(io.s3stream.testing.FaultInjectingObjectStore.Operation.PUT).always()
                    .failRetriable("503 SlowDown");
            Stream s = storage.createStream(StreamOptions.defaults()).get();
            io.s3stream.OverCapacityException refused = null;
            int acknowledged = 0;
            for (int i = 0; i < 2000 && refused == null; i++) {
                byte[] data = payload(16 * 1024);
                try {
                    append(s, 1, data);
                    acknowledged++;
                } catch (ExecutionException e) {
                    assertThat(e.getCause()).isInstanceOf(io.s3stream.OverCapacityException.class);
                    refused = (io.s3stream.OverCapacityException) e.getCause();
                }
            }
            assertThat(refused).as("a log cache that cannot upload fills up and refuses appends").isNotNull();
            assertThat(refused).hasMessageContaining("logCacheBytes").hasMessageContaining("not keeping up");
            assertThat(refused.isRetriable()).isTrue();
            assertThat(acknowledged).isGreaterThan(100);
            assertThat(s.confirmedOffset()).isEqualTo(acknowledged);
            readAllAndCheck(s, 0, 1 << 20); // everything acknowledged is readable from the log cache

            faults.clearFaults(); // the store recovers: uploads drain the cache and appends flow again
            append(s, 1, payload(100));
            s.close().get(30, TimeUnit.SECONDS);
            storage.close();

            StreamStorage other = fixture.open(2, b -> b.objectStore("faulty://" + storeName));
            Stream moved = other.openStream(s.streamId(), 1).get();
            assertThat(moved.confirmedOffset()).isEqualTo(acknowledged + 1);
            readAllAndCheck(moved, 0, 1 << 20);
        } finally {
            io.s3stream.testing.FaultyObjectStoreProvider.forget(storeName);
        }
    }

    @Test
    void tryAppendAppendsWhileThereIsRoomAndOtherwiseReturnsNullWithoutWaitingOrAssigningAnOffset() throws Exception {
        String storeName = "try-" + java.util.UUID.randomUUID();
        try {
            // A back-pressure wait far longer than the test's own timeout: a tryAppend that waited would fail it.
            StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + storeName)
                    .backpressureTimeout(Duration.ofMinutes(10)));
            var faults = io.s3stream.testing.FaultyObjectStoreProvider.faults(storeName);
            Stream s = storage.createStream(StreamOptions.defaults()).get();
            byte[] first = payload(1000);
            AppendResult r = s.tryAppend(RecordBatch.of(2, ByteBuffer.wrap(first))).get(10, TimeUnit.SECONDS);
            assertThat(r.baseOffset()).isZero();
            expected.computeIfAbsent(s.streamId(), k -> new TreeMap<>()).put(0L, first);

            faults.on(io.s3stream.testing.FaultInjectingObjectStore.Operation.PUT).always()
                    .failRetriable("503 SlowDown");
            int taken = 0;
                        while (taken < 100_000) {
                byte[] data = payload(16 * 1024);
                var f = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(Duration.ofSeconds(30),
                        () -> s.tryAppend(RecordBatch.of(1, ByteBuffer.wrap(data))));
                if (f == null) {
                    break;
                }
                AppendResult ok = f.get(10, TimeUnit.SECONDS);
                expected.get(s.streamId()).put(ok.baseOffset(), data);
                taken++;
            }
            assertThat(taken).as("appends taken before the log cache filled").isBetween(1, 99_999);
            long next = s.nextOffset();
            assertThat(s.tryAppend(RecordBatch.of(1, ByteBuffer.wrap(payload(16 * 1024)))))
                    .as("a full log cache: refused again").isNull();
            assertThat(s.nextOffset()).as("a refused tryAppend assigns no offset").isEqualTo(next);
            assertThat(s.confirmedOffset()).isEqualTo(next);

            faults.clearFaults(); // uploads drain the cache: a waiting append goes through, and tryAppend again after
            append(s, 1, payload(100));
            AppendResult after = null;
            for (int i = 0; i < 1000 && after == null; i++) {
                byte[] data = payload(100);
                var f = s.tryAppend(RecordBatch.of(1, ByteBuffer.wrap(data)));
                if (f != null) {
                    after = f.get(10, TimeUnit.SECONDS);
                    expected.get(s.streamId()).put(after.baseOffset(), data);
                } else {
                    Thread.sleep(10);
                }
            }
            assertThat(after).as("tryAppend once uploads made room").isNotNull();
            assertThat(after.baseOffset()).isEqualTo(next + 1);
            readAllAndCheck(s, 0, 1 << 20);
            s.close().get(30, TimeUnit.SECONDS);
            storage.close();
        } finally {
            io.s3stream.testing.FaultyObjectStoreProvider.forget(storeName);
        }
    }

    /**
     * Appends in flight (held by the WAL) do not make tryAppend refuse: it sequences behind them without waiting, and
     * every append completes in offset order once the WAL lets them through.
     */
    @Test
    void tryAppendSequencesBehindAppendsInFlightWithoutWaiting() throws Exception {
        String wal = "gated-" + java.util.UUID.randomUUID();
        StreamStorage storage = fixture.open(1, b -> b.wal("gated://" + wal + "?capacity=16MiB"));
        try {
            Stream busy = storage.createStream(StreamOptions.defaults()).get();
            Stream other = storage.createStream(StreamOptions.defaults()).get();
            io.s3stream.testing.GatedWalProvider.hold(wal);
            byte[] held = payload(100);
            CompletableFuture<AppendResult> inFlight = busy.append(RecordBatch.of(1, ByteBuffer.wrap(held)));
            assertThat(inFlight).as("held by the WAL").isNotDone();
            byte[] otherData = payload(100);
            byte[] busyData = payload(100);
            CompletableFuture<AppendResult> otherTry = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
                    Duration.ofSeconds(10), () -> other.tryAppend(RecordBatch.of(1, ByteBuffer.wrap(otherData))));
            CompletableFuture<AppendResult> busyTry = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
                    Duration.ofSeconds(10), () -> busy.tryAppend(RecordBatch.of(2, ByteBuffer.wrap(busyData))));
            assertThat(otherTry).as("another stream's append is in flight: sequenced, not refused").isNotNull();
            assertThat(busyTry).as("the same stream's append is in flight: sequenced, not refused").isNotNull();
            assertThat(otherTry).isNotDone();
            assertThat(busyTry).isNotDone();
            assertThat(other.nextOffset()).isEqualTo(1);
            assertThat(busy.nextOffset()).isEqualTo(3);

            io.s3stream.testing.GatedWalProvider.release(wal);
            assertThat(inFlight.get(10, TimeUnit.SECONDS).baseOffset()).isZero();
            assertThat(busyTry.get(10, TimeUnit.SECONDS).baseOffset()).isEqualTo(1);
            assertThat(otherTry.get(10, TimeUnit.SECONDS).baseOffset()).isZero();
            expected.computeIfAbsent(busy.streamId(), k -> new TreeMap<>()).put(0L, held);
            expected.get(busy.streamId()).put(1L, busyData);
            expected.computeIfAbsent(other.streamId(), k -> new TreeMap<>()).put(0L, otherData);
            readAllAndCheck(busy, 0, 1 << 20);
            readAllAndCheck(other, 0, 1 << 20);
        } finally {
            io.s3stream.testing.GatedWalProvider.release(wal);
            storage.close();
        }
    }

    @Test
    void closeGivesUpOnADeadStoreAndTheWalKeepsEverything() throws Exception {
        String storeName = "dead-" + java.util.UUID.randomUUID();
        try {
            StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + storeName));
            Stream s = storage.createStream(StreamOptions.defaults()).get();
            append(s, 1, payload(1000)); // commits the stream's creation while the store is healthy
            var faults = io.s3stream.testing.FaultyObjectStoreProvider.faults(storeName);
            faults.on(io.s3stream.testing.FaultInjectingObjectStore.Operation.PUT).always()
                    .failFatal("403 AccessDenied");
            for (int i = 0; i < 80; i++) {
                append(s, 1, payload(20_000)); // over the 1 MiB upload threshold: a round is already retrying
            }
            long started = System.nanoTime();
            storage.close(); // must not wait for a store that refuses everything
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);
            assertThat(seconds).as("close() gave up on the dead store").isLessThan(60);

            faults.clearFaults();
            StreamStorage restarted = fixture.open(1, b -> b.objectStore("faulty://" + storeName));
            Stream again = restarted.openStream(s.streamId(), 1).get();
            assertThat(again.confirmedOffset()).isEqualTo(81);
            readAllAndCheck(again, 0, 1 << 20);
        } finally {
            io.s3stream.testing.FaultyObjectStoreProvider.forget(storeName);
        }
    }

    /**
     * The store fails through close()'s give-up of one block and then recovers for the next block: the later block must
     * not be uploaded and trimmed past the abandoned one, whose only durable copy is the WAL.
     */
    @Test
    void aBlockGivenUpOnWhileClosingIsNeverTrimmedFromTheWal() throws Exception {
        String storeName = "flaky-" + java.util.UUID.randomUUID();
        try {
            StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + storeName));
            Stream s = storage.createStream(StreamOptions.defaults()).get();
            var faults = io.s3stream.testing.FaultyObjectStoreProvider.faults(storeName);
            faults.on(io.s3stream.testing.FaultInjectingObjectStore.Operation.PUT).always().failFatal("403 AccessDenied");
            for (int i = 0; i < 60; i++) {
                append(s, 1, payload(20_000)); // > 1 MiB: a block is sealed and its upload keeps failing
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (faults.faultsInjected(io.s3stream.testing.FaultInjectingObjectStore.Operation.PUT) < 3) {
                assertThat(System.nanoTime()).as("the first block's upload was attempted 3 times").isLessThan(deadline);
                Thread.sleep(5);
            }
            for (int i = 0; i < 10; i++) {
                append(s, 1, payload(1000)); // the next block, still in the log cache's active block
            }
            // One more failure (the first block's attempt after close began: it is given up), then a healthy store.
            faults.clearFaults();
            faults.on(io.s3stream.testing.FaultInjectingObjectStore.Operation.PUT).nextCalls(1).failFatal("403 AccessDenied");
            storage.close();

            StreamStorage restarted = fixture.open(1, b -> b.objectStore("faulty://" + storeName));
            Stream again = restarted.openStream(s.streamId(), 1).get();
            assertThat(again.confirmedOffset()).isEqualTo(70);
            readAllAndCheck(again, 0, 1 << 20);
        } finally {
            io.s3stream.testing.FaultyObjectStoreProvider.forget(storeName);
        }
    }

    @Test
    void aCorruptObjectIsReportedNeverReturned() throws Exception {
        String storeName = "corrupt-" + java.util.UUID.randomUUID();
        try {
            StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + storeName));
            Stream s = storage.createStream(StreamOptions.defaults()).get();
            for (int i = 0; i < 20; i++) {
                append(s, 1, payload(1000));
            }
            s.close().get(10, TimeUnit.SECONDS);
            // Flip one byte inside the first data block of every object.
            var store = io.s3stream.testing.FaultyObjectStoreProvider.faults(storeName).delegate();
            for (var info : store.list("data/").get()) {
                io.netty.buffer.ByteBuf bytes = store.get(info.key()).get();
                try {
                    bytes.setByte(100, bytes.getByte(100) ^ 0x40);
                    store.put(info.key(), bytes).get();
                } finally {
                    bytes.release();
                }
            }
            // A fresh node has nothing cached: the read must go to the (damaged) objects.
            StreamStorage other = fixture.open(2, b -> b.objectStore("faulty://" + storeName));
            Stream reopened = other.openStream(s.streamId(), 1).get();
            assertThatThrownBy(() -> reopened.fetch(0, 20, 100_000).get(10, TimeUnit.SECONDS).close())
                    .hasCauseInstanceOf(io.s3stream.CorruptDataException.class)
                    .hasMessageContaining("data/");
        } finally {
            io.s3stream.testing.FaultyObjectStoreProvider.forget(storeName);
        }
    }

    @Test
    void closeUploadsEverythingSoARestartNeedsNoWal() throws Exception {
        StreamStorage storage = fixture.open(1, b -> b.uploadInterval(Duration.ofMinutes(10)));
        Stream s = storage.createStream(StreamOptions.defaults()).get();
        for (int i = 0; i < 30; i++) {
            append(s, 1, payload(3000));
        }
        storage.close();
        // A different node (own empty WAL) sees all data: it was uploaded and the stream closed.
        StreamStorage other = fixture.open(2);
        Stream moved = other.openStream(s.streamId(), 1).get();
        assertThat(moved.confirmedOffset()).isEqualTo(30);
        readAllAndCheck(moved, 0, 5000);
    }
}
