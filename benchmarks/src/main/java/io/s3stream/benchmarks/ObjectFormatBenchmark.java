package io.s3stream.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.internal.format.DecodedBatch;
import io.s3stream.internal.format.IndexEntry;
import io.s3stream.internal.format.ObjectBuilder;
import io.s3stream.internal.format.ObjectIndex;
import io.s3stream.internal.format.ObjectReader;
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

import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Object format v1 ({@code io.s3stream.internal.format}): encoding a stream set object as an upload does, decoding
 * footer and index as a first read of an object does, decoding (with CRC32C check) one data block as a block-cache
 * miss does, and {@link ObjectIndex#find} as every read from an object does.
 *
 * <p>The object holds {@code streams} streams of 4 KiB batches, {@value #OBJECT_BYTES} bytes in all, in 512 KiB
 * data blocks (the engine's default {@code objectBlockSizeBytes}). {@code encode} is one whole object per op:
 * MB/s = ops/s × 8.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar ObjectFormatBenchmark -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g", "-XX:MaxDirectMemorySize=1g"})
public class ObjectFormatBenchmark {
    static final int OBJECT_BYTES = 8 << 20;
    static final int BATCH_BYTES = 4096;
    static final int BLOCK_BYTES = 512 << 10;

    /** 1: a stream object's shape; 64: a stream set object of a node with many partitions. */
    @Param({"1", "64"})
    int streams;

    private ByteBuf batch;
    private ByteBuf object;
    private ObjectReader reader;
    private List<IndexEntry> entries;
    private long batchesPerStream;
    private final SplittableRandom random = new SplittableRandom(42);

    @Setup(Level.Trial)
    public void setUp() {
        batch = PooledByteBufAllocator.DEFAULT.directBuffer(BATCH_BYTES);
        byte[] bytes = new byte[BATCH_BYTES];
        new SplittableRandom(1).nextBytes(bytes);
        batch.writeBytes(bytes);
        batchesPerStream = OBJECT_BYTES / BATCH_BYTES / streams;
        object = build();
        reader = ObjectReader.of(object, "bench");
        entries = reader.index().entries();
    }

    private ByteBuf build() {
        try (ObjectBuilder builder = new ObjectBuilder(PooledByteBufAllocator.DEFAULT, BLOCK_BYTES)) {
            for (long s = 0; s < streams; s++) {
                for (long i = 0; i < batchesPerStream; i++) {
                    // 10 records per batch, as a Kafka batch of small records would have.
                    builder.add(s, i * 10, 10, batch);
                }
            }
            return builder.build();
        }
    }

    /** Builds a whole 8 MiB object (blocks, CRCs, index, footer). */
    @Benchmark
    public int encode() {
        ByteBuf built = build();
        try {
            return built.readableBytes();
        } finally {
            built.release();
        }
    }

    /** Decodes and checks footer and index: what happens once per object read. */
    @Benchmark
    public ObjectIndex decodeIndex() {
        return ObjectReader.of(object, "bench").index();
    }

    /** Decodes one random 512 KiB data block, verifying its CRC32C: what a block-cache miss costs in CPU. */
    @Benchmark
    public void decodeBlock(Blackhole bh) {
        List<DecodedBatch> batches = reader.readBlock(entries.get(random.nextInt(entries.size())));
        bh.consume(batches.size());
    }

    /** Finds the blocks covering 64 KiB of a random stream at a random offset. */
    @Benchmark
    public List<IndexEntry> indexFind() {
        long stream = random.nextInt(streams);
        long offset = random.nextLong(batchesPerStream) * 10;
        return reader.index().find(stream, offset, offset + 160, 64 << 10);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        object.release();
        batch.release();
    }
}
