package io.s3stream.examples;

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
import java.util.concurrent.CompletionException;

/**
 * The stateless move: a stream written on node 1 is handed to node 2, which reads everything node 1 wrote and goes on
 * appending, with no data copied between them. Both nodes share one object store (and the manifest in it); each has
 * its own WAL. The move is {@code close} on the old node (its log cache is uploaded) and {@code openStream} with a
 * higher epoch on the new one. Node 1's closed handle refuses appends; and the higher epoch fences any older writer
 * that did not close (a paused or partitioned node): its data can no longer be committed to the stream.
 *
 * <p>The two nodes run in one process here for brevity; in a real system they are two processes on two machines with
 * the same {@code objectStore} URI ({@code s3://bucket/prefix} for example) and different {@code nodeId}s.
 *
 * <p>Run it with {@code bin/example StreamHandoff [workDir] [objectStoreUri]}.
 */
public final class StreamHandoff {
    private StreamHandoff() {
    }

    public static void main(String[] args) throws Exception {
        Path work = Path.of(args.length > 0 ? args[0] : "data/handoff").toAbsolutePath();
        String objects = args.length > 1 ? args[1] : work.resolve("shared-objects").toUri().toString();
        try (StreamStorage node1 = StreamStorage.open(node(1, work, objects));
             StreamStorage node2 = StreamStorage.open(node(2, work, objects))) {
            Stream onNode1 = node1.createStream(StreamOptions.defaults()).get();
            long id = onNode1.streamId();
            for (int i = 0; i < 5; i++) {
                onNode1.append(batch("written on node 1: " + i)).get();
            }
            System.out.printf("node 1 wrote stream %d up to offset %d (epoch %d)%n", id, onNode1.confirmedOffset(),
                    onNode1.epoch());

            long started = System.nanoTime();
            onNode1.close().get();                                             // uploads what only node 1 had
            Stream onNode2 = node2.openStream(id, onNode1.epoch() + 1).get();  // fences every older writer
            System.out.printf("moved to node 2 in %.1f ms; it holds [%d, %d) at epoch %d%n",
                    (System.nanoTime() - started) / 1e6, onNode2.startOffset(), onNode2.confirmedOffset(),
                    onNode2.epoch());

            for (int i = 0; i < 5; i++) {
                onNode2.append(batch("written on node 2: " + i)).get();
            }
            String zombie;
            try {
                onNode1.append(batch("a zombie write")).join();
                zombie = null;
            } catch (RuntimeException e) { // a failed future, or a refusal at once
                Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
                zombie = cause.getClass().getSimpleName() + ": " + cause.getMessage();
            }
            if (zombie == null) {
                throw new IllegalStateException("node 1's old handle accepted an append after the move");
            }
            System.out.println("node 1's old (closed) handle refuses appends: " + zombie);
            long next = onNode2.startOffset();
            while (next < onNode2.confirmedOffset()) {
                try (FetchResult r = onNode2.fetch(next, onNode2.confirmedOffset(), 64 * 1024).get()) {
                    for (StoredBatch b : r.batches()) {
                        System.out.printf("  offset %d: %s%n", b.baseOffset(), StandardCharsets.UTF_8.decode(b.payload()));
                        next = b.endOffset();
                    }
                }
            }
            onNode2.destroy().get();
        }
    }

    private static StorageConfig node(long nodeId, Path work, String objectStore) {
        return StorageConfig.builder()
                .nodeId(nodeId)
                .dataDir(work.resolve("node-" + nodeId))   // this node's WAL file lives here
                .objectStore(objectStore)                   // shared: the data and the manifest
                .build();
    }

    private static RecordBatch batch(String text) {
        return RecordBatch.of(1, ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
    }
}
