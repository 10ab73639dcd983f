package io.s3stream.examples;

import io.s3stream.AppendResult;
import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StorageMetrics;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * s3stream on S3 (or MinIO) with the settings a production embedding would choose: the object store and the manifest
 * in one bucket, a WAL file on local disk, uploads of 32 MiB or every 10 s, and the engine's cost counters at the end.
 * It writes 1,000 batches of 1 KiB, closes (uploading the rest), reopens as the same node and reads everything back
 * from S3. Needs the artifact {@code io.s3stream:s3stream-store-s3} for {@code s3://}.
 *
 * <pre>
 * bin/example S3Example 's3://bucket/prefix?endpoint=http://127.0.0.1:9000&amp;region=us-east-1&amp;accessKey=…&amp;secretKey=…'
 * bin/example S3Example 's3://bucket/prefix?region=eu-west-1'         (AWS: credentials from the default chain)
 * </pre>
 */
public final class S3Example {
    private S3Example() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: S3Example s3://bucket/prefix?region=…[&endpoint=…&accessKey=…&secretKey=…] [dataDir]");
            System.exit(2);
        }
        String objectStore = args[0];
        Path dataDir = Path.of(args.length > 1 ? args[1] : "data/s3-example").toAbsolutePath();
        StorageConfig config = StorageConfig.builder()
                .nodeId(1)                                   // unique among the nodes sharing the bucket
                .dataDir(dataDir)                            // the WAL file: blockdev://<dataDir>/wal.img
                .objectStore(objectStore)                    // data objects
                // .metadata(...) left out: the manifest lives in the same bucket, under <prefix>/manifest/
                .uploadThresholdBytes(32L << 20)             // fewer, larger objects: fewer PUTs per GiB
                .uploadInterval(Duration.ofSeconds(10))      // and no data older than 10 s only in the WAL
                .build();

        long streamId;
        long end;
        try (StreamStorage storage = StreamStorage.open(config)) {
            Stream stream = storage.createStream(StreamOptions.defaults()).get();
            streamId = stream.streamId();
            List<CompletableFuture<AppendResult>> acks = new ArrayList<>();
            byte[] payload = new byte[1024];
            for (int i = 0; i < 1000; i++) {
                ByteBuffer b = ByteBuffer.allocate(payload.length).put(payload).putInt(0, i).flip();
                acks.add(stream.append(RecordBatch.of(1, b)));
            }
            CompletableFuture.allOf(acks.toArray(CompletableFuture[]::new)).join();
            end = stream.confirmedOffset();
            System.out.printf("appended 1000 batches to stream %d (durable in the WAL)%n", streamId);
        } // close: the log cache is uploaded to the bucket

        try (StreamStorage storage = StreamStorage.open(config)) {
            Stream stream = storage.openStream(streamId, 1).get();
            long next = stream.startOffset();
            int read = 0;
            while (next < end) {
                try (FetchResult r = stream.fetch(next, end, 1 << 20).get()) {
                    for (StoredBatch b : r.batches()) {
                        if (b.payload().getInt(b.payload().position()) != read) {
                            throw new IllegalStateException("batch " + read + " came back wrong");
                        }
                        read++;
                        next = b.endOffset();
                    }
                }
            }
            StorageMetrics.ObjectStore cost = storage.metrics().objectStore();
            System.out.printf("read %d batches back from %s; object-store requests of this run: %s%n", read,
                    objectStore.replaceAll("\\?.*", ""), cost.requests());
            stream.destroy().get();
        }
    }
}
