package io.s3stream.internal.engine;

import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StorageMetrics;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.internal.compaction.Compactor;
import io.s3stream.internal.compaction.LeakChecker;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectType;
import io.s3stream.testing.EngineFixture;
import io.s3stream.testing.S3Server;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Compaction and deletion through the engine on MinIO, with the manifest in the same bucket (no metadata URI): SSOs
 * are merged and big streams split out, small stream objects are merged with real {@code UploadPartCopy} requests
 * (5 MiB minimum parts, as on S3), retired inputs are deleted from the bucket once the grace period has passed, and
 * every offset reads back byte for byte from the compacted objects.
 *
 * <p>Rounds are driven with {@link Compactor#runNow()} where a test counts objects, so that no scheduled round runs
 * between the uploads it sets up (the interval is an hour); {@link #backgroundRoundsCompactAndDeleteOnTheirOwn} runs
 * with a 300 ms interval and no hook. The grace period is real time.
 */
class CompactionMinioIT {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    private static final Duration GRACE = Duration.ofSeconds(1);
    private static final long MIB = 1024 * 1024;

    private final EngineFixture fixture = new EngineFixture();
    private final String prefix = "compaction-" + UUID.randomUUID();
    private final long seed = System.nanoTime();
    private final Random random = new Random(seed);
    private final List<TreeMap<Long, byte[]>> model = new ArrayList<>();

    @AfterEach
    void tearDown() {
        fixture.close();
    }

    private StorageEngine open(UnaryOperator<StorageConfig.Builder> more) {
        return EngineHooks.engine(fixture.open(1, b -> more.apply(b.objectStore(S3.uri(prefix)).metadata(null)
                .compactionEnabled(true).compactionInterval(Duration.ofHours(1))
                .objectDeletionGracePeriod(GRACE).streamObjectThresholdBytes(256 * 1024)
                .compactionMemoryBytes(32 * MIB).backpressureTimeout(Duration.ofSeconds(30)))));
    }

    private List<Stream> create(StorageEngine engine, int count) throws Exception {
        List<Stream> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            out.add(engine.createStream(StreamOptions.defaults()).get(30, TimeUnit.SECONDS));
            model.add(new TreeMap<>());
        }
        return out;
    }

    /** Appends {@code bytesPerStream[i]} in random batches of at most {@code maxBatch} to each stream, then uploads. */
    private void round(StorageEngine engine, List<Stream> streams, int maxBatch, int... bytesPerStream)
            throws Exception {
        for (int i = 0; i < streams.size(); i++) {
            int left = bytesPerStream[Math.min(i, bytesPerStream.length - 1)];
            while (left > 0) {
                byte[] data = new byte[Math.min(left, 1 + random.nextInt(maxBatch))];
                random.nextBytes(data);
                long base = streams.get(i).append(RecordBatch.of(1 + random.nextInt(5), ByteBuffer.wrap(data)))
                        .get(30, TimeUnit.SECONDS).baseOffset();
                model.get(i).put(base, data);
                left -= data.length;
            }
        }
        engine.flush().get(60, TimeUnit.SECONDS);
    }

    private static List<Stream> reopen(StorageEngine engine, List<Stream> old) throws Exception {
        List<Stream> out = new ArrayList<>();
        for (Stream s : old) {
            out.add(engine.openStream(s.streamId(), 1).get(30, TimeUnit.SECONDS));
        }
        return out;
    }

    private static List<ObjectMetadata> committed(StorageEngine engine, ObjectType type) {
        return engine.metadataStore().listObjects(ObjectState.COMMITTED).join().stream()
                .filter(o -> o.type() == type).toList();
    }

    private static LeakChecker.Report leaks(StorageEngine engine) {
        return LeakChecker.check(engine.objectStorage().backend(), engine.metadataStore());
    }

    /**
     * Runs rounds until the grace period has passed for every retired object and the bucket holds exactly the
     * committed objects (besides the manifest's own keys); checks that with a listing of its own too.
     */
    private void awaitExactBucket(StorageEngine engine, boolean driveRounds) throws Exception {
        awaitTrue(() -> {
            if (driveRounds) {
                assertThat(engine.compactor().runNow().lastError()).isNull();
            }
            return leaks(engine).exact();
        }, Duration.ofSeconds(30), () -> leaks(engine).toString());
        Set<String> listed = new HashSet<>();
        for (ObjectInfo info : engine.objectStorage().backend().list("").join()) {
            if (!info.key().startsWith("manifest/")) {
                listed.add(info.key());
            }
        }
        Set<String> live = new HashSet<>();
        for (ObjectMetadata o : engine.metadataStore().listObjects(ObjectState.COMMITTED).join()) {
            live.add(o.key());
        }
        assertThat(listed).as("the bucket under the prefix is the live objects plus the manifest").isEqualTo(live);
    }

    private static void awaitTrue(BooleanSupplier condition, Duration timeout, java.util.function.Supplier<String> why)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not reached within " + timeout + ": " + why.get());
            }
            Thread.sleep(200);
        }
    }

    /**
     * Reads every stream from its start: whole batches in order, byte for byte; and a fetch at every offset inside a
     * batch returns that batch.
     */
    private void checkEveryOffset(List<Stream> streams) throws Exception {
        for (int i = 0; i < streams.size(); i++) {
            Stream s = streams.get(i);
            TreeMap<Long, byte[]> want = model.get(i);
            long next = s.startOffset();
            long end = s.confirmedOffset();
            int batches = 0;
            while (next < end) {
                try (FetchResult r = s.fetch(next, end, 256 * 1024).get(30, TimeUnit.SECONDS)) {
                    assertThat(r.batches()).as("fetch at %d (seed %d)", next, seed).isNotEmpty();
                    for (StoredBatch b : r.batches()) {
                        assertThat(b.baseOffset()).as("contiguous (seed %d)", seed).isEqualTo(next);
                        assertThat(bytes(b)).as("stream %d batch %d (seed %d)", s.streamId(), b.baseOffset(), seed)
                                .isEqualTo(want.get(b.baseOffset()));
                        for (long inside = b.baseOffset() + 1; inside < b.endOffset(); inside++) {
                            try (FetchResult one = s.fetch(inside, inside + 1, 1).get(30, TimeUnit.SECONDS)) {
                                StoredBatch first = one.batches().getFirst();
                                assertThat(first.baseOffset()).as("offset %d (seed %d)", inside, seed)
                                        .isEqualTo(b.baseOffset());
                                assertThat(bytes(first)).isEqualTo(want.get(b.baseOffset()));
                            }
                        }
                        next = b.endOffset();
                        batches++;
                    }
                }
            }
            assertThat(batches).as("stream %d (seed %d)", s.streamId(), seed).isEqualTo(want.size());
        }
    }

    private static byte[] bytes(StoredBatch b) {
        byte[] got = new byte[b.payload().remaining()];
        b.payload().duplicate().get(got);
        return got;
    }

    @Test
    void mergesStreamSetObjectsSplitsBigStreamsAndDeletesInputsAfterTheGracePeriod() throws Exception {
        StorageEngine engine = open(b -> b);
        List<Stream> streams = create(engine, 6);
        for (int r = 0; r < 5; r++) {
            round(engine, streams, 20_000, 80_000, 3_000, 10_000, 1, 20_000, 5_000);
        }
        List<ObjectMetadata> inputs = committed(engine, ObjectType.STREAM_SET);
        assertThat(inputs).hasSize(5);
        assertThat(committed(engine, ObjectType.STREAM)).isEmpty();

        Compactor.Stats stats = engine.compactor().runNow();
        assertThat(stats.lastError()).isNull();
        assertThat(committed(engine, ObjectType.STREAM_SET)).as("merged").hasSize(1);
        List<ObjectMetadata> sos = committed(engine, ObjectType.STREAM);
        assertThat(sos).as("stream 0 (400 KB >= 256 KiB) split out").hasSize(1);
        assertThat(sos.getFirst().ranges().getFirst().streamId()).isEqualTo(streams.getFirst().streamId());
        LeakChecker.Report report = leaks(engine);
        assertThat(report.clean()).as(report.toString()).isTrue();
        assertThat(report.pendingDeletionKeys()).as("inputs wait for the grace period")
                .containsExactlyInAnyOrderElementsOf(inputs.stream().map(ObjectMetadata::key).toList());

        // Read back from objects only: a new engine has nothing in its log cache.
        engine.close();
        engine = open(b -> b);
        streams = reopen(engine, streams);
        checkEveryOffset(streams);
        assertThat(engine.metrics().reads().fromObjects()).isPositive();
        assertThat(engine.metrics().reads().fromLogCache()).isZero();

        awaitExactBucket(engine, true);
        assertThat(engine.compactor().stats().objectsDeleted()).isEqualTo(5);
        checkEveryOffset(streams);
    }

    @Test
    void mergesStreamObjectsWithServerSideCopy() throws Exception {
        // Stream objects of ~6 MiB (above S3's 5 MiB minimum part) and a 32 MiB target: three make one group.
        UnaryOperator<StorageConfig.Builder> big = b -> b.streamObjectThresholdBytes(MIB)
                .streamObjectTargetBytes(32 * MIB).uploadThresholdBytes(16 * MIB).logCacheBytes(48 * MIB)
                .maxBatchBytes(256 * 1024);
        StorageEngine engine = open(big);
        List<Stream> streams = create(engine, 1);
        for (int r = 0; r < 3; r++) {
            round(engine, streams, 200_000, (int) (6 * MIB) + random.nextInt(512 * 1024));
        }
        List<ObjectMetadata> inputs = committed(engine, ObjectType.STREAM);
        assertThat(inputs).hasSize(3);
        long inputBytes = inputs.stream().mapToLong(ObjectMetadata::sizeBytes).sum();

        StorageMetrics before = engine.metrics();
        Compactor.Stats stats = engine.compactor().runNow();
        StorageMetrics after = engine.metrics();
        assertThat(stats.lastError()).isNull();
        assertThat(committed(engine, ObjectType.STREAM)).as("merged into one").hasSize(1);
        long copies = after.objectStore().requests().get("PART_COPY") - before.objectStore().requests().get("PART_COPY");
        long bytesOut = after.objectStore().bytesOut() - before.objectStore().bytesOut();
        long bytesIn = after.objectStore().bytesIn() - before.objectStore().bytesIn();
        System.out.printf("SO merge of %d bytes: PART_COPY %d, bytes copied %d, through node %d, out %d, in %d%n",
                inputBytes, copies, stats.bytesCopied(), stats.bytesWritten(), bytesOut, bytesIn);
        assertThat(copies).as("server-side copies (UploadPartCopy)").isGreaterThanOrEqualTo(3);
        assertThat(stats.bytesCopied()).as("data blocks copied server-side").isGreaterThan(inputBytes * 9 / 10);
        assertThat(stats.bytesWritten()).as("bytes written through the node").isLessThan(MIB);
        assertThat(bytesOut).as("bytes sent to the store (index, footer)").isLessThan(MIB);
        assertThat(bytesIn).as("bytes read from the store (indexes)").isLessThan(MIB);

        engine.close();
        engine = open(big);
        streams = reopen(engine, streams);
        checkEveryOffset(streams);
        assertThat(engine.metrics().reads().fromObjects()).isPositive();
        awaitExactBucket(engine, true);
        checkEveryOffset(streams);
    }

    @Test
    void backgroundRoundsCompactAndDeleteOnTheirOwn() throws Exception {
        // No hook: a round every 300 ms; data older than 1 s is split out of SSOs into stream objects.
        StorageEngine engine = open(b -> b.compactionInterval(Duration.ofMillis(300))
                .compactionMaxAge(Duration.ofSeconds(1)));
        List<Stream> streams = create(engine, 3);
        for (int r = 0; r < 4; r++) {
            round(engine, streams, 10_000, 30_000, 5_000, 50_000);
        }
        awaitTrue(() -> committed(engine, ObjectType.STREAM_SET).isEmpty()
                        && committed(engine, ObjectType.STREAM).size() >= 3,
                Duration.ofSeconds(30), () -> "objects " + engine.metadataStore().listObjects().join());
        awaitExactBucket(engine, false);
        assertThat(engine.compactor().stats().runs()).isPositive();
        assertThat(engine.compactor().stats().objectsDeleted()).isPositive();

        engine.close();
        StorageEngine reopened = open(b -> b);
        checkEveryOffset(reopen(reopened, streams));
        assertThat(reopened.metrics().reads().fromObjects()).isPositive();
    }
}
