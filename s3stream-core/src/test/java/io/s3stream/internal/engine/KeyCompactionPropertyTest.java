package io.s3stream.internal.engine;

import io.s3stream.FetchResult;
import io.s3stream.KeyCompaction;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.internal.compaction.Compactor;
import io.s3stream.internal.compaction.LeakChecker;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.testing.EngineFixture;
import io.s3stream.testing.LeakCheck;
import io.s3stream.testing.Seeds;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Key compaction under random puts and deletes by key, uploads, compaction rounds (with a key map small enough to
 * need several passes), trims and restarts. After every step a reader from the start sees, for each key, exactly its
 * latest value, at the offset it was written at, with offsets increasing; once everything is compacted, no superseded
 * record is left. The leak check stays clean.
 */
class KeyCompactionPropertyTest {
    static {
        LeakCheck.install();
    }

    /**
     * The test's record format, concatenable as {@link KeyCompaction} requires: each record is {@code offset (8) |
     * key length (2) | key | value length (4, -1 for a delete) | value}; a batch's payload is its records.
     */
    static class TestFormat implements KeyCompaction {
        final AtomicLong cleanableEnd = new AtomicLong(Long.MAX_VALUE);
        volatile double minDirtyRatio;

        @Override
        public long cleanableEndOffset() {
            return cleanableEnd.get();
        }

        @Override
        public double minDirtyRatio() {
            return minDirtyRatio;
        }

        @Override
        public Duration minCompactionLag() {
            return Duration.ZERO;
        }

        @Override
        public Duration maxCompactionLag() {
            return null;
        }

        @Override
        public void keys(long baseOffset, int count, ByteBuffer payload, KeyVisitor visitor) {
            forEach(payload, (offset, key, value, from, to) -> visitor.key(offset, key));
        }

        @Override
        public ByteBuffer rewrite(long baseOffset, int count, ByteBuffer payload, LatestFilter latest) {
            ByteBuffer out = ByteBuffer.allocate(payload.remaining());
            forEach(payload, (offset, key, value, from, to) -> {
                if (latest.isLatest(offset, key)) {
                    out.put(payload.slice(from, to - from));
                }
            });
            return out.flip();
        }

        interface RecordVisitor {
            void record(long offset, ByteBuffer key, ByteBuffer value, int from, int to);
        }

        static void forEach(ByteBuffer payload, RecordVisitor v) {
            int at = payload.position();
            while (at < payload.limit()) {
                int from = at;
                long offset = payload.getLong(at);
                int keyLength = payload.getShort(at + 8);
                ByteBuffer key = payload.slice(at + 10, keyLength);
                at += 10 + keyLength;
                int valueLength = payload.getInt(at);
                at += 4;
                ByteBuffer value = valueLength < 0 ? null : payload.slice(at, valueLength);
                at += Math.max(0, valueLength);
                v.record(offset, key, value, from, at);
            }
        }

        static ByteBuffer encode(long baseOffset, List<String[]> records) {
            ByteBuffer b = ByteBuffer.allocate(records.stream().mapToInt(r -> 14 + r[0].length()
                    + (r[1] == null ? 0 : r[1].length())).sum());
            long offset = baseOffset;
            for (String[] r : records) {
                b.putLong(offset++).putShort((short) r[0].length()).put(r[0].getBytes(StandardCharsets.US_ASCII));
                if (r[1] == null) {
                    b.putInt(-1);
                } else {
                    b.putInt(r[1].length()).put(r[1].getBytes(StandardCharsets.US_ASCII));
                }
            }
            return b.flip();
        }
    }

    sealed interface Op permits Put, Upload, Compact, Trim, Restart {
    }

    /** A batch of {@code count} records over the first {@code keySpace} keys; a share of them are deletes. */
    record Put(int count, int keySpace, long seed) implements Op {
    }

    record Upload() implements Op {
    }

    record Compact(double dirtyRatio, boolean limitCleanable) implements Op {
    }

    record Trim(double position) implements Op {
    }

    record Restart() implements Op {
    }

    static LongStream seeds() {
        return Seeds.of(20);
    }

    static List<Op> ops(Random r) {
        int n = 15 + r.nextInt(40);
        int keySpace = r.nextBoolean() ? 1 + r.nextInt(40) : 1_000 + r.nextInt(6_000);
        List<Op> ops = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int k = r.nextInt(20);
            ops.add(k < 9 ? new Put(1 + r.nextInt(r.nextBoolean() ? 10 : 2_000), keySpace, r.nextLong())
                    : k < 13 ? new Upload()
                    : k < 18 ? new Compact(r.nextInt(3) == 0 ? 0.5 : 0, r.nextInt(4) == 0)
                    : k == 18 ? new Trim(r.nextDouble() * 0.3) : new Restart());
        }
        return ops;
    }

    private static UnaryOperator<StorageConfig.Builder> config(String store) {
        return b -> b.objectStore(store).compactionEnabled(false).objectDeletionGracePeriod(Duration.ofSeconds(60))
                .streamObjectThresholdBytes(64 * 1024).streamObjectTargetBytes(256 * 1024)
                .compactionMaxAge(Duration.ofMinutes(1)).compactionMemoryBytes(2L << 20)
                .objectBlockSizeBytes(16 * 1024).keyCompactionMapBytes(64 * 1024);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void readersSeeTheLatestValueOfEveryKey(long seed) throws Exception {
        List<Op> ops = ops(new Random(seed));
        AtomicLong nanos = new AtomicLong();
        try (EngineFixture fixture = new EngineFixture()) {
            UnaryOperator<StorageConfig.Builder> config = config(fixture.objectStoreUri() + "?minPartSizeBytes=65536");
            StorageEngine engine = EngineHooks.engine(fixture.open(1, config, nanos::get));
            TestFormat format = new TestFormat();
            Stream stream = engine.createStream(StreamOptions.defaults()).get();
            stream.compactKeys(format);
            // Every record ever written, by offset: key and value (null for a delete).
            TreeMap<Long, String[]> written = new TreeMap<>();
            long epoch = 0;
            for (Op op : ops) {
                switch (op) {
                    case Put p -> {
                        Random r = new Random(p.seed());
                        List<String[]> records = new ArrayList<>();
                        for (int i = 0; i < p.count(); i++) {
                            String key = "k" + r.nextInt(p.keySpace());
                            records.add(new String[] {key, r.nextInt(8) == 0 ? null : "v" + r.nextInt(1_000_000)});
                        }
                        long base = stream.nextOffset();
                        long got = stream.append(RecordBatch.of(records.size(), TestFormat.encode(base, records)))
                                .get(10, TimeUnit.SECONDS).baseOffset();
                        assertThat(got).isEqualTo(base);
                        for (int i = 0; i < records.size(); i++) {
                            written.put(base + i, records.get(i));
                        }
                    }
                    case Upload ignored -> engine.flush().get(30, TimeUnit.SECONDS);
                    case Compact c -> {
                        format.minDirtyRatio = c.dirtyRatio();
                        format.cleanableEnd.set(c.limitCleanable()
                                ? stream.startOffset() + (stream.confirmedOffset() - stream.startOffset()) / 2
                                : Long.MAX_VALUE);
                        Compactor.Stats stats = engine.compactor().runNow();
                        assertThat(stats.lastError()).isNull();
                    }
                    case Trim t -> {
                        long to = stream.startOffset() + (long) (t.position()
                                * (stream.confirmedOffset() - stream.startOffset()));
                        stream.trim(to).get(10, TimeUnit.SECONDS);
                        written.headMap(to).clear();
                    }
                    case Restart ignored -> {
                        engine.close();
                        engine = EngineHooks.engine(fixture.open(1, config, nanos::get));
                        stream = engine.openStream(stream.streamId(), ++epoch).get(10, TimeUnit.SECONDS);
                        stream.compactKeys(format);
                    }
                }
                check(stream, written);
                LeakChecker.Report report = LeakChecker.check(engine.objectStorage().backend(), engine.metadataStore());
                assertThat(report.clean()).as(report.toString()).isTrue();
            }
            // Everything into stream objects and compacted to the end: only the latest record of each key is left.
            // (After a restart, so that reads come from objects: the log cache keeps recent data as appended.)
            format.minDirtyRatio = 0;
            format.cleanableEnd.set(Long.MAX_VALUE);
            engine.close();
            engine = EngineHooks.engine(fixture.open(1, config, nanos::get));
            stream = engine.openStream(stream.streamId(), ++epoch).get(10, TimeUnit.SECONDS);
            stream.compactKeys(format);
            for (int i = 0; i < 8; i++) { // each pass indexes what the map holds
                assertThat(engine.compactor().runNow().lastError()).isNull();
            }
            List<Long> offsets = check(stream, written);
            Map<String, Long> latest = new HashMap<>();
            written.forEach((offset, r) -> latest.put(r[0], offset));
            long start = stream.startOffset();
            assertThat(offsets).containsExactlyElementsOf(latest.values().stream().filter(o -> o >= start).sorted()
                    .toList());
            for (int i = 0; i < 3; i++) {
                nanos.addAndGet(Duration.ofSeconds(61).toNanos());
                engine.compactor().runNow();
            }
            LeakChecker.Report report = LeakChecker.check(engine.objectStorage().backend(), engine.metadataStore());
            assertThat(report.exact()).as(report.toString()).isTrue();
            engine.close();
        }
    }

    /**
     * Reads the stream from its start; asserts offsets increase, every record read is the one written at its offset,
     * and the latest record of every key is there. Returns the offsets read.
     */
    static List<Long> check(Stream stream, TreeMap<Long, String[]> written) throws Exception {
        Map<String, Long> latest = new HashMap<>();
        written.forEach((offset, r) -> latest.put(r[0], offset));
        List<Long> offsets = new ArrayList<>();
        long at = stream.startOffset();
        long end = stream.confirmedOffset();
        while (at < end) {
            try (FetchResult fr = stream.fetch(at, end, 256 * 1024).get(10, TimeUnit.SECONDS)) {
                for (StoredBatch b : fr.batches()) {
                    long batchEnd = b.endOffset();
                    TestFormat.forEach(b.payload(), (offset, key, value, from, to) -> {
                        assertThat(offset).isBetween(b.baseOffset(), batchEnd - 1);
                        if (offset < stream.startOffset()) {
                            return;
                        }
                        assertThat(offsets.isEmpty() || offset > offsets.getLast()).as("offset order").isTrue();
                        String[] expected = written.get(offset);
                        assertThat(expected).as("record at " + offset).isNotNull();
                        assertThat(StandardCharsets.US_ASCII.decode(key).toString()).isEqualTo(expected[0]);
                        assertThat(value == null ? null : StandardCharsets.US_ASCII.decode(value).toString())
                                .isEqualTo(expected[1]);
                        offsets.add(offset);
                    });
                    at = batchEnd;
                }
            }
        }
        for (Map.Entry<String, Long> e : latest.entrySet()) {
            if (e.getValue() >= stream.startOffset()) {
                assertThat(offsets).as("latest record of " + e.getKey()).contains(e.getValue());
            }
        }
        return offsets;
    }

    @Test
    void aKeyMapTooSmallForTheDirtyKeysCompactsInSeveralPasses() throws Exception {
        try (EngineFixture fixture = new EngineFixture()) {
            StorageEngine engine = EngineHooks.engine(fixture.open(1,
                    config(fixture.objectStoreUri() + "?minPartSizeBytes=65536"), System::nanoTime));
            TestFormat format = new TestFormat();
            Stream stream = engine.createStream(StreamOptions.defaults()).get();
            stream.compactKeys(format);
            TreeMap<Long, String[]> written = new TreeMap<>();
            // 3 rounds over 6,000 keys: 18,000 records; the 64 KiB map holds 2,457 keys per pass.
            for (int round = 0; round < 3; round++) {
                for (int from = 0; from < 6_000; from += 500) {
                    List<String[]> records = new ArrayList<>();
                    for (int k = from; k < from + 500; k++) {
                        records.add(new String[] {"key-" + k, "round-" + round});
                    }
                    long base = stream.nextOffset();
                    stream.append(RecordBatch.of(records.size(), TestFormat.encode(base, records)))
                            .get(10, TimeUnit.SECONDS);
                    for (int i = 0; i < records.size(); i++) {
                        written.put(base + i, records.get(i));
                    }
                }
            }
            engine.close(); // uploads everything; reads after the restart come from objects
            engine = EngineHooks.engine(fixture.open(1, config(fixture.objectStoreUri() + "?minPartSizeBytes=65536"),
                    System::nanoTime));
            stream = engine.openStream(stream.streamId(), 1).get(10, TimeUnit.SECONDS);
            stream.compactKeys(format);
            long before = committedBytes(engine);
            int runs = 0;
            for (int i = 0; i < 10 && check(stream, written).size() > 6_000; i++) {
                Compactor.Stats stats = engine.compactor().runNow();
                assertThat(stats.lastError()).isNull();
                runs = (int) stats.keyCompactionRuns();
            }
            List<Long> offsets = check(stream, written);
            assertThat(offsets).hasSize(6_000).first().isEqualTo(12_000L);
            assertThat(runs).as("passes").isGreaterThan(1);
            long after = committedBytes(engine);
            assertThat(after).isLessThan(before / 2);
            engine.close();
        }
    }

    private static long committedBytes(StorageEngine engine) {
        return engine.metadataStore().listObjects(ObjectState.COMMITTED).join().stream()
                .mapToLong(ObjectMetadata::sizeBytes).sum();
    }

    @AfterAll
    static void noLeaks() {
        LeakCheck.assertNoLeaks();
    }
}
