package io.s3stream.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StorageMetrics;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.store.s3.internal.S3ObjectStore;
import io.s3stream.testing.S3Server;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.services.s3.S3AsyncClient;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.function.LongSupplier;

/**
 * Throughput of the object-store path against MinIO on loopback (a benchmark, not a test: run it by hand, see
 * {@code s3stream-core/README.md}). Each figure is the median of three short runs, because the machine is shared:
 * <ol>
 *   <li>PUT of 8 MiB objects through {@link ObjectStorage} and {@link S3ObjectStore}, 4 in flight;</li>
 *   <li>the same with a bare AWS SDK {@code putObject} loop (the baseline of the engine's upload path);</li>
 *   <li>ranged GETs of 1 MiB blocks of one 64 MiB object, 32 requested at once with 4 slots, with and without read
 *       merging (and the GET requests each made);</li>
 *   <li>1 GiB appended through the engine ({@code StreamStorage}, in-memory WAL and metadata) until uploaded:
 *       throughput and requests per GiB.</li>
 * </ol>
 * A warm-up round of everything runs first and is not recorded. The bare SDK client is configured like
 * {@link S3ObjectStore}'s (checksums only where required) so that the comparison measures the layers, not the
 * checksum. Start with {@code S3STREAM_TEST_S3_ENDPOINT} set to use a running server; otherwise MinIO is started as for the tests.
 */
public final class ObjectStoreBenchmark {
    private static final int MIB = 1024 * 1024;
    private static final int PUT_OBJECTS = 24;
    private static final int PUT_CONCURRENCY = 4;

    private ObjectStoreBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int runs = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        long engineBytes = args.length > 1 ? Long.parseLong(args[1]) * MIB : 1024L * MIB;
        try (S3Server.Running server = S3Server.start(S3Server.Kind.MINIO)) {
            System.out.println("server: " + server.name() + ", runs: " + runs);
            byte[] object = new byte[8 * MIB];
            new Random(1).nextBytes(object);
            List<Double> sdk = new ArrayList<>();
            List<Double> layer = new ArrayList<>();
            List<Double> engine = new ArrayList<>();
            List<double[]> getsMerged = new ArrayList<>();
            List<double[]> getsPlain = new ArrayList<>();
            List<Map<String, Long>> engineRequests = new ArrayList<>();
            // Warm-up (JIT, connection pools, MinIO's caches): one round of everything, not recorded.
            bareSdkPut(server, object);
            layerPut(server, object);
            rangedGets(server, false);
            rangedGets(server, true);
            engineUpload(server, 256L * MIB, new ArrayList<>());
            for (int run = 0; run < runs; run++) {
                sdk.add(bareSdkPut(server, object));
                layer.add(layerPut(server, object));
                getsPlain.add(rangedGets(server, false));
                getsMerged.add(rangedGets(server, true));
                StorageMetrics m = engineUpload(server, engineBytes, engine);
                engineRequests.add(m.objectStore().requests());
                System.out.printf("run %d: sdk PUT %.0f MiB/s, ObjectStorage PUT %.0f MiB/s, GET plain %.0f MiB/s (%d GETs),"
                                + " GET merged %.0f MiB/s (%d GETs), engine %.0f MiB/s, requests %s (%.1f write req/GiB)%n",
                        run + 1, sdk.getLast(), layer.getLast(), getsPlain.getLast()[0], (long) getsPlain.getLast()[1],
                        getsMerged.getLast()[0], (long) getsMerged.getLast()[1], engine.getLast(), m.objectStore().requests(),
                        m.objectStore().writeRequestsPerGiB());
            }
            double sdkMedian = median(sdk);
            double engineMedian = median(engine);
            System.out.printf("%nmedians of %d runs:%n", runs);
            System.out.printf("  bare SDK PUT 8 MiB x%d, %d in flight:       %.0f MiB/s%n", PUT_OBJECTS, PUT_CONCURRENCY, sdkMedian);
            System.out.printf("  ObjectStorage PUT 8 MiB x%d, %d in flight:  %.0f MiB/s%n", PUT_OBJECTS, PUT_CONCURRENCY, median(layer));
            System.out.printf("  ranged GET 1 MiB x32, no merging:        %.0f MiB/s, %.0f GETs%n",
                    median(getsPlain.stream().map(a -> a[0]).toList()), median(getsPlain.stream().map(a -> a[1]).toList()));
            System.out.printf("  ranged GET 1 MiB x32, merging:           %.0f MiB/s, %.0f GETs%n",
                    median(getsMerged.stream().map(a -> a[0]).toList()), median(getsMerged.stream().map(a -> a[1]).toList()));
            System.out.printf("  engine upload of %d MiB:                 %.0f MiB/s = %.0f %% of the bare SDK loop%n",
                    engineBytes / MIB, engineMedian, 100 * engineMedian / sdkMedian);
            System.out.printf("  engine requests per run: %s%n", engineRequests);
        }
    }

    private static double bareSdkPut(S3Server.Running server, byte[] object) throws Exception {
        String prefix = "bench-sdk-" + UUID.randomUUID() + "/";
        try (S3AsyncClient client = server.client()) {
            Semaphore slots = new Semaphore(PUT_CONCURRENCY);
            List<CompletableFuture<?>> all = new ArrayList<>();
            long start = System.nanoTime();
            for (int i = 0; i < PUT_OBJECTS; i++) {
                slots.acquire();
                String key = prefix + i;
                all.add(client.putObject(r -> r.bucket(server.bucket()).key(key),
                        AsyncRequestBody.fromByteBufferUnsafe(ByteBuffer.wrap(object)))
                        .whenComplete((r, e) -> slots.release()));
            }
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
            return mibPerSecond((long) PUT_OBJECTS * object.length, start);
        }
    }

    private static double layerPut(S3Server.Running server, byte[] object) throws Exception {
        try (ObjectStorage storage = new ObjectStorage(S3ObjectStore.open(java.net.URI.create(
                server.uri("bench-layer-" + UUID.randomUUID()))), ObjectStorage.RetryPolicy.defaults(),
                ObjectStorage.Settings.defaults().withMaxInFlight(PUT_CONCURRENCY).withCostLogInterval(Duration.ZERO))) {
            ByteBuf data = Unpooled.wrappedBuffer(object);
            List<CompletableFuture<Void>> all = new ArrayList<>();
            long start = System.nanoTime();
            for (int i = 0; i < PUT_OBJECTS; i++) {
                all.add(storage.put("o" + i, data)); // the scheduler keeps 4 in flight
            }
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
            double result = mibPerSecond((long) PUT_OBJECTS * object.length, start);
            data.release();
            return result;
        }
    }

    /** {@code [MiB/s, GET requests]} for 32 adjacent 1 MiB reads requested at once through 4 slots. */
    private static double[] rangedGets(S3Server.Running server, boolean merge) {
        String uri = server.uri("bench-get-" + UUID.randomUUID());
        ObjectStorage.Settings settings = ObjectStorage.Settings.defaults().withMaxInFlight(4)
                .withCostLogInterval(Duration.ZERO);
        settings = merge ? settings.withMerging(256 * 1024, 8 * MIB) : settings.withMerging(-1, 0);
        try (ObjectStorage storage = new ObjectStorage(S3ObjectStore.open(java.net.URI.create(uri)),
                ObjectStorage.RetryPolicy.defaults(), settings)) {
            byte[] object = new byte[64 * MIB];
            new Random(2).nextBytes(object);
            ByteBuf data = Unpooled.wrappedBuffer(object);
            storage.put("big", data).join();
            data.release();
            long getsBefore = storage.requestCounts().get("GET");
            long start = System.nanoTime();
            List<CompletableFuture<ByteBuf>> reads = new ArrayList<>();
            for (int i = 0; i < 32; i++) {
                reads.add(storage.get("big", (long) i * 2 * MIB, MIB, ObjectStorage.Priority.CATCH_UP_READ));
                reads.add(storage.get("big", (long) i * 2 * MIB + MIB, MIB, ObjectStorage.Priority.CATCH_UP_READ));
            }
            long bytes = 0;
            for (int i = 0; i < reads.size(); i++) {
                ByteBuf b = reads.get(i).join();
                long position = (long) (i / 2) * 2 * MIB + (i % 2) * MIB;
                byte[] got = new byte[MIB];
                b.getBytes(b.readerIndex(), got);
                if (!Arrays.equals(got, Arrays.copyOfRange(object, (int) position, (int) position + MIB))) {
                    throw new AssertionError("wrong bytes at " + position);
                }
                bytes += b.readableBytes();
                b.release();
            }
            return new double[] {mibPerSecond(bytes, start), storage.requestCounts().get("GET") - getsBefore};
        }
    }

    private static StorageMetrics engineUpload(S3Server.Running server, long totalBytes, List<Double> out)
            throws Exception {
        Path dir = Files.createTempDirectory("s3stream-bench");
        String name = "bench-" + UUID.randomUUID();
        StorageConfig config = StorageConfig.builder().nodeId(1).dataDir(dir)
                .wal("mem://" + name + "?capacity=512MiB")
                .metadata("mem://" + name)
                .objectStore(server.uri("bench-engine-" + UUID.randomUUID()))
                .logCacheBytes(256L * MIB)
                .uploadThresholdBytes(32L * MIB)
                .costLogInterval(Duration.ZERO)
                .build();
        byte[] batch = new byte[MIB];
        new Random(3).nextBytes(batch);
        StorageMetrics metrics;
        LongSupplier now = System::nanoTime;
        try (StreamStorage storage = StreamStorage.open(config)) {
            List<Stream> streams = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                streams.add(storage.createStream(StreamOptions.defaults()).get());
            }
            long start = now.getAsLong();
            List<CompletableFuture<?>> pending = new ArrayList<>();
            for (long sent = 0; sent < totalBytes; sent += batch.length) {
                Stream s = streams.get((int) (sent / batch.length) % streams.size());
                pending.add(s.append(RecordBatch.of(1, ByteBuffer.wrap(batch))));
                if (pending.size() >= 64) {
                    pending.removeFirst().join();
                }
            }
            pending.forEach(CompletableFuture::join);
            for (Stream s : streams) {
                s.close().join(); // uploads what is left
            }
            out.add(mibPerSecond(totalBytes, start));
            metrics = storage.metrics();
        }
        return metrics;
    }

    private static double mibPerSecond(long bytes, long startNanos) {
        double seconds = (System.nanoTime() - startNanos) / 1e9;
        return bytes / (double) MIB / seconds;
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(Double::compare);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
