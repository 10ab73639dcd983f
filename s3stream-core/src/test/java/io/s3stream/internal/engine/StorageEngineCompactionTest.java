package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.s3stream.CorruptDataException;
import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.internal.compaction.Compactor;
import io.s3stream.internal.compaction.LeakChecker;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamRange;
import io.s3stream.testing.EngineFixture;
import io.s3stream.testing.FaultInjectingObjectStore;
import io.s3stream.testing.FaultyObjectStoreProvider;
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
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Compaction and object deletion through the engine, driven synchronously with {@link Compactor#runNow()}. */
class StorageEngineCompactionTest {
    private final EngineFixture fixture = new EngineFixture();
    private final AtomicLong nanos = new AtomicLong();
    private final List<TreeMap<Long, byte[]>> model = new ArrayList<>();
    private final Random random = new Random(7);

    @AfterEach
    void tearDown() {
        fixture.close();
    }

    private static UnaryOperator<StorageConfig.Builder> manual(UnaryOperator<StorageConfig.Builder> more) {
        return b -> more.apply(b.compactionEnabled(false).objectDeletionGracePeriod(Duration.ofSeconds(60))
                .streamObjectThresholdBytes(256 * 1024).compactionMemoryBytes(8L << 20));
    }

    private StorageEngine open(UnaryOperator<StorageConfig.Builder> more) {
        StorageEngine engine = EngineHooks.engine(fixture.open(1, manual(more), nanos::get));
        return engine;
    }

    private List<Stream> create(StorageEngine engine, int count) throws Exception {
        List<Stream> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            out.add(engine.createStream(StreamOptions.defaults()).get());
            model.add(new TreeMap<>());
        }
        return out;
    }

    /** Appends {@code bytesPerStream[i]} in random batches to each stream, then uploads. */
    private void round(StorageEngine engine, List<Stream> streams, int... bytesPerStream) throws Exception {
        for (int i = 0; i < streams.size(); i++) {
            int left = bytesPerStream[Math.min(i, bytesPerStream.length - 1)];
            while (left > 0) {
                byte[] data = new byte[Math.min(left, 1 + random.nextInt(20_000))];
                random.nextBytes(data);
                int count = 1 + random.nextInt(5);
                long base = streams.get(i).append(RecordBatch.of(count, ByteBuffer.wrap(data))).get(10, TimeUnit.SECONDS)
                        .baseOffset();
                model.get(i).put(base, data);
                left -= data.length;
            }
        }
        engine.flush().get(30, TimeUnit.SECONDS);
    }

    private List<Stream> reopen(StorageEngine engine, List<Stream> old, long epoch) throws Exception {
        List<Stream> out = new ArrayList<>();
        for (Stream s : old) {
            out.add(engine.openStream(s.streamId(), epoch).get(10, TimeUnit.SECONDS));
        }
        return out;
    }

    static void checkAll(List<Stream> streams, List<TreeMap<Long, byte[]>> model) throws Exception {
        for (int i = 0; i < streams.size(); i++) {
            Stream s = streams.get(i);
            long from = s.startOffset();
            long end = s.confirmedOffset();
            while (from < end) {
                try (FetchResult result = s.fetch(from, end, 50_000).get(10, TimeUnit.SECONDS)) {
                    assertThat(result.batches()).isNotEmpty();
                    for (StoredBatch b : result.batches()) {
                        Map.Entry<Long, byte[]> e = model.get(i).floorEntry(from);
                        assertThat(b.baseOffset()).isEqualTo(e.getKey());
                        byte[] got = new byte[b.payload().remaining()];
                        b.payload().duplicate().get(got);
                        assertThat(got).as("stream %d offset %d", s.streamId(), b.baseOffset()).isEqualTo(e.getValue());
                        from = b.endOffset();
                    }
                }
            }
        }
    }

    private static List<ObjectMetadata> committed(StorageEngine engine, ObjectType type) {
        return engine.metadataStore().listObjects(ObjectState.COMMITTED).join().stream()
                .filter(o -> o.type() == type).toList();
    }

    private static LeakChecker.Report leaks(StorageEngine engine) {
        return LeakChecker.check(engine.objectStorage().backend(), engine.metadataStore());
    }

    @Test
    void mergesStreamSetObjectsSplitsBigStreamsAndDeletesInputsAfterTheGracePeriod() throws Exception {
        StorageEngine engine = open(b -> b);
        List<Stream> streams = create(engine, 6);
        for (int r = 0; r < 5; r++) {
            round(engine, streams, 80_000, 3_000, 10_000, 1, 20_000, 5_000);
        }
        assertThat(committed(engine, ObjectType.STREAM_SET)).hasSize(5);

        Compactor.Stats stats = engine.compactor().runNow();
        assertThat(stats.lastError()).isNull();
        assertThat(committed(engine, ObjectType.STREAM_SET)).hasSize(1);
        List<ObjectMetadata> sos = committed(engine, ObjectType.STREAM);
        assertThat(sos).hasSize(1); // stream 0: 400 KB >= 256 KiB
        assertThat(sos.getFirst().ranges().getFirst().streamId()).isEqualTo(streams.getFirst().streamId());
        LeakChecker.Report report = leaks(engine);
        assertThat(report.clean()).as(report.toString()).isTrue();
        assertThat(report.pendingDeletionKeys()).hasSize(5);

        engine.close();
        engine = open(b -> b);
        streams = reopen(engine, streams, 1);
        checkAll(streams, model);

        // Grace period not over: nothing deleted. Then it is.
        engine.compactor().runNow();
        assertThat(leaks(engine).pendingDeletionKeys()).hasSize(5);
        nanos.addAndGet(Duration.ofSeconds(61).toNanos());
        engine.compactor().runNow();
        assertThat(leaks(engine).pendingDeletionKeys()).isEmpty();
        nanos.addAndGet(Duration.ofSeconds(61).toNanos());
        engine.compactor().runNow();
        report = leaks(engine);
        assertThat(report.exact()).as(report.toString()).isTrue();
        checkAll(streams, model);
    }

    @Test
    void trimmedAndDestroyedDataIsDroppedAndObjectsDeleted() throws Exception {
        StorageEngine engine = open(b -> b.compactionMaxAge(Duration.ofMillis(1)));
        List<Stream> streams = create(engine, 3);
        for (int r = 0; r < 4; r++) {
            round(engine, streams, 30_000);
        }
        streams.get(0).trim(streams.get(0).confirmedOffset() - 3).get();
        streams.get(1).destroy().get();
        Thread.sleep(5);
        engine.compactor().runNow();
        // Max age 1 ms: everything is split out into stream objects; stream 1 is gone, stream 0 keeps its tail.
        assertThat(committed(engine, ObjectType.STREAM_SET)).isEmpty();
        List<ObjectMetadata> sos = committed(engine, ObjectType.STREAM);
        assertThat(sos).extracting(o -> o.ranges().getFirst().streamId())
                .containsExactlyInAnyOrder(streams.get(0).streamId(), streams.get(2).streamId());
        nanos.addAndGet(Duration.ofSeconds(61).toNanos());
        engine.compactor().runNow();
        nanos.addAndGet(Duration.ofSeconds(61).toNanos());
        engine.compactor().runNow();
        assertThat(leaks(engine).exact()).as(leaks(engine).toString()).isTrue();
        engine.close();
        engine = open(b -> b);
        List<Stream> live = reopen(engine, List.of(streams.get(0), streams.get(2)), 1);
        checkAll(live, List.of(model.get(0), model.get(2)));
    }

    @Test
    void mergesSmallStreamObjectsWithServerSideCopyWhereAligned() throws Exception {
        String store = fixture.objectStoreUri() + "?minPartSizeBytes=65536";
        StorageEngine engine = open(b -> b.objectStore(store).streamObjectThresholdBytes(64 * 1024)
                .streamObjectTargetBytes(4L << 20));
        List<Stream> streams = create(engine, 1);
        for (int r = 0; r < 10; r++) {
            round(engine, streams, 100_000 + random.nextInt(100_000));
        }
        assertThat(committed(engine, ObjectType.STREAM)).hasSize(10);
        Compactor.Stats stats = engine.compactor().runNow();
        assertThat(stats.lastError()).isNull();
        assertThat(committed(engine, ObjectType.STREAM)).hasSize(1);
        assertThat(stats.bytesCopied()).isGreaterThan(0);
        assertThat(leaks(engine).clean()).isTrue();
        engine.close();
        engine = open(b -> b.objectStore(store));
        checkAll(reopen(engine, streams, 1), model);
    }

    @Test
    void corruptInputStopsCompactionNamesTheObjectAndStaysReferenced() throws Exception {
        StorageEngine engine = open(b -> b);
        List<Stream> streams = create(engine, 2);
        for (int r = 0; r < 3; r++) {
            round(engine, streams, 5_000);
        }
        List<ObjectMetadata> inputs = committed(engine, ObjectType.STREAM_SET);
        ObjectMetadata victim = inputs.get(1);
        ByteBuf bytes = engine.objectStorage().backend().get(victim.key()).join();
        try {
            bytes.setByte(100, bytes.getByte(100) ^ 0x40); // inside the first data block
            engine.objectStorage().backend().put(victim.key(), bytes).join();
        } finally {
            bytes.release();
        }
        Compactor.Stats stats = engine.compactor().runNow();
        assertThat(stats.lastError()).contains(victim.key()).contains("corrupt");
        assertThat(committed(engine, ObjectType.STREAM_SET)).containsExactlyElementsOf(inputs);
        assertThat(committed(engine, ObjectType.STREAM)).isEmpty();
        assertThat(leaks(engine).exact()).as(leaks(engine).toString()).isTrue();
        // Readers still get the corruption reported, never data: a fetch of the corrupted block's stream, from where
        // that stream's range in the victim starts.
        engine.close();
        engine = open(b -> b);
        StreamRange corrupted = victim.ranges().get(0);
        Stream s = engine.openStream(corrupted.streamId(), 1).get();
        CompletableFuture<FetchResult> f = s.fetch(corrupted.startOffset(), s.confirmedOffset(), Integer.MAX_VALUE);
        assertThatThrownBy(() -> f.get(10, TimeUnit.SECONDS).close()).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(CorruptDataException.class);
    }

    @Test
    void objectStoreFailureLeavesInputsAndNoReferencedPartialOutput() throws Exception {
        String name = "compaction-faults-" + System.nanoTime();
        try {
            StorageEngine engine = open(b -> b.objectStore("faulty://" + name).metadata("mem://" + name)
                    .compactionRunTimeout(Duration.ofMillis(500)));
            List<Stream> streams = create(engine, 3);
            for (int r = 0; r < 3; r++) {
                round(engine, streams, 40_000, 300_000, 2_000);
            }
            List<ObjectMetadata> before = engine.metadataStore().listObjects(ObjectState.COMMITTED).join();
            FaultInjectingObjectStore faults = FaultyObjectStoreProvider.faults(name);
            faults.on(FaultInjectingObjectStore.Operation.PUT).nextCalls(1)
                    .failFatal("403 AccessDenied");
            Compactor.Stats stats = engine.compactor().runNow();
            assertThat(stats.lastError()).isNotNull();
            assertThat(engine.metadataStore().listObjects(ObjectState.COMMITTED).join()).isEqualTo(before);
            LeakChecker.Report report = leaks(engine);
            assertThat(report.clean()).as(report.toString()).isTrue();
            faults.clearFaults();
            Thread.sleep(600); // prepared outputs of the failed run expire
            nanos.addAndGet(Duration.ofSeconds(61).toNanos());
            engine.compactor().runNow(); // notes the expired outputs, compacts again
            for (int i = 0; i < 2; i++) { // inputs and expired outputs pass the grace period and are deleted
                nanos.addAndGet(Duration.ofSeconds(61).toNanos());
                engine.compactor().runNow();
            }
            report = leaks(engine);
            assertThat(report.exact()).as(report.toString()).isTrue();
            assertThat(engine.metadataStore().listObjects(ObjectState.COMMITTED).join()).hasSizeLessThan(before.size());
            checkAll(streams, model);
        } finally {
            FaultyObjectStoreProvider.forget(name);
        }
    }

    @Test
    void aFetchRacingWithCompactionAndDeletionRetriesThroughTheManifest() throws Exception {
        String name = "compaction-race-" + System.nanoTime();
        try {
            StorageEngine engine = open(b -> b.objectStore("faulty://" + name).metadata("mem://" + name)
                    .objectDeletionGracePeriod(Duration.ZERO));
            List<Stream> streams = create(engine, 2);
            for (int r = 0; r < 3; r++) {
                round(engine, streams, 20_000);
            }
            engine.close();
            engine = open(b -> b.objectStore("faulty://" + name).metadata("mem://" + name)
                    .objectDeletionGracePeriod(Duration.ZERO));
            streams = reopen(engine, streams, 1);
            FaultInjectingObjectStore faults = FaultyObjectStoreProvider.faults(name);
            faults.on(FaultInjectingObjectStore.Operation.GET).nextCalls(1).delay(Duration.ofMillis(500));
            Stream s = streams.get(0);
            CompletableFuture<FetchResult> racing = s.fetch(s.startOffset(), s.confirmedOffset(), Integer.MAX_VALUE);
            Thread.sleep(100);
            engine.compactor().runNow(); // compacts and, with no grace period, deletes the inputs at once
            engine.compactor().runNow();
            racing.get(10, TimeUnit.SECONDS).close();
            checkAll(streams, model);
        } finally {
            FaultyObjectStoreProvider.forget(name);
        }
    }
}
