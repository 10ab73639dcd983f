package io.s3stream.benchmarks;

import io.s3stream.AppendResult;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * The engine's append → log cache → upload pipeline (fetches are in {@link FetchPathBenchmark}), with the
 * in-memory WAL (no device cost: this measures the engine) and either the in-memory object store or a {@code file://}
 * store on tmpfs.
 *
 * <p>{@code append} keeps {@value #WINDOW} appends in flight, as a broker with many producers does, and waits for the
 * window before the next one; uploads of 32 MiB blocks run concurrently on the uploader thread, so the steady state
 * includes upload, WAL trim and log-cache eviction. Throughput in MB/s = ops/s × batch size.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar AppendPipelineBenchmark -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xmx6g", "-XX:MaxDirectMemorySize=3g"})
public class AppendPipelineBenchmark {
    static final int WINDOW = 64;

    @Param({"4096"})
    int batchBytes;

    /** {@code mem}: the in-memory object store; {@code shm}: a file:// store on /dev/shm. */
    @Param({"mem", "shm"})
    String store;

    private StreamStorage storage;
    private Stream stream;
    private ByteBuffer payload;
    private Path dataDir;
    @SuppressWarnings("unchecked")
    private final CompletableFuture<AppendResult>[] window = new CompletableFuture[WINDOW];

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        String name = "bench-" + UUID.randomUUID();
        dataDir = BenchSupport.memoryDir("s3stream-bench");
        String objects = store.equals("mem") ? "mem://" + name : dataDir.resolve("objects").toUri().toString();
        storage = StreamStorage.open(StorageConfig.builder()
                .nodeId(1)
                .dataDir(dataDir)
                .wal("mem://" + name + "?capacity=1GiB")
                .objectStore(objects)
                .metadata("mem://" + name)
                .logCacheBytes(512L << 20)
                .blockCacheBytes(256L << 20)
                .uploadThresholdBytes(32L << 20)
                .uploadInterval(Duration.ofSeconds(10))
                .backpressureTimeout(Duration.ofSeconds(30))
                // Bounded like a real deployment: each iteration's data is trimmed, and the compactor deletes the
                // trimmed objects at once (the mem store keeps objects on the heap; the shm store in memory too).
                .compactionInterval(Duration.ofSeconds(1))
                .objectDeletionGracePeriod(Duration.ZERO)
                .build());
        stream = storage.createStream(StreamOptions.defaults()).get();
        byte[] bytes = new byte[batchBytes];
        ThreadLocalRandom.current().nextBytes(bytes);
        payload = ByteBuffer.allocateDirect(batchBytes).put(bytes).flip();
        // Past the first uploads before measuring, so the steady state includes upload, WAL trim and eviction.
        long prefill = BenchSupport.SMOKE ? 0 : 96L << 20;
        for (long i = 0; i < prefill / batchBytes; i++) {
            stream.append(RecordBatch.of(1, payload.duplicate()));
        }
        stream.append(RecordBatch.of(1, payload.duplicate())).get();
    }

    @Benchmark
    @OperationsPerInvocation(WINDOW)
    public long append() {
        RecordBatch batch = RecordBatch.of(1, payload);
        for (int i = 0; i < WINDOW; i++) {
            window[i] = stream.append(batch);
        }
        long last = 0;
        for (int i = 0; i < WINDOW; i++) {
            last = window[i].join().baseOffset();
        }
        return last;
    }

    /** Trims what the iteration wrote, so that objects are deleted and the store does not grow without bound. */
    @TearDown(Level.Iteration)
    public void trimIteration() throws Exception {
        stream.trim(stream.confirmedOffset()).get();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        storage.close();
        BenchSupport.deleteRecursively(dataDir);
    }
}
