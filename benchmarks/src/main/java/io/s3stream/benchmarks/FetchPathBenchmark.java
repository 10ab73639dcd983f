package io.s3stream.benchmarks;

import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StorageMetrics;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * {@link Stream#fetch} of 64 KiB (16 batches of 4 KiB) from each tier of the read path:
 * <ul>
 *   <li>{@code logCache}: the newest data, still in the log cache (a tail read: memory only);</li>
 *   <li>{@code blockCache}: data only in objects, whose blocks are all in the block cache (warmed by a full read);</li>
 *   <li>{@code objectMiss}: random reads over 256 MiB of objects with a 1 MiB block cache, so nearly every fetch is a
 *       ranged GET and a block decode. The object store is {@code file://} on tmpfs: this is the engine's CPU cost of a
 *       miss (GET, CRC check, decode, cache insertion), not a network's latency.</li>
 * </ul>
 * The in-memory WAL keeps device cost out. The teardown prints the block-cache hit/miss counts and GETs, so the tier
 * a run really exercised is visible next to its score.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar FetchPathBenchmark -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xmx1g", "-XX:MaxDirectMemorySize=2g"})
public class FetchPathBenchmark {
    static final int BATCH_BYTES = 4096;
    static final int BATCHES_PER_FETCH = 16;

    @Param({"logCache", "blockCache", "objectMiss"})
    String tier;

    private StreamStorage storage;
    private Stream stream;
    private Path dataDir;
    /** Fetches start in [low, high). */
    private long low;
    private long high;
    private final SplittableRandom random = new SplittableRandom(3);
    private StorageMetrics before;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        String name = "fetch-" + UUID.randomUUID();
        dataDir = BenchSupport.memoryDir("fetch-bench");
        long mib = 1L << 20;
        long logCache;
        long blockCache;
        long backlog;
        switch (tier) {
            case "logCache" -> {
                logCache = 512 * mib;
                blockCache = 16 * mib;
                backlog = 64 * mib;
            }
            case "blockCache" -> {
                logCache = 16 * mib;
                blockCache = 256 * mib;
                backlog = 96 * mib;
            }
            case "objectMiss" -> {
                logCache = 16 * mib;
                blockCache = mib;
                backlog = 256 * mib;
            }
            default -> throw new IllegalArgumentException("tier " + tier);
        }
        if (BenchSupport.SMOKE) {
            backlog = 32 * mib;
        }
        storage = StreamStorage.open(StorageConfig.builder()
                .nodeId(1)
                .dataDir(dataDir)
                .wal("mem://" + name + "?capacity=1GiB")
                .objectStore(dataDir.resolve("objects").toUri().toString())
                .metadata("mem://" + name)
                .logCacheBytes(logCache)
                .blockCacheBytes(blockCache)
                .uploadThresholdBytes(Math.min(32 * mib, logCache / 4))
                .maxBatchBytes(1 << 20)
                .uploadInterval(Duration.ofSeconds(60))
                .backpressureTimeout(Duration.ofSeconds(60))
                .build());
        stream = storage.createStream(StreamOptions.defaults()).get();
        byte[] bytes = new byte[BATCH_BYTES];
        new SplittableRandom(5).nextBytes(bytes);
        ByteBuffer payload = ByteBuffer.allocateDirect(BATCH_BYTES).put(bytes).flip();
        long batches = backlog / BATCH_BYTES;
        for (long i = 0; i < batches - 1; i++) {
            stream.append(RecordBatch.of(1, payload.duplicate()));
        }
        stream.append(RecordBatch.of(1, payload.duplicate())).get();
        long end = stream.confirmedOffset();
        if (tier.equals("logCache")) {
            // The newest 4 MiB: well inside the log cache.
            low = end - (4 * mib) / BATCH_BYTES;
            high = end - BATCHES_PER_FETCH;
        } else {
            // The oldest half: long evicted from a 16 MiB log cache.
            low = stream.startOffset();
            high = low + batches / 2 - BATCHES_PER_FETCH;
        }
        if (tier.equals("blockCache")) {
            for (long o = low; o < high + BATCHES_PER_FETCH; ) {
                try (FetchResult r = stream.fetch(o, high + BATCHES_PER_FETCH, 1 << 20).join()) {
                    o = r.batches().getLast().baseOffset() + r.batches().getLast().count();
                }
            }
        }
        before = storage.metrics();
    }

    @Benchmark
    public void fetch(Blackhole bh) {
        long offset = low + random.nextLong(high - low);
        try (FetchResult r = stream.fetch(offset, offset + BATCHES_PER_FETCH, BATCHES_PER_FETCH * BATCH_BYTES).join()) {
            bh.consume(r.batches().size());
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        StorageMetrics after = storage.metrics();
        System.out.printf(Locale.ROOT, "%n[%s] block cache hits %d, misses %d; object-store GETs %d%n", tier,
                after.blockCache().hits() - before.blockCache().hits(), after.blockCache().misses() - before.blockCache().misses(),
                after.objectStore().requests().getOrDefault("GET", 0L) - before.objectStore().requests().getOrDefault("GET", 0L));
        storage.close();
        BenchSupport.deleteRecursively(dataDir);
    }
}
