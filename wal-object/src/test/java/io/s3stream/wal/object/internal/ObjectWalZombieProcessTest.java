package io.s3stream.wal.object.internal;

import io.s3stream.FetchResult;
import io.s3stream.StorageConfig;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamStorage;
import io.s3stream.TakeoverResult;
import io.s3stream.internal.engine.EngineHooks;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.EngineCrashChild;
import io.s3stream.testing.TestStores;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A paused owner is taken over by another process, then resumed: two JVMs on one {@code file://} bucket. The owner
 * ({@link EngineCrashChild}, node 1, {@code objectwal}) appends to 12 streams and logs every acknowledged append; it is
 * stopped with SIGSTOP while appends are in flight; this JVM (node 2) calls {@link StreamStorage#takeOverNode}; the
 * owner is resumed with SIGCONT. Then:
 * <ul>
 *   <li>every append the owner acknowledged, before or after the pause, is readable on node 2 (nothing the owner
 *       acknowledges after the takeover is lost: it acknowledges only what the takeover recovered);</li>
 *   <li>the resumed owner fails its appends with a fencing error that says so ({@code NodeFencedException}).</li>
 * </ul>
 */
class ObjectWalZombieProcessTest {
    private static final String WAL = "objectwal://?batchMs=5&batchBytes=256KiB&maxInFlight=4&capacity=64MiB";

    @TempDir
    Path dir;

    @Test
    void aPausedOwnerIsTakenOverAndAcknowledgesNothingThatIsLost() throws Exception {
        long seed = System.nanoTime();
        String where = " (seed " + seed + ")";
        Path owner = dir.resolve("owner");
        Files.createDirectories(owner.resolve("logs"));
        Path status = owner.resolve("logs/status.txt");
        Path acks = owner.resolve("logs/acks.log");
        Path stderr = owner.resolve("logs/stderr.txt");
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process child = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx256m",
                "-XX:MaxDirectMemorySize=256m", "-cp", System.getProperty("java.class.path"),
                EngineCrashChild.class.getName(), owner.toString(), "0", Long.toString(seed), status.toString(),
                acks.toString(), "12", "3", Long.toString(4L << 20), Long.toString(4L << 20), "1000", WAL)
                .redirectErrorStream(true).redirectOutput(stderr.toFile()).start();
        try {
            waitFor(status, "READY", child, stderr);
            Thread.sleep(1_500);
            signal(child, "STOP");
            long ackedAtPause = lines(acks).size();

            StreamStorage survivor = StreamStorage.open(StorageConfig.builder().nodeId(2)
                    .dataDir(dir.resolve("survivor")).wal(WAL).objectStore(owner.resolve("objects").toUri().toString())
                    .logCacheBytes(32L << 20).blockCacheBytes(16L << 20).uploadThresholdBytes(4L << 20)
                    .maxBatchBytes(64 << 10)
                    .backpressureTimeout(Duration.ofSeconds(30)).compactionEnabled(false).build());
            try {
                TakeoverResult taken = survivor.takeOverNode(1).get(120, TimeUnit.SECONDS);
                assertThat(taken.streamsReleased()).as("streams released" + where).isEqualTo(12);

                signal(child, "CONT");
                waitFor(status, "ERROR", child, stderr); // the resumed owner finds itself fenced
                Thread.sleep(500);
                child.destroyForcibly();
                child.waitFor(30, TimeUnit.SECONDS);

                String statusText = Files.readString(status);
                assertThat(statusText).as("the fenced owner says why its appends fail" + where)
                        .contains("NodeFencedException").contains("fenced");

                Map<Long, TreeMap<Long, long[]>> acked = new HashMap<>(); // stream -> base -> {count, epoch}
                for (String line : lines(acks)) {
                    String[] f = line.split(" ");
                    acked.computeIfAbsent(Long.parseLong(f[0]), k -> new TreeMap<>())
                            .put(Long.parseLong(f[1]), new long[]{Long.parseLong(f[2]), Long.parseLong(f[3])});
                }
                long total = acked.values().stream().mapToLong(TreeMap::size).sum();
                assertThat(total).as("acknowledged appends" + where).isGreaterThan(100);
                System.out.println("zombie test: " + ackedAtPause + " acknowledged at the pause, " + total
                        + " in all; takeover " + taken);

                String ids = new String(survivor.keyValues().get(EngineCrashChild.STREAMS_KEY).get(30, TimeUnit.SECONDS)
                        .orElseThrow(), StandardCharsets.UTF_8);
                for (String id : ids.split(",")) {
                    long streamId = Long.parseLong(id);
                    Stream s = survivor.openStream(streamId, 1).get(30, TimeUnit.SECONDS);
                    for (var e : acked.getOrDefault(streamId, new TreeMap<>()).entrySet()) {
                        long base = e.getKey();
                        assertThat(s.confirmedOffset()).as("stream " + streamId + " holds acknowledged " + base + where)
                                .isGreaterThanOrEqualTo(base + e.getValue()[0]);
                        try (FetchResult r = s.fetch(base, base + 1, 1).get(30, TimeUnit.SECONDS)) {
                            StoredBatch b = r.batches().getFirst();
                            byte[] bytes = new byte[b.payload().remaining()];
                            b.payload().get(bytes);
                            assertThat(b.baseOffset()).isEqualTo(base);
                            assertThat(bytes).as("stream " + streamId + " batch " + base + where)
                                    .isEqualTo(EngineCrashChild.payload(seed, streamId, base, e.getValue()[1]));
                        }
                    }
                }
            } finally {
                survivor.close();
            }
            assertNoUnknownObjectBelowTheCommittedPosition(owner, where);
        } finally {
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * The owner's node opened again (the zombie is dead): every object of its log below the committed position is one
     * the manifest knows. Whatever the zombie created after the takeover's listing is gone.
     */
    private void assertNoUnknownObjectBelowTheCommittedPosition(Path owner, String where) {
        ObjectStore bucket = TestStores.open(owner.resolve("objects").toUri().toString());
        StreamStorage again = StreamStorage.open(StorageConfig.builder().nodeId(1)
                .dataDir(dir.resolve("owner-again")).wal(WAL).objectStore(owner.resolve("objects").toUri().toString())
                .logCacheBytes(32L << 20).blockCacheBytes(16L << 20).uploadThresholdBytes(4L << 20)
                .maxBatchBytes(64 << 10).compactionEnabled(false).build());
        try {
            MetadataStore metadata = EngineHooks.metadata(again);
            long committed = metadata.getNode(1).join().orElseThrow().walCommittedPosition();
            Set<String> known = new HashSet<>();
            for (ObjectMetadata o : metadata.listObjects(ObjectState.values()).join()) {
                known.add(o.key());
            }
            List<String> below = bucket.list("wal/1/").join().stream().map(ObjectInfo::key)
                    .filter(k -> WalObjectDescriptor.seqOf("wal/1/", k) >= 0)
                    .filter(k -> WalObjectDescriptor.seqOf("wal/1/", k) < WalObjectDescriptor.seqOfPosition(committed))
                    .toList();
            assertThat(below).as("objects below the committed position" + where).isNotEmpty();
            assertThat(known).as("the manifest knows every object below the committed position" + where)
                    .containsAll(below);
        } finally {
            again.close();
            bucket.close();
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
