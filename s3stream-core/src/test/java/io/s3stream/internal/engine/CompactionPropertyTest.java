package io.s3stream.internal.engine;

import io.s3stream.RecordBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.internal.compaction.LeakChecker;
import io.s3stream.testing.EngineFixture;
import io.s3stream.testing.LeakCheck;
import io.s3stream.testing.Seeds;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Random appends, uploads, trims, destroys, compactions and restarts on several streams. After every step every live
 * offset of every stream reads back byte for byte, and the leak check is clean; after the grace period has passed
 * and the deletion pass ran, the bucket holds exactly the live objects.
 */
class CompactionPropertyTest {
    static {
        LeakCheck.install();
    }

    private static final int STREAMS = 4;

    sealed interface Op permits Append, Upload, Trim, Destroy, Compact, Restart {
    }

    record Append(int stream, int count, int size, long seed) implements Op {
    }

    record Upload() implements Op {
    }

    record Trim(int stream, double position) implements Op {
    }

    record Destroy(int stream) implements Op {
    }

    record Compact(boolean pastGrace) implements Op {
    }

    record Restart() implements Op {
    }

    static LongStream seeds() {
        return Seeds.of(25);
    }

    /** 10 to 60 operations, weighted 10 append : 4 upload : 2 trim : 1 destroy : 5 compact : 1 restart. */
    static List<Op> ops(Random r) {
        int n = 10 + r.nextInt(51);
        List<Op> ops = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int k = r.nextInt(23);
            ops.add(k < 10 ? new Append(r.nextInt(STREAMS), 1 + r.nextInt(10), 1 + r.nextInt(90_000), r.nextLong())
                    : k < 14 ? new Upload()
                    : k < 16 ? new Trim(r.nextInt(STREAMS), r.nextDouble())
                    : k == 16 ? new Destroy(r.nextInt(STREAMS))
                    : k < 22 ? new Compact(r.nextBoolean()) : new Restart());
        }
        return ops;
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void compactionNeverLosesOrLeaks(long seed) throws Exception {
        List<Op> ops = ops(new Random(seed));
        AtomicLong nanos = new AtomicLong();
        try (EngineFixture fixture = new EngineFixture()) {
            String store = fixture.objectStoreUri() + "?minPartSizeBytes=65536";
            java.util.function.UnaryOperator<io.s3stream.StorageConfig.Builder> config = b -> b.objectStore(store)
                    .compactionEnabled(false).objectDeletionGracePeriod(Duration.ofSeconds(60))
                    .streamObjectThresholdBytes(128 * 1024).streamObjectTargetBytes(512 * 1024)
                    .compactionMaxAge(Duration.ofMinutes(1)).compactionMemoryBytes(2L << 20);
            StorageEngine engine = EngineHooks.engine(fixture.open(1, config, nanos::get));
            List<Stream> streams = new ArrayList<>();
            List<TreeMap<Long, byte[]>> model = new ArrayList<>();
            boolean[] destroyed = new boolean[STREAMS];
            for (int i = 0; i < STREAMS; i++) {
                streams.add(engine.createStream(StreamOptions.defaults()).get());
                model.add(new TreeMap<>());
            }
            long epoch = 0;
            for (Op op : ops) {
                switch (op) {
                    case Append a -> {
                        if (destroyed[a.stream()]) {
                            continue;
                        }
                        byte[] data = new byte[a.size()];
                        new Random(a.seed()).nextBytes(data);
                        long base = streams.get(a.stream()).append(RecordBatch.of(a.count(), ByteBuffer.wrap(data)))
                                .get(10, TimeUnit.SECONDS).baseOffset();
                        model.get(a.stream()).put(base, data);
                    }
                    case Upload ignored -> engine.flush().get(30, TimeUnit.SECONDS);
                    case Trim t -> {
                        if (destroyed[t.stream()]) {
                            continue;
                        }
                        Stream s = streams.get(t.stream());
                        long to = s.startOffset() + (long) (t.position() * (s.confirmedOffset() - s.startOffset()));
                        s.trim(to).get(10, TimeUnit.SECONDS);
                    }
                    case Destroy d -> {
                        if (!destroyed[d.stream()]) {
                            streams.get(d.stream()).destroy().get(30, TimeUnit.SECONDS);
                            destroyed[d.stream()] = true;
                        }
                    }
                    case Compact c -> {
                        if (c.pastGrace()) {
                            nanos.addAndGet(Duration.ofSeconds(61).toNanos());
                        }
                        assertThat(engine.compactor().runNow().lastError()).isNull();
                    }
                    case Restart ignored -> {
                        engine.close();
                        engine = EngineHooks.engine(fixture.open(1, config, nanos::get));
                        epoch++;
                        List<Stream> reopened = new ArrayList<>();
                        for (int i = 0; i < STREAMS; i++) {
                            reopened.add(destroyed[i] ? streams.get(i)
                                    : engine.openStream(streams.get(i).streamId(), epoch).get(10, TimeUnit.SECONDS));
                        }
                        streams = reopened;
                    }
                }
                check(engine, streams, model, destroyed);
            }
            // Past the grace period twice (first sighting, then deletion): the bucket is exactly the live objects.
            for (int i = 0; i < 3; i++) {
                nanos.addAndGet(Duration.ofSeconds(61).toNanos());
                engine.compactor().runNow();
            }
            LeakChecker.Report report = LeakChecker.check(engine.objectStorage().backend(), engine.metadataStore());
            assertThat(report.exact()).as(report.toString()).isTrue();
            check(engine, streams, model, destroyed);
        }
    }

    private static void check(StorageEngine engine, List<Stream> streams, List<TreeMap<Long, byte[]>> model,
                              boolean[] destroyed) throws Exception {
        List<Stream> live = new ArrayList<>();
        List<TreeMap<Long, byte[]>> liveModel = new ArrayList<>();
        for (int i = 0; i < streams.size(); i++) {
            if (!destroyed[i]) {
                live.add(streams.get(i));
                liveModel.add(model.get(i));
            }
        }
        StorageEngineCompactionTest.checkAll(live, liveModel);
        LeakChecker.Report report = LeakChecker.check(engine.objectStorage().backend(), engine.metadataStore());
        assertThat(report.clean()).as(report.toString()).isTrue();
    }

    @AfterAll
    static void noLeaks() {
        LeakCheck.assertNoLeaks();
    }
}
