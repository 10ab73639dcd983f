package io.s3stream.internal.engine;

import io.s3stream.FetchResult;
import io.s3stream.StorageConfig;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.internal.compaction.Compactor;
import io.s3stream.kafka.shell.log.KafkaKeyCompaction;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.RecordBatch;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * Main-method benchmark (not a test) of key compaction on Kafka record batches, through the shell's own
 * {@link KafkaKeyCompaction}: one stream on {@code file://} holds {@code records} Kafka records (100-byte values,
 * batches of 100, uncompressed) over {@code keys} distinct keys written in random order; the benchmark times one
 * compaction of everything (index and rewrite passes) and a cold read of the whole stream before and after.
 *
 * <p>With {@code perTxn > 0} the records are written as a Kafka Streams changelog under exactly-once would hold them:
 * transactions of {@code perTxn} records (one transactional batch) each followed by its commit marker, and the topic's
 * {@code delete.retention.ms} is 0, so a marker whose transaction has no record left goes in the same compaction.
 *
 * <p>Prints the input bytes (stream objects before), output bytes after the compaction and after the next run (which
 * rewrites everything again, as every run does, merging the first run's batches), seconds, input MB/s, the passes the
 * key map needed and its memory, and the records and markers left. Usage: {@code java -Xmx2g -cp benchmarks/target/benchmarks.jar
 * io.s3stream.internal.engine.KeyCompactionBenchmark [records=5000000] [keys=1000000] [mapMiB=32] [dir] [perTxn=0]}.
 */
public final class KeyCompactionBenchmark {
    private static final long PRODUCER = 1;

    private KeyCompactionBenchmark() {
    }

    static StorageConfig config(Path dir, long mapBytes) {
        return StorageConfig.builder().nodeId(1).dataDir(dir).wal("mem://key-compaction-bench?capacity=512MiB")
                .objectStore(dir.resolve("objects").toUri().toString())
                .logCacheBytes(256L << 20).uploadThresholdBytes(64L << 20).uploadInterval(Duration.ofSeconds(1))
                .compactionEnabled(false).objectDeletionGracePeriod(Duration.ZERO)
                .compactionBytesPerSecond(1L << 40).keyCompactionMapBytes(mapBytes)
                .build();
    }

    public static void main(String[] args) throws Exception {
        long records = args.length > 0 ? Long.parseLong(args[0]) : 5_000_000;
        int keys = args.length > 1 ? Integer.parseInt(args[1]) : 1_000_000;
        long mapBytes = (args.length > 2 ? Long.parseLong(args[2]) : 32) << 20;
        Path dir = args.length > 3 && !args[3].equals("-") ? Path.of(args[3])
                : Files.createTempDirectory("key-compaction-bench");
        int perTxn = args.length > 4 ? Integer.parseInt(args[4]) : 0;
        Random random = new Random(42);
        byte[] value = new byte[100];
        long id;
        try (StorageEngine engine = StorageEngine.start(config(dir, mapBytes))) {
            Stream stream = engine.createStream(StreamOptions.defaults()).get();
            id = stream.streamId();
            ByteBuffer buffer = ByteBuffer.allocate(64 * 1024);
            for (long written = 0; written < records; ) {
                buffer.clear();
                long base = stream.nextOffset();
                int n = (int) Math.min(perTxn > 0 ? perTxn : 100, records - written);
                MemoryRecordsBuilder b = perTxn > 0
                        ? MemoryRecords.builder(buffer, RecordBatch.CURRENT_MAGIC_VALUE, Compression.NONE,
                                TimestampType.CREATE_TIME, base, -1, PRODUCER, (short) 0, (int) written, true,
                                RecordBatch.NO_PARTITION_LEADER_EPOCH)
                        : MemoryRecords.builder(buffer, Compression.NONE, TimestampType.CREATE_TIME, base);
                for (int i = 0; i < n; i++) {
                    random.nextBytes(value);
                    b.append(System.currentTimeMillis(), ("key-" + random.nextInt(keys)).getBytes(StandardCharsets.UTF_8),
                            value);
                }
                ByteBuffer batch = b.build().buffer();
                stream.append(io.s3stream.RecordBatch.of(n, batch)).get(30, TimeUnit.SECONDS);
                written += n;
                if (perTxn > 0) {
                    stream.append(io.s3stream.RecordBatch.of(1, MemoryRecords.withEndTransactionMarker(
                            stream.nextOffset(), System.currentTimeMillis(), 0, PRODUCER, (short) 0,
                            new EndTransactionMarker(ControlRecordType.COMMIT, 0)).buffer())).get(30, TimeUnit.SECONDS);
                }
            }
            stream.close().get(5, TimeUnit.MINUTES);
        }
        Map<String, String> topic = Map.of("cleanup.policy", "compact", "min.cleanable.dirty.ratio", "0",
                "delete.retention.ms", perTxn > 0 ? "0" : "86400000");
        KafkaKeyCompaction compaction = new KafkaKeyCompaction(
                () -> new KafkaKeyCompaction.Transactions(Long.MAX_VALUE, List.of(), Long.MAX_VALUE), () -> topic,
                System::currentTimeMillis);
        try (StorageEngine engine = StorageEngine.start(config(dir, mapBytes))) {
            Stream stream = engine.openStream(id, 1).get(30, TimeUnit.SECONDS);
            engine.compactor().runNow(); // uploads' stream set objects into stream objects (no key compaction yet)
            long before = streamBytes(engine);
            double readBefore = readAllSeconds(stream);
            stream.compactKeys(compaction);
            long start = System.nanoTime();
            Compactor.Stats stats = null;
            int rounds = 0;
            long lastRuns = -1;
            // One round runs one pass; a map smaller than the keys needs several.
            while (true) {
                stats = engine.compactor().runNow();
                rounds++;
                if (stats.lastError() != null) {
                    throw new IllegalStateException(stats.lastError());
                }
                if (stats.keyCompactionRuns() == lastRuns) {
                    break;
                }
                lastRuns = stats.keyCompactionRuns();
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            long after = streamBytes(engine);
            double readAfter = readAllSeconds(stream);
            // The next run of this stream rewrites it all again from its oldest object (on new data): do one now, by
            // forgetting the run's checkpoint, to see what that run leaves (it merges the first run's small batches).
            engine.metadataStore().deleteKv("s3stream/key-compaction/" + id).join();
            Compactor.Stats again = engine.compactor().runNow();
            if (again.lastError() != null || again.keyCompactionRuns() != stats.keyCompactionRuns() + 1) {
                throw new IllegalStateException("the second run did not run: " + again.lastError());
            }
            long afterAgain = streamBytes(engine);
            long left = 0;
            long markers = 0;
            for (long at = stream.startOffset(); at < stream.confirmedOffset(); ) {
                try (FetchResult r = stream.fetch(at, stream.confirmedOffset(), 1 << 20).get(1, TimeUnit.MINUTES)) {
                    for (StoredBatch sb : r.batches()) {
                        for (MutableRecordBatch kb : MemoryRecords.readableRecords(sb.payload().duplicate()).batches()) {
                            if (kb.isControlBatch()) {
                                markers += kb.countOrNull();
                            } else {
                                left += kb.countOrNull();
                            }
                        }
                    }
                    at = r.batches().getLast().endOffset();
                }
            }
            System.out.printf("records %,d keys %,d map %d MiB (%,d keys per pass)%n", records, keys, mapBytes >> 20,
                    (long) (mapBytes / 24 * 0.9));
            System.out.printf("stream objects before %.1f MiB, after %.1f MiB, after the next run %.2f MiB; records left"
                    + " %,d, markers left %,d%n", before / 1048576.0, after / 1048576.0, afterAgain / 1048576.0, left,
                    markers);
            System.out.printf("key compaction: %d passes, %.2f s, %.1f MB/s of input (%.1f MiB read in the rewrite "
                    + "pass, %.1f MiB written)%n", stats.keyCompactionRuns(), seconds, before / 1e6 / seconds,
                    stats.keyCompactionBytesIn() / 1048576.0, stats.keyCompactionBytesOut() / 1048576.0);
            System.out.printf("cold read of the whole stream: before %.2f s, after %.2f s%n", readBefore, readAfter);
        }
    }

    private static long streamBytes(StorageEngine engine) {
        return engine.metadataStore().listObjects(ObjectState.COMMITTED).join().stream()
                .mapToLong(ObjectMetadata::sizeBytes).sum();
    }

    /** Reads every batch of the stream from objects, in 1 MiB fetches; returns seconds. */
    private static double readAllSeconds(Stream stream) throws Exception {
        long start = System.nanoTime();
        long at = stream.startOffset();
        while (at < stream.confirmedOffset()) {
            try (FetchResult r = stream.fetch(at, stream.confirmedOffset(), 1 << 20).get(1, TimeUnit.MINUTES)) {
                at = r.batches().getLast().endOffset();
            }
        }
        return (System.nanoTime() - start) / 1e9;
    }
}
