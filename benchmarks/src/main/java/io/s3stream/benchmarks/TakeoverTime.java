package io.s3stream.benchmarks;

import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.TakeoverResult;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Takeover time of a shared WAL with a given amount of acknowledged, not yet uploaded data: from the owner's death
 * (SIGKILL) to every one of its streams writable on the survivor.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.s3stream.benchmarks.TakeoverTime \
 *     ownerWal='fsx:///mnt/a/wal?capacity=512MiB' survivorWal='fsx:///mnt/b/wal?capacity=512MiB' \
 *     store=file:///var/tmp/takeover-objects mib=256 streams=16
 * </pre>
 * The owner (a child JVM, node 1) appends {@code mib} MiB in 64 KiB batches with uploads held back (threshold above
 * that size), prints {@code DONE} and waits; the survivor (this JVM, node 2, already running) kills it with SIGKILL,
 * calls {@code takeOverNode(1)}, then opens every stream at a higher epoch and appends one batch to each. Prints one
 * {@code key=value} line with the takeover's own breakdown.
 */
public final class TakeoverTime {
    private TakeoverTime() {
    }

    private static StorageConfig config(long nodeId, Path dataDir, String wal, String store, long mib) {
        long bytes = mib << 20;
        return StorageConfig.builder().nodeId(nodeId).dataDir(dataDir).wal(wal).objectStore(store)
                .uploadThresholdBytes(bytes + (64L << 20)).uploadInterval(Duration.ofHours(1))
                .logCacheBytes(2 * bytes + (256L << 20)).blockCacheBytes(64L << 20).compactionEnabled(false)
                .backpressureTimeout(Duration.ofMinutes(2)).costLogInterval(Duration.ZERO).build();
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        long mib = Long.parseLong(a.getOrDefault("mib", "256"));
        int streams = Integer.parseInt(a.getOrDefault("streams", "16"));
        String store = a.get("store");
        if (a.containsKey("owner")) {
            runOwner(a.get("ownerWal"), store, mib, streams);
            return;
        }
        String javaBin = ProcessHandle.current().info().command().orElseThrow();
        long direct = 2 * (mib << 20) + (512L << 20);
        Process owner = new ProcessBuilder(javaBin, "--enable-native-access=ALL-UNNAMED", "-Xmx1g",
                "-XX:MaxDirectMemorySize=" + direct, "-cp", System.getProperty("java.class.path"),
                TakeoverTime.class.getName(), "owner=1", "ownerWal=" + a.get("ownerWal"), "store=" + store,
                "mib=" + mib, "streams=" + streams).redirectErrorStream(true).start();
        var out = new BufferedReader(new InputStreamReader(owner.getInputStream()));
        String line;
        List<Long> ids = null;
        StringBuilder log = new StringBuilder();
        while ((line = out.readLine()) != null) {
            if (line.startsWith("DONE ")) {
                ids = Arrays.stream(line.substring(5).split(",")).map(Long::parseLong).toList();
                break;
            }
            log.append(line).append('\n');
        }
        if (ids == null) {
            throw new IllegalStateException("the owner did not finish:\n" + log);
        }
        Path survivorDir = Files.createTempDirectory("takeover-survivor-");
        try (StreamStorage survivor = StreamStorage.open(config(2, survivorDir, a.get("survivorWal"), store, 64))) {
            owner.destroyForcibly(); // SIGKILL
            owner.waitFor();
            long died = System.nanoTime();
            TakeoverResult taken = survivor.takeOverNode(1).get(10, TimeUnit.MINUTES);
            long takenOver = System.nanoTime();
            byte[] payload = new byte[1024];
            for (long id : ids) {
                Stream s = survivor.openStream(id, 1).get(1, TimeUnit.MINUTES);
                s.append(RecordBatch.of(1, ByteBuffer.wrap(payload))).get(1, TimeUnit.MINUTES);
            }
            long writable = System.nanoTime();
            System.out.printf(Locale.ROOT, "mib=%d streams=%d takeover_ms=%d open_and_append_ms=%d total_ms=%d "
                            + "fence_ms=%d recover_and_commit_ms=%d release_ms=%d wal_records=%d wal_bytes=%d%n", mib,
                    streams, (takenOver - died) / 1_000_000, (writable - takenOver) / 1_000_000,
                    (writable - died) / 1_000_000, taken.fenceMillis(), taken.recoverMillis(), taken.releaseMillis(),
                    taken.walRecords(), taken.walBytes());
        }
    }

    private static void runOwner(String wal, String store, long mib, int streams) throws Exception {
        Path dir = Files.createTempDirectory("takeover-owner-");
        StreamStorage storage = StreamStorage.open(config(1, dir, wal, store, mib));
        List<Stream> opened = new ArrayList<>();
        for (int i = 0; i < streams; i++) {
            opened.add(storage.createStream(StreamOptions.defaults()).get(1, TimeUnit.MINUTES));
        }
        byte[] payload = new byte[64 * 1024];
        new Random(3).nextBytes(payload);
        Semaphore window = new Semaphore(64);
        List<CompletableFuture<?>> all = new ArrayList<>();
        for (long sent = 0, i = 0; sent < mib << 20; sent += payload.length, i++) {
            window.acquire();
            all.add(opened.get((int) (i % streams)).append(RecordBatch.of(1, ByteBuffer.wrap(payload)))
                    .whenComplete((r, e) -> window.release()));
        }
        CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(10, TimeUnit.MINUTES);
        if (storage.metrics().uploads().objects() + storage.metrics().uploads().adoptedObjects() > 0) {
            System.out.println("warning: the owner uploaded before it was killed");
        }
        System.out.println("DONE " + String.join(",", opened.stream().map(s -> Long.toString(s.streamId())).toList()));
        Thread.sleep(Long.MAX_VALUE);
    }
}
