package io.s3stream.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.cache.BlockCache;
import io.s3stream.cache.BlockKey;
import org.openjdk.jmh.annotations.AuxCounters;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * {@link BlockCache} get/put under a skewed (Zipf) key distribution, as catch-up and tail readers of many partitions
 * produce: {@value #KEYS} distinct 64 KiB blocks (256 MiB) over a 64 MiB cache, keys drawn with Zipf exponent
 * {@code skew}, so hot blocks stay and the tail churns.
 *
 * <ul>
 *   <li>{@code getOrLoad}: {@link BlockCache#get(BlockKey, Function)} with a loader that returns a fresh pooled block at
 *       once (no IO): the read path's cache cost including insertion and eviction on a miss.</li>
 *   <li>{@code getIfPresentOrPut}: {@link BlockCache#getIfPresent} then {@link BlockCache#put} on a miss, as read-ahead
 *       fills the cache.</li>
 * </ul>
 * The hit ratio of each iteration is reported as the {@code hits}/{@code misses} auxiliary counters.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar BlockCacheBenchmark -prof gc
 * </pre>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g", "-XX:MaxDirectMemorySize=1g"})
public class BlockCacheBenchmark {
    static final int KEYS = 4096;
    static final int BLOCK_BYTES = 64 << 10;
    static final int SAMPLES = 1 << 20;

    @State(Scope.Benchmark)
    public static class Cache {
        /** Zipf exponent: 0.8 mildly skewed, 1.2 strongly skewed. */
        @Param({"0.8", "1.2"})
        double skew;

        BlockCache cache;
        /** Pre-drawn key indexes, so drawing costs nothing in the measurement. */
        int[] samples;

        @Setup(Level.Trial)
        public void setUp() {
            cache = BlockCache.create(64L << 20);
            samples = zipf(KEYS, skew, SAMPLES, new SplittableRandom(7));
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            cache.close();
        }
    }

    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Cursor {
        int next = new SplittableRandom().nextInt(SAMPLES);
        public long hits;
        public long misses;
        /** Counts its own calls: a call is a miss this thread loads. */
        final Function<BlockKey, CompletableFuture<ByteBuf>> loader = k -> {
            misses++;
            return CompletableFuture.completedFuture(block());
        };

        @Setup(Level.Iteration)
        public void reset() {
            hits = 0;
            misses = 0;
        }

        BlockKey key(Cache c) {
            int k = c.samples[next];
            next = (next + 1) & (SAMPLES - 1);
            // Spread blocks over objects as the engine's keys are: 64 blocks per object.
            return new BlockKey(k >>> 6, (long) (k & 63) * BLOCK_BYTES);
        }
    }

    static ByteBuf block() {
        ByteBuf b = PooledByteBufAllocator.DEFAULT.directBuffer(BLOCK_BYTES, BLOCK_BYTES);
        return b.writerIndex(BLOCK_BYTES);
    }

    /** Inverse-CDF sampling of a Zipf distribution over ranks 0..n-1, shuffled so hot keys are not adjacent. */
    static int[] zipf(int n, double s, int count, SplittableRandom random) {
        double[] cdf = new double[n];
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += 1 / Math.pow(i + 1, s);
            cdf[i] = sum;
        }
        int[] permutation = new int[n];
        for (int i = 0; i < n; i++) {
            permutation[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = permutation[i];
            permutation[i] = permutation[j];
            permutation[j] = t;
        }
        int[] out = new int[count];
        for (int i = 0; i < count; i++) {
            double u = random.nextDouble() * sum;
            int lo = 0;
            int hi = n - 1;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (cdf[mid] < u) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            out[i] = permutation[lo];
        }
        return out;
    }

    static int getOrLoad(Cache c, Cursor cursor) {
        BlockKey key = cursor.key(c);
        long missesBefore = cursor.misses;
        ByteBuf b = c.cache.get(key, cursor.loader).join();
        if (cursor.misses == missesBefore) {
            cursor.hits++;
        }
        try {
            return b.readableBytes();
        } finally {
            b.release();
        }
    }

    static int getIfPresentOrPut(Cache c, Cursor cursor) {
        BlockKey key = cursor.key(c);
        ByteBuf hit = c.cache.getIfPresent(key);
        if (hit != null) {
            cursor.hits++;
            int n = hit.readableBytes();
            hit.release();
            return n;
        }
        cursor.misses++;
        c.cache.put(key, block());
        return 0;
    }

    @Benchmark
    @Threads(1)
    public int getOrLoad1(Cache c, Cursor cursor) {
        return getOrLoad(c, cursor);
    }

    @Benchmark
    @Threads(2)
    public int getOrLoad2(Cache c, Cursor cursor) {
        return getOrLoad(c, cursor);
    }

    @Benchmark
    @Threads(1)
    public int getIfPresentOrPut1(Cache c, Cursor cursor) {
        return getIfPresentOrPut(c, cursor);
    }

    @Benchmark
    @Threads(2)
    public int getIfPresentOrPut2(Cache c, Cursor cursor) {
        return getIfPresentOrPut(c, cursor);
    }
}
