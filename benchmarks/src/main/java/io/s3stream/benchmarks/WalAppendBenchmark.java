package io.s3stream.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.spi.WriteAheadLogProvider;
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

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ServiceLoader;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * WAL append through the SPI, per backend, record size, appender count and appends in flight per appender.
 *
 * <p>{@code mem} is the in-memory WAL (the engine's test backend: the cost of the SPI and the group-commit
 * bookkeeping, no device). {@code blockdev} is wal-blockdev on a preallocated file on the working disk
 * ({@code -Ds3stream.bench.dir}, default {@code java.io.tmpdir}) with {@code O_DIRECT|O_DSYNC}: every group commit
 * is a flush of the disk's volatile cache, so compare with {@code benchmarks/compare/fio.sh} run in the same session.
 * {@code fsx} (not in the default list: {@code -p backend=fsx}) is wal-fsx in {@code -Ds3stream.bench.dir}, meant to
 * be a shared mount (benchmarks/compare/wal-fsx.sh mounts latencyfs there).
 *
 * <p>One operation is one append acknowledged as durable. Each JMH thread is one appender keeping {@code window}
 * appends in flight (it waits for the oldest before issuing the next), so throughput = ops/s × record size and, with
 * {@code window=1}, the average time per op is the synchronous append latency through the future; {@code awaiting}
 * measures the same through {@code appendAndAwait}. The WAL is trimmed up to the highest
 * acknowledged position every 256 appends, as the engine does after uploads, so the ring never fills.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar WalAppendBenchmark -prof gc
 * java -jar benchmarks/target/benchmarks.jar 'WalAppendBenchmark.appenders4' -p backend=blockdev -p recordBytes=1024 -prof gc
 * </pre>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xmx1g", "-XX:MaxDirectMemorySize=1g"})
public class WalAppendBenchmark {

    @State(Scope.Benchmark)
    public static class Wal {
        @Param({"mem", "blockdev"})
        String backend;

        @Param({"1024", "4096", "65536"})
        int recordBytes;

        WriteAheadLog wal;
        ByteBuf record;
        final AtomicLong ackedNext = new AtomicLong();
        long awaited; // appends of the single-threaded awaiting benchmark
        private Path dir;

        @Setup(Level.Trial)
        public void setUp() {
            long capacity = BenchSupport.SMOKE ? 16L << 20 : 256L << 20;
            URI uri;
            if (backend.equals("mem")) {
                dir = BenchSupport.memoryDir("wal-bench");
                uri = URI.create("mem://wal-" + UUID.randomUUID() + "?capacity=" + capacity);
            } else if (backend.equals("fsx")) {
                // -Ds3stream.bench.dir=<a directory on the shared mount> (benchmarks/compare/wal-fsx.sh mounts one)
                dir = BenchSupport.diskDir("wal-bench");
                uri = URI.create("fsx://" + dir.toAbsolutePath().toUri().getRawPath() + "?capacity=" + capacity
                        + "&segmentBytes=" + capacity / 4);
            } else {
                dir = BenchSupport.diskDir("wal-bench");
                uri = URI.create("blockdev://" + dir.resolve("wal.img").toAbsolutePath().toUri().getRawPath()
                        + "?capacity=" + capacity);
            }
            WriteAheadLogProvider provider = ServiceLoader.load(WriteAheadLogProvider.class).stream()
                    .map(ServiceLoader.Provider::get).filter(p -> p.scheme().equals(uri.getScheme())).findFirst()
                    .orElseThrow(() -> new IllegalStateException("no WAL provider for " + uri));
            wal = provider.open(uri, new WalContext(1, System.currentTimeMillis(), dir, Duration.ofSeconds(30)));
            wal.recover((position, next, buf) -> buf.release());
            byte[] bytes = new byte[recordBytes];
            ThreadLocalRandom.current().nextBytes(bytes);
            record = PooledByteBufAllocator.DEFAULT.directBuffer(recordBytes).writeBytes(bytes);
        }

        void acked(WalAppendResult r) {
            ackedNext.accumulateAndGet(r.nextPosition(), Math::max);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            wal.close();
            record.release();
            BenchSupport.deleteRecursively(dir);
        }
    }

    /** One appender's in-flight window. */
    @State(Scope.Thread)
    public static class Appender {
        @Param({"1", "16"})
        int window;

        CompletableFuture<?>[] inFlight;
        int next;
        long count;

        @Setup(Level.Iteration)
        public void setUp() {
            inFlight = new CompletableFuture<?>[window];
            next = 0;
        }

        @TearDown(Level.Iteration)
        public void drain() {
            for (CompletableFuture<?> f : inFlight) {
                if (f != null) {
                    f.join();
                }
            }
        }
    }

    static Object append(Wal wal, Appender a) {
        CompletableFuture<?> oldest = a.inFlight[a.next];
        Object result = oldest == null ? null : oldest.join();
        // The WAL reads the record's readable bytes before completing and does not take ownership: share one buffer.
        a.inFlight[a.next] = wal.wal.append(wal.record).thenAccept(wal::acked);
        a.next = (a.next + 1) % a.inFlight.length;
        if (++a.count % 256 == 0) {
            wal.wal.trim(wal.ackedNext.get());
        }
        return result;
    }

    @Benchmark
    @Threads(1)
    public Object appenders1(Wal wal, Appender appender) {
        return append(wal, appender);
    }

    @Benchmark
    @Threads(4)
    public Object appenders4(Wal wal, Appender appender) {
        return append(wal, appender);
    }

    /**
     * One thread appending through {@link WriteAheadLog#appendAndAwait}: a writer at queue depth 1, like fio's psync
     * QD1 (wal-blockdev writes each record on this thread; {@code appenders1} with {@code window=1} waits on the
     * future instead, paying the hand-off to the WAL's thread and back).
     */
    @Benchmark
    @Threads(1)
    public WalAppendResult awaiting(Wal wal) {
        WalAppendResult result = wal.wal.appendAndAwait(wal.record);
        if (++wal.awaited % 256 == 0) {
            wal.wal.trim(result.nextPosition());
        }
        return result;
    }
}
