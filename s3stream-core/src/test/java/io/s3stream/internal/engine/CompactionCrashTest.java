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

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SIGKILL during compaction: a forked JVM compacts (and deletes) in a loop over file:// objects and the default
 * manifest and is killed at random points; after reopening, every offset reads back byte for byte, each stream's
 * committed ranges are contiguous with no overlap (no duplicate range visible), and once the outputs of the killed
 * runs have expired the bucket holds exactly the live objects.
 */
class CompactionCrashTest {

    @TempDir
    Path dir;

    static StorageConfig config(Path dir) {
        return StorageConfig.builder().nodeId(1).dataDir(dir)
                .wal("mem://compaction-crash-" + ProcessHandle.current().pid() + "?capacity=64MiB")
                .objectStore(dir.resolve("objects").toUri() + "?minPartSizeBytes=65536")
                .logCacheBytes(8L << 20).uploadThresholdBytes(1L << 20).maxBatchBytes(64 * 1024).objectBlockSizeBytes(16 * 1024)
                .streamObjectThresholdBytes(128 * 1024).streamObjectTargetBytes(1L << 20)
                .compactionEnabled(false).objectDeletionGracePeriod(Duration.ZERO)
                .compactionRunTimeout(Duration.ofSeconds(2)).compactionMemoryBytes(1L << 20)
                .compactionMaxAge(Duration.ofSeconds(3))
                .build();
    }

    /** Child: compacts in a loop until killed. */
    public static void main(String[] args) {
        StorageEngine engine = StorageEngine.start(config(Path.of(args[0])));
        System.out.println("STARTED");
        System.out.flush();
        for (int i = 0; ; i++) {
            engine.compactor().runNow();
            System.out.println("RUN " + i);
            System.out.flush();
        }
    }

    /**
     * Starts {@code main} in a child JVM with {@code args}, waits for its {@code STARTED} line, lets it run for
     * {@code delayMs} while counting the lines it prints (one per finished run), then SIGKILLs it; returns the count.
     */
    static int runAndKill(Class<?> main, long delayMs, long seed, String... args) throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(args));
        Process child = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        int lines = 0;
        try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(),
                StandardCharsets.UTF_8))) {
            assertThat(out.readLine()).as("child started (seed %d)", seed).isEqualTo("STARTED");
            long deadline = System.nanoTime() + delayMs * 1_000_000;
            while (System.nanoTime() < deadline) {
                while (out.ready() && out.readLine() != null) {
                    lines++;
                }
                Thread.sleep(5);
            }
            child.destroyForcibly(); // SIGKILL, somewhere in a run or a deletion
        }
        assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
        return lines;
    }

    @Test
    void killedCompactionLosesNothingDuplicatesNothingAndLeaksNothing() throws Exception {
        Random random = new Random();
        long seed = random.nextLong();
        random.setSeed(seed);
        List<TreeMap<Long, byte[]>> model = new ArrayList<>();
        List<Long> ids = new ArrayList<>();
        try (StorageEngine engine = StorageEngine.start(config(dir))) {
            List<Stream> streams = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                streams.add(engine.createStream(StreamOptions.defaults()).get());
                ids.add(streams.getLast().streamId());
                model.add(new TreeMap<>());
            }
            for (int round = 0; round < 8; round++) {
                for (int i = 0; i < streams.size(); i++) {
                    int bytes = i < 2 ? 150_000 : 1 + random.nextInt(30_000);
                    while (bytes > 0) {
                        byte[] data = new byte[Math.min(bytes, 1 + random.nextInt(12_000))];
                        random.nextBytes(data);
                        long base = streams.get(i).append(RecordBatch.of(1 + random.nextInt(3), ByteBuffer.wrap(data)))
                                .get(10, TimeUnit.SECONDS).baseOffset();
                        model.get(i).put(base, data);
                        bytes -= data.length;
                    }
                }
                engine.flush().get(30, TimeUnit.SECONDS);
            }
            for (Stream s : streams) {
                s.close().get(30, TimeUnit.SECONDS);
            }
        }
        int runsSeen = 0;
        for (int kill = 0; kill < 4; kill++) {
            runsSeen += runAndKill(CompactionCrashTest.class, random.nextInt(400), seed, dir.toString());
        }
        Thread.sleep(2_100); // outputs of killed runs: their prepared ids expire
        try (StorageEngine engine = StorageEngine.start(config(dir))) {
            for (int i = 0; i < 3; i++) {
                assertThat(engine.compactor().runNow().lastError()).as("seed %d", seed).isNull();
            }
            List<Stream> streams = new ArrayList<>();
            for (long id : ids) {
                streams.add(engine.openStream(id, 1).get(10, TimeUnit.SECONDS));
            }
            StorageEngineCompactionTest.checkAll(streams, model);
            for (Stream s : streams) {
                List<ObjectMetadata> objects = engine.metadataStore()
                        .getObjects(s.streamId(), s.startOffset(), s.confirmedOffset(), 10_000).get();
                long next = s.startOffset();
                for (ObjectMetadata o : objects) {
                    StreamRange r = o.rangeOf(s.streamId()).orElseThrow();
                    assertThat(r.startOffset()).as("stream %d contiguous, no overlap (seed %d)", s.streamId(), seed)
                            .isEqualTo(next);
                    next = r.endOffset();
                }
                assertThat(next).isEqualTo(s.confirmedOffset());
            }
            LeakChecker.Report report = LeakChecker.check(engine.objectStorage().backend(), engine.metadataStore());
            assertThat(report.exact()).as("%s (seed %d, %d runs seen before kills)", report, seed, runsSeen).isTrue();
        }
    }
}
