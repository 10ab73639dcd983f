package io.s3stream.internal.engine;

import io.s3stream.RecordBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.internal.compaction.LeakChecker;
import io.s3stream.testing.EngineFixture;
import io.s3stream.testing.LeakCheck;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

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

    @Provide
    Arbitrary<List<Op>> ops() {
        Arbitrary<Op> append = Combinators.combine(Arbitraries.integers().between(0, STREAMS - 1),
                        Arbitraries.integers().between(1, 10), Arbitraries.integers().between(1, 90_000),
                        Arbitraries.longs())
                .as(Append::new);
        Arbitrary<Op> trim = Combinators.combine(Arbitraries.integers().between(0, STREAMS - 1),
                Arbitraries.doubles().between(0, 1)).as(Trim::new);
        Arbitrary<Op> destroy = Arbitraries.integers().between(0, STREAMS - 1).map(Destroy::new);
        Arbitrary<Op> compact = Arbitraries.of(true, false).map(Compact::new);
        Arbitrary<Op> op = Arbitraries.frequencyOf(
                Tuple.of(10, append), Tuple.of(4, Arbitraries.just(new Upload())), Tuple.of(2, trim),
                Tuple.of(1, destroy), Tuple.of(5, compact), Tuple.of(1, Arbitraries.just(new Restart())));
        return op.list().ofMinSize(10).ofMaxSize(60);
    }

    @Property(tries = 25)
    void compactionNeverLosesOrLeaks(@ForAll("ops") List<Op> ops) throws Exception {
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

    @AfterContainer
    static void noLeaks() {
        LeakCheck.assertNoLeaks();
    }
}
