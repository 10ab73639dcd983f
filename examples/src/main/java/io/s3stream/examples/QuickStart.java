package io.s3stream.examples;

import io.s3stream.AppendResult;
import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The smallest complete embedding of s3stream: create a stream, append, read back, restart the engine, read again.
 *
 * <p>Storage is the embedded default: a preallocated WAL file ({@code blockdev://<dataDir>/wal.img}) and a local-file
 * object store ({@code <dataDir>/objects}). Switching to S3 is one setting: {@code .objectStore("s3://bucket/prefix")}.
 *
 * <p>Run it with {@code bin/quickstart [dataDir]}.
 */
public final class QuickStart {
    private QuickStart() {
    }

    public static void main(String[] args) throws Exception {
        Path dataDir = Path.of(args.length > 0 ? args[0] : "data/quickstart").toAbsolutePath();
        StorageConfig config = StorageConfig.builder()
                .nodeId(1)
                .dataDir(dataDir)
                .build();

        long streamId;
        long end;
        try (StreamStorage storage = StreamStorage.open(config)) {
            Stream stream = storage.createStream(StreamOptions.defaults()).get();
            streamId = stream.streamId();
            System.out.printf("created stream %d in %s%n", streamId, dataDir);

            // Appends are pipelined: each future completes once its batch is durable in the WAL, in offset order.
            List<CompletableFuture<AppendResult>> acks = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                String records = "event-" + i + "a,event-" + i + "b";
                acks.add(stream.append(RecordBatch.of(2, ByteBuffer.wrap(records.getBytes(StandardCharsets.UTF_8)))));
            }
            CompletableFuture.allOf(acks.toArray(CompletableFuture[]::new)).join();
            end = stream.confirmedOffset();
            System.out.printf("appended 10 batches (20 records); durable up to offset %d%n", end);

            printAll("read back", stream, end);
        } // close() uploads the log cache into objects and closes the stream

        try (StreamStorage storage = StreamStorage.open(config)) {
            Stream stream = storage.openStream(streamId, 1).get(); // a new epoch fences any older writer
            System.out.printf("after restart: stream %d holds [%d, %d)%n", streamId, stream.startOffset(),
                    stream.confirmedOffset());
            printAll("read again", stream, end);
            stream.destroy().get();
        }
    }

    private static void printAll(String label, Stream stream, long end) {
        long next = stream.startOffset();
        while (next < end) {
            try (FetchResult result = stream.fetch(next, end, 64 * 1024).join()) {
                for (StoredBatch batch : result.batches()) {
                    String text = StandardCharsets.UTF_8.decode(batch.payload()).toString();
                    System.out.printf("  %s: offsets [%d, %d) %s%n", label, batch.baseOffset(), batch.endOffset(), text);
                    next = batch.endOffset();
                }
            }
        }
    }
}
