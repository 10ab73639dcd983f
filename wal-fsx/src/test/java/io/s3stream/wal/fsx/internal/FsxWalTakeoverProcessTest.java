package io.s3stream.wal.fsx.internal;

import io.s3stream.FetchResult;
import io.s3stream.StorageConfig;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamStorage;
import io.s3stream.TakeoverResult;
import io.s3stream.testing.EngineCrashChild;
import io.s3stream.testing.LatencyFs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Takeover between two processes that see the WAL through two mounts of one latencyfs file system (1 ms per
 * operation), as two nodes sharing FSx. The owner ({@link EngineCrashChild}, node 1, {@code fsx://} on mount A)
 * appends to 12 streams and logs every acknowledged append; this JVM (node 2, mount B) takes it over after the owner
 * was either
 * <ul>
 *   <li>killed with SIGKILL: every append it acknowledged is readable on node 2; or</li>
 *   <li>paused with SIGSTOP mid-append, and resumed with SIGCONT after the takeover: every append it acknowledged,
 *       before or after the pause, is readable on node 2, and the resumed owner fails with an error that says it was
 *       fenced ({@code NodeFencedException}).</li>
 * </ul>
 */
class FsxWalTakeoverProcessTest {
    private static Path base;
    private static LatencyFs mountA;
    private static LatencyFs mountB;

    @BeforeAll
    static void mount() throws IOException {
        base = Files.createTempDirectory("fsx-takeover-");
        mountA = LatencyFs.mount(base.resolve("backing"), base.resolve("a"), "-latency", "1ms", "-meta-latency", "1ms");
        mountB = LatencyFs.mount(base.resolve("backing"), base.resolve("b"), "-latency", "1ms", "-meta-latency", "1ms");
    }

    @AfterAll
    static void unmount() throws IOException {
        if (mountA != null) {
            mountA.close();
        }
        if (mountB != null) {
            mountB.close();
        }
        FsxWalContractSupport.deleteRecursively(base);
    }

    @ParameterizedTest(name = "owner {0}")
    @ValueSource(strings = {"KILL", "STOP"})
    void anotherNodeRecoversEveryAcknowledgedAppend(String signal) throws Exception {
        long seed = System.nanoTime();
        String where = " (owner " + signal + ", seed " + seed + ")";
        String walDir = "wal-" + UUID.randomUUID();
        Files.createDirectories(mountA.mountPoint().resolve(walDir));
        String query = "?capacity=64MiB&segmentBytes=16MiB";
        String ownerWal = "fsx://" + mountA.mountPoint().resolve(walDir) + query;
        String survivorWal = "fsx://" + mountB.mountPoint().resolve(walDir) + query;
        Path owner = base.resolve("owner-" + walDir);
        Files.createDirectories(owner.resolve("logs"));
        Path status = owner.resolve("logs/status.txt");
        Path acks = owner.resolve("logs/acks.log");
        Path stderr = owner.resolve("logs/stderr.txt");
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process child = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx256m",
                "-XX:MaxDirectMemorySize=256m", "-cp", System.getProperty("java.class.path"),
                EngineCrashChild.class.getName(), owner.toString(), "0", Long.toString(seed), status.toString(),
                acks.toString(), "12", "3", Long.toString(4L << 20), Long.toString(4L << 20), "1000", ownerWal)
                .redirectErrorStream(true).redirectOutput(stderr.toFile()).start();
        try {
            waitFor(status, "READY", child, stderr);
            Thread.sleep(1_500);
            signal(child, signal);
            if (signal.equals("KILL")) {
                child.waitFor(30, TimeUnit.SECONDS);
            }
            long ackedAtSignal = lines(acks).size();

            StreamStorage survivor = StreamStorage.open(StorageConfig.builder().nodeId(2)
                    .dataDir(owner.resolve("survivor")).wal(survivorWal)
                    .objectStore(owner.resolve("objects").toUri().toString())
                    .logCacheBytes(32L << 20).blockCacheBytes(16L << 20).uploadThresholdBytes(4L << 20)
                    .maxBatchBytes(64 << 10).backpressureTimeout(Duration.ofSeconds(30)).compactionEnabled(false)
                    .build());
            try {
                TakeoverResult taken = survivor.takeOverNode(1).get(120, TimeUnit.SECONDS);
                assertThat(taken.streamsReleased()).as("streams released" + where).isEqualTo(12);

                if (signal.equals("STOP")) {
                    signal(child, "CONT");
                    waitFor(status, "ERROR", child, stderr); // the resumed owner finds itself fenced
                    Thread.sleep(500);
                    child.destroyForcibly();
                    child.waitFor(30, TimeUnit.SECONDS);
                    assertThat(Files.readString(status)).as("the fenced owner says why its appends fail" + where)
                            .contains("NodeFencedException").contains("fenced");
                }

                Map<Long, TreeMap<Long, long[]>> acked = new HashMap<>(); // stream -> base -> {count, epoch}
                for (String line : lines(acks)) {
                    String[] f = line.split(" ");
                    acked.computeIfAbsent(Long.parseLong(f[0]), k -> new TreeMap<>())
                            .put(Long.parseLong(f[1]), new long[]{Long.parseLong(f[2]), Long.parseLong(f[3])});
                }
                long total = acked.values().stream().mapToLong(TreeMap::size).sum();
                assertThat(total).as("acknowledged appends" + where).isGreaterThan(100);
                System.out.println("fsx takeover (" + signal + "): " + ackedAtSignal + " acknowledged at the signal, "
                        + total + " in all; " + taken);

                String ids = new String(survivor.keyValues().get(EngineCrashChild.STREAMS_KEY).get(30, TimeUnit.SECONDS)
                        .orElseThrow(), StandardCharsets.UTF_8);
                for (String id : ids.split(",")) {
                    long streamId = Long.parseLong(id);
                    Stream s = survivor.openStream(streamId, 1).get(30, TimeUnit.SECONDS);
                    for (var e : acked.getOrDefault(streamId, new TreeMap<>()).entrySet()) {
                        long batchBase = e.getKey();
                        assertThat(s.confirmedOffset()).as("stream " + streamId + " holds acknowledged " + batchBase
                                + where).isGreaterThanOrEqualTo(batchBase + e.getValue()[0]);
                        try (FetchResult r = s.fetch(batchBase, batchBase + 1, 1).get(30, TimeUnit.SECONDS)) {
                            StoredBatch b = r.batches().getFirst();
                            byte[] bytes = new byte[b.payload().remaining()];
                            b.payload().get(bytes);
                            assertThat(b.baseOffset()).isEqualTo(batchBase);
                            assertThat(bytes).as("stream " + streamId + " batch " + batchBase + where)
                                    .isEqualTo(EngineCrashChild.payload(seed, streamId, batchBase, e.getValue()[1]));
                        }
                    }
                }
            } finally {
                survivor.close();
            }
        } finally {
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
        }
    }

    private static void signal(Process p, String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).inheritIO().start();
        assertThat(kill.waitFor()).as("kill -" + signal).isZero();
    }

    private static void waitFor(Path status, String text, Process child, Path stderr) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!(Files.exists(status) && Files.readString(status).contains(text))) {
            if (System.nanoTime() > deadline || !child.isAlive() && !text.equals("ERROR")) {
                throw new AssertionError("the owner did not report " + text + "; its log:\n"
                        + (Files.exists(stderr) ? Files.readString(stderr) : ""));
            }
            Thread.sleep(5);
        }
    }

    private static List<String> lines(Path file) throws Exception {
        if (!Files.exists(file)) {
            return List.of();
        }
        String text = Files.readString(file);
        int end = text.lastIndexOf('\n');
        return end < 0 ? List.of() : new ArrayList<>(List.of(text.substring(0, end).split("\n")));
    }
}
