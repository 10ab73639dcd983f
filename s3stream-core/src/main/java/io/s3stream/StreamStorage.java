package io.s3stream;

import io.s3stream.internal.engine.StorageEngine;

import java.util.concurrent.CompletableFuture;

/**
 * The storage engine: durable append-only streams on a write-ahead log and an object store.
 *
 * <p>{@link #open(StorageConfig)} recovers the write-ahead log (uploading whatever it finds) before it returns, so
 * every append acknowledged before a crash is readable again. {@link #close()} uploads what the log cache holds and
 * releases the WAL, the caches and the object store.
 */
public interface StreamStorage extends AutoCloseable {

    /** Starts an engine: opens the WAL, object store and metadata, recovers, then accepts calls. */
    static StreamStorage open(StorageConfig config) {
        return StorageEngine.start(config);
    }

    /** Creates a new stream, opened for writing by this node at epoch 0. */
    CompletableFuture<Stream> createStream(StreamOptions options);

    /**
     * Opens an existing stream for writing at {@code epoch}, which must be at least the stream's current epoch.
     * Fails with {@link StreamFencedException} when a higher epoch exists or another node still has the stream open,
     * and with {@link StreamNotFoundException} when there is no such stream. Opening a stream this engine already
     * has open at a lower epoch fences the older handle.
     */
    CompletableFuture<Stream> openStream(long streamId, long epoch);

    /** The key-value space shared by every node on this object store. */
    KeyValues keyValues();

    /** Counters of the engine and its object store. */
    StorageMetrics metrics();

    /** Uploads the log cache, closes every open stream and releases all resources. Idempotent. */
    @Override
    void close();
}
