package io.s3stream.internal.engine;

import io.s3stream.AppendResult;
import io.s3stream.FetchResult;
import io.s3stream.OffsetOutOfRangeException;
import io.s3stream.RecordBatch;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.testing.EngineFixture;
import io.s3stream.testing.LeakCheck;
import io.s3stream.testing.Seeds;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Random sequences of append / fetch / trim / upload / crash / restart over several streams, checked after every step
 * against a trivial model: a sorted map of base offset to payload per stream, and a start offset.
 */
class StorageEnginePropertyTest {
    static {
        LeakCheck.install();
    }

    private static final int STREAMS = 3;

    sealed interface Op permits Append, Fetch, Trim, Flush, Crash, Restart {
    }

    record Append(int stream, int count, int size, long seed) implements Op {
    }

    record Fetch(int stream, double position, int maxBytes) implements Op {
    }

    record Trim(int stream, double position) implements Op {
    }

    record Flush() implements Op {
    }

    record Crash() implements Op {
    }

    record Restart() implements Op {
    }

    static LongStream seeds() {
        return Seeds.of(40);
    }

    /** 10 to 120 operations, weighted 12 append : 6 fetch : 1 trim : 1 flush : 1 crash : 1 restart. */
    static List<Op> ops(Random r) {
        int n = 10 + r.nextInt(111);
        List<Op> ops = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int k = r.nextInt(22);
            ops.add(k < 12 ? new Append(r.nextInt(STREAMS), 1 + r.nextInt(20), r.nextInt(10) == 0 ? 0 : r.nextInt(60_001),
                    r.nextLong())
                    : k < 18 ? new Fetch(r.nextInt(STREAMS), r.nextDouble(), r.nextInt(200_001))
                    : k == 18 ? new Trim(r.nextInt(STREAMS), r.nextDouble())
                    : k == 19 ? new Flush() : k == 20 ? new Crash() : new Restart());
        }
        return ops;
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void engineMatchesTheModel(long seed) throws Exception {
        List<Op> ops = ops(new Random(seed));
        try (EngineFixture fixture = new EngineFixture()) {
            StreamStorage storage = fixture.open(1);
            List<Stream> streams = new ArrayList<>();
            List<TreeMap<Long, byte[]>> model = new ArrayList<>();
            long[] start = new long[STREAMS];
            long[] next = new long[STREAMS];
            for (int i = 0; i < STREAMS; i++) {
                streams.add(storage.createStream(StreamOptions.defaults()).get());
                model.add(new TreeMap<>());
            }
            long epoch = 0;
            for (Op op : ops) {
                switch (op) {
                    case Append a -> {
                        byte[] data = new byte[a.size()];
                        new Random(a.seed()).nextBytes(data);
                        AppendResult r = streams.get(a.stream()).append(RecordBatch.of(a.count(), ByteBuffer.wrap(data)))
                                .get(10, TimeUnit.SECONDS);
                        assertThat(r.baseOffset()).isEqualTo(next[a.stream()]);
                        model.get(a.stream()).put(r.baseOffset(), data);
                        next[a.stream()] += a.count();
                    }
                    case Fetch f -> checkFetch(streams.get(f.stream()), model.get(f.stream()), start[f.stream()],
                            next[f.stream()], f.position(), f.maxBytes());
                    case Trim t -> {
                        long to = start[t.stream()] + (long) (t.position() * (next[t.stream()] - start[t.stream()]));
                        streams.get(t.stream()).trim(to).get(10, TimeUnit.SECONDS);
                        start[t.stream()] = to;
                    }
                    case Flush ignored -> EngineHooks.flush(storage).get(30, TimeUnit.SECONDS);
                    case Crash ignored -> {
                        fixture.crash(storage);
                        storage = fixture.open(1);
                        epoch++;
                        streams = reopen(storage, streams, epoch);
                    }
                    case Restart ignored -> {
                        storage.close();
                        storage = fixture.open(1);
                        epoch++;
                        streams = reopen(storage, streams, epoch);
                    }
                }
                for (int i = 0; i < STREAMS; i++) {
                    assertThat(streams.get(i).confirmedOffset()).isEqualTo(next[i]);
                    assertThat(streams.get(i).startOffset()).isEqualTo(start[i]);
                }
            }
            for (int i = 0; i < STREAMS; i++) {
                checkFetch(streams.get(i), model.get(i), start[i], next[i], 0, Integer.MAX_VALUE);
            }
        }
    }

    private static List<Stream> reopen(StreamStorage storage, List<Stream> old, long epoch) throws Exception {
        List<Stream> out = new ArrayList<>();
        for (Stream s : old) {
            out.add(storage.openStream(s.streamId(), epoch).get(10, TimeUnit.SECONDS));
        }
        return out;
    }

    /** Reads from a position to the end and compares every batch with the model. */
    private static void checkFetch(Stream stream, TreeMap<Long, byte[]> model, long start, long next, double position,
                                   int maxBytes) throws Exception {
        long from = start + (long) (position * (next - start));
        if (next == start) {
            from = start;
        }
        // A batch straddling the trim point is still returned whole; the model keeps it.
        while (from < next) {
            try (FetchResult result = stream.fetch(from, next, maxBytes).get(10, TimeUnit.SECONDS)) {
                assertThat(result.batches()).isNotEmpty();
                for (StoredBatch b : result.batches()) {
                    Map.Entry<Long, byte[]> e = model.floorEntry(from);
                    assertThat(e).isNotNull();
                    assertThat(b.baseOffset()).isEqualTo(e.getKey());
                    byte[] got = new byte[b.payload().remaining()];
                    b.payload().duplicate().get(got);
                    assertThat(got).isEqualTo(e.getValue());
                    from = b.endOffset();
                }
            }
        }
        if (start > 0) {
            try {
                stream.fetch(start - 1, next, 100).get(10, TimeUnit.SECONDS).close();
                throw new AssertionError("fetch below the start offset " + start + " must fail");
            } catch (ExecutionException e) {
                assertThat(e.getCause()).isInstanceOf(OffsetOutOfRangeException.class);
            }
        }
    }

    @AfterAll
    static void noLeaks() {
        LeakCheck.assertNoLeaks();
    }
}
