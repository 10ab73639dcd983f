package io.s3stream.internal.engine;

import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.internal.compaction.LeakChecker;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.StreamRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SIGKILL during key compaction: a forked JVM key-compacts one stream in a loop (its format asks for a rewrite of
 * everything every round, so every round rewrites) over file:// objects and the default manifest, and is killed at
 * random points. After reopening, a reader from the start sees the latest value of every key at its offset, the
 * stream's committed ranges are contiguous with no overlap, and once the killed runs' outputs have expired the bucket
 * holds exactly the live objects.
 */
class KeyCompactionCrashTest {

    @TempDir
    Path dir;

    static StorageConfig config(Path dir) {
        return StorageConfig.builder().nodeId(1).dataDir(dir)
                .wal("mem://key-compaction-crash-" + ProcessHandle.current().pid() + "?capacity=64MiB")
                .objectStore(dir.resolve("objects").toUri() + "?minPartSizeBytes=65536")
                .logCacheBytes(8L << 20).uploadThresholdBytes(1L << 20).maxBatchBytes(64 * 1024).objectBlockSizeBytes(16 * 1024)
                .streamObjectThresholdBytes(64 * 1024).streamObjectTargetBytes(256 * 1024)
                .compactionEnabled(false).objectDeletionGracePeriod(Duration.ZERO)
                .compactionRunTimeout(Duration.ofSeconds(2)).compactionMemoryBytes(1L << 20)
                .keyCompactionMapBytes(64 * 1024)
                .build();
    }

    /** A format whose compacted data is always due for another rewrite: every round rewrites the whole stream. */
    static final class AlwaysRewrite extends KeyCompactionPropertyTest.TestFormat {
        @Override
        public long rewriteAgainAtMs() {
            return 0;
        }
    }

    /** Child: opens the stream at the given epoch and key-compacts it in a loop until killed. */
    public static void main(String[] args) throws Exception {
        StorageEngine engine = StorageEngine.start(config(Path.of(args[0])));
        Stream stream = engine.openStream(Long.parseLong(args[1]), Long.parseLong(args[2])).get(30, TimeUnit.SECONDS);
        stream.compactKeys(new AlwaysRewrite());
        System.out.println("STARTED");
        System.out.flush();
        for (int i = 0; ; i++) {
            engine.compactor().runNow();
            System.out.println("RUN " + i);
            System.out.flush();
        }
    }

    @Test
    void killedKeyCompactionLosesNothingDuplicatesNothingAndLeaksNothing() throws Exception {
        Random random = new Random();
        long seed = random.nextLong();
        random.setSeed(seed);
        TreeMap<Long, String[]> written = new TreeMap<>();
        long id;
        try (StorageEngine engine = StorageEngine.start(config(dir))) {
            Stream stream = engine.createStream(StreamOptions.defaults()).get();
            id = stream.streamId();
            for (int round = 0; round < 12; round++) {
                for (int b = 0; b < 20; b++) {
                    List<String[]> records = new ArrayList<>();
                    int n = 1 + random.nextInt(200);
                    for (int i = 0; i < n; i++) {
                        records.add(new String[] {"k" + random.nextInt(3_000), "v" + random.nextInt(1_000_000)
                                + "x".repeat(random.nextInt(100))});
                    }
                    long base = stream.nextOffset();
                    stream.append(RecordBatch.of(n, KeyCompactionPropertyTest.TestFormat.encode(base, records)))
                            .get(10, TimeUnit.SECONDS);
                    for (int i = 0; i < n; i++) {
                        written.put(base + i, records.get(i));
                    }
                }
                engine.flush().get(30, TimeUnit.SECONDS);
            }
            stream.close().get(30, TimeUnit.SECONDS);
        }
        int runsSeen = 0;
        for (int kill = 0; kill < 4; kill++) { // killed while indexing, writing outputs or committing
            runsSeen += CompactionCrashTest.runAndKill(KeyCompactionCrashTest.class, 100 + random.nextInt(600), seed,
                    dir.toString(), Long.toString(id), Integer.toString(kill + 1));
        }
        assertThat(runsSeen).as("the children compacted before they were killed (seed %d)", seed).isPositive();
        Thread.sleep(2_100); // outputs of killed runs: their prepared ids expire
        try (StorageEngine engine = StorageEngine.start(config(dir))) {
            Stream stream = engine.openStream(id, 10).get(30, TimeUnit.SECONDS);
            stream.compactKeys(new KeyCompactionPropertyTest.TestFormat());
            for (int i = 0; i < 3; i++) {
                assertThat(engine.compactor().runNow().lastError()).as("seed %d", seed).isNull();
            }
            List<Long> offsets = KeyCompactionPropertyTest.check(stream, written);
            assertThat(offsets.size()).as("seed %d: only latest records left", seed)
                    .isEqualTo(written.values().stream().map(r -> r[0]).distinct().count());
            long next = stream.startOffset();
            for (ObjectMetadata o : engine.metadataStore().getObjects(id, stream.startOffset(), stream.confirmedOffset(),
                    10_000).get()) {
                StreamRange r = o.rangeOf(id).orElseThrow();
                assertThat(r.startOffset()).as("contiguous, no overlap (seed %d)", seed).isEqualTo(next);
                next = r.endOffset();
            }
            assertThat(next).isEqualTo(stream.confirmedOffset());
            LeakChecker.Report report = LeakChecker.check(engine.objectStorage().backend(), engine.metadataStore());
            assertThat(report.exact()).as("%s (seed %d, %d runs seen before kills)", report, seed, runsSeen).isTrue();
        }
    }
}
