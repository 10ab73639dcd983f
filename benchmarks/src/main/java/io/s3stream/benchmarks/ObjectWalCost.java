package io.s3stream.benchmarks;

import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StorageMetrics;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Object-store requests and bytes per GiB ingested through the engine with {@code objectwal}, from the engine's own
 * counters ({@link StorageMetrics.ObjectStore}: WAL objects, uploads, manifest commits and checkpoints all counted).
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.s3stream.benchmarks.ObjectWalCost \
 *     store='s3://bench/cost?endpoint=http://127.0.0.1:29000&amp;region=us-east-1&amp;pathStyle=true' \
 *     gib=2 batchBytes=8MiB upload=256MiB streams=16 batch=64KiB
 * </pre>
 * Steady state only: counters are read after the streams exist and again after the last append was acknowledged and
 * every upload round that the ingest triggered has been committed; the fixed costs of opening and closing (the first
 * checkpoint, closing streams) are reported separately. Prints one {@code key=value} line.
 */
public final class ObjectWalCost {
    private ObjectWalCost() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        String store = a.getOrDefault("store", "file://" + Files.createTempDirectory("objectwal-cost-"));
        double gib = Double.parseDouble(a.getOrDefault("gib", "1"));
        String batchBytes = a.getOrDefault("batchBytes", "8MiB");
        String upload = a.getOrDefault("upload", "256MiB");
        int streams = Integer.parseInt(a.getOrDefault("streams", "16"));
        int batch = (int) io.s3stream.ByteSize.parse("batch", a.getOrDefault("batch", "64KiB"));
        long uploadBytes = io.s3stream.ByteSize.parse("upload", upload);
        Path dir = Files.createTempDirectory("objectwal-cost-data-");
        StorageConfig config = StorageConfig.builder().nodeId(1).dataDir(dir).objectStore(store)
                .wal("objectwal://?batchMs=50&batchBytes=" + batchBytes + "&capacity=4GiB")
                .uploadThresholdBytes(uploadBytes).uploadInterval(Duration.ofMinutes(10))
                .logCacheBytes(2 * uploadBytes + (64L << 20)).compactionEnabled(false)
                .backpressureTimeout(Duration.ofMinutes(2)).costLogInterval(Duration.ZERO).build();
        long total = (long) (gib * (1L << 30));
        byte[] payload = new byte[batch];
        new Random(7).nextBytes(payload);
        try (StreamStorage storage = StreamStorage.open(config)) {
            List<Stream> opened = new ArrayList<>();
            for (int i = 0; i < streams; i++) {
                opened.add(storage.createStream(StreamOptions.defaults()).get(1, TimeUnit.MINUTES));
            }
            StorageMetrics before = storage.metrics();
            Semaphore window = new Semaphore(256);
            List<CompletableFuture<?>> pending = new ArrayList<>();
            long started = System.nanoTime();
            long appended = 0;
            for (long i = 0; appended < total; i++) {
                window.acquire();
                CompletableFuture<?> f = opened.get((int) (i % streams))
                        .append(RecordBatch.of(1, ByteBuffer.wrap(payload)))
                        .whenComplete((r, e) -> window.release());
                pending.add(f);
                appended += batch;
                if (pending.size() > 4096) {
                    CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).get(5, TimeUnit.MINUTES);
                    pending.clear();
                }
            }
            CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).get(5, TimeUnit.MINUTES);
            double seconds = (System.nanoTime() - started) / 1e9;
            // Let every upload round the ingest filled complete (the remainder is uploaded at close: fixed cost).
            long rounds = appended / uploadBytes;
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
            StorageMetrics after;
            do {
                Thread.sleep(200);
                after = storage.metrics();
            } while (after.uploads().objects() + after.uploads().adoptedObjects()
                    - before.uploads().objects() - before.uploads().adoptedObjects() < rounds
                    && System.nanoTime() < deadline);
            Thread.sleep(2_000);
            after = storage.metrics();
            double ingestedGiB = appended / (double) (1L << 30);
            Map<String, Long> delta = new HashMap<>();
            after.objectStore().requests().forEach((k, v) -> delta.put(k, v - before.objectStore().requests()
                    .getOrDefault(k, 0L)));
            long writes = new StorageMetrics.ObjectStore(delta, 0, 0, 0).writeRequests();
            long bytesOut = after.objectStore().bytesOut() - before.objectStore().bytesOut();
            System.out.printf(Locale.ROOT, "store=%s gib=%.2f batchBytes=%s upload=%s streams=%d batch=%d "
                            + "ingest_mib_s=%.0f write_requests=%d write_requests_per_gib=%.1f bytes_out_per_byte=%.3f "
                            + "adopted_objects=%d uploaded_objects=%d requests=%s%n", store, ingestedGiB, batchBytes,
                    upload, streams, batch, appended / seconds / (1 << 20), writes, writes / ingestedGiB,
                    bytesOut / (double) appended,
                    after.uploads().adoptedObjects() - before.uploads().adoptedObjects(),
                    after.uploads().objects() - before.uploads().objects(), delta);
            for (Stream s : opened) {
                s.close().get(1, TimeUnit.MINUTES);
            }
        }
    }
}
