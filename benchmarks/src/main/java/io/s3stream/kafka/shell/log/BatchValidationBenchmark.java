package io.s3stream.kafka.shell.log;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.RecordBatch;
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
import org.openjdk.jmh.annotations.Warmup;

import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * kafka-shell's validation of one partition's records in a Produce request ({@link ProduceValidator}, exactly what
 * the broker runs before an append): magic, size, CRC32C of the whole batch, count, timestamps, then every record read
 * as a consumer reads it. One op validates one batch of {@code records} records with 1 KiB values that compress about
 * 2:1 (128 × 1 KiB ≈ the perf producer's {@code batch.size=131072}), uncompressed or compressed with the codec a
 * producer chose, in direct memory (as in the broker) or on the heap; MB/s = ops/s × records × 1 KiB. A white-box benchmark: it lives in the package it measures, which kafka-shell's
 * module does not export.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar BatchValidationBenchmark -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx512m"})
public class BatchValidationBenchmark {
    @Param({"1", "16", "128"})
    int records;

    /** Where the batch lives: "direct" as in the broker (a slice of the request frame's direct buffer), or "heap". */
    @Param({"direct", "heap"})
    String memory;

    /** The producer's {@code compression.type}: "none", or a codec the broker must decompress to read the records. */
    @Param({"none", "lz4", "zstd", "gzip", "snappy"})
    String codec;

    private MemoryRecords batch;

    @Setup(Level.Trial)
    public void setUp() {
        // Random letters of a 16-letter alphabet: values that compress about 2:1, like text.
        byte[] value = new byte[1024];
        SplittableRandom random = new SplittableRandom(9);
        for (int i = 0; i < value.length; i++) {
            value[i] = (byte) ('a' + random.nextInt(16));
        }
        ByteBuffer buffer = ByteBuffer.allocate(records * 1100 + 1024);
        long now = System.currentTimeMillis();
        MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, RecordBatch.CURRENT_MAGIC_VALUE,
                Compression.of(codec).build(),
                TimestampType.CREATE_TIME, 0L, now, 12345L, (short) 0, 0, false, RecordBatch.NO_PARTITION_LEADER_EPOCH);
        for (int i = 0; i < records; i++) {
            builder.append(now, null, value);
        }
        MemoryRecords built = builder.build();
        if (memory.equals("direct")) {
            ByteBuffer direct = ByteBuffer.allocateDirect(built.sizeInBytes());
            direct.put(built.buffer().duplicate()).flip();
            batch = MemoryRecords.readableRecords(direct);
        } else {
            batch = built;
        }
        ProduceValidator.Result r = validate();
        if (!r.valid()) {
            throw new IllegalStateException("benchmark batch is invalid: " + r);
        }
    }

    private ProduceValidator.Result validate() {
        // The topic defaults: max.message.bytes 1048588, CreateTime, timestamps unbounded.
        return ProduceValidator.validate(batch, 1048588, false, Long.MAX_VALUE, Long.MAX_VALUE,
                System.currentTimeMillis());
    }

    @Benchmark
    public ProduceValidator.Result validateBatch() {
        return validate();
    }
}
