package io.s3stream;

import io.s3stream.internal.engine.StorageEngine;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The storage engine: durable append-only streams on a write-ahead log and an object store.
 *
 * <p>{@link #open(StorageConfig)} recovers the write-ahead log (uploading whatever it finds) before it returns, so
 * every append acknowledged before a crash is readable again. {@link #close()} uploads what the log cache holds and
 * releases the WAL, the caches and the object store.
 *
 * <p>Design note: this is the API's face of the engine, which lives in an internal package and knows nothing of this
 * class, so the dependency runs one way (API → engine → SPI).
 */
public final class StreamStorage implements AutoCloseable {
    private final StorageEngine engine;

    StreamStorage(StorageEngine engine) {
        this.engine = engine;
    }

    /** Starts an engine: opens the WAL, object store and metadata, recovers, then accepts calls. */
    public static StreamStorage open(StorageConfig config) {
        return new StreamStorage(StorageEngine.start(config));
    }

    /** The engine behind this facade (tests reach it through a package-private path). */
    StorageEngine engine() {
        return engine;
    }

    /** Creates a new stream, opened for writing by this node at epoch 0. */
    public CompletableFuture<Stream> createStream(StreamOptions options) {
        return engine.createStream(options);
    }

    /**
     * Opens an existing stream for writing at {@code epoch}, which must be at least the stream's current epoch.
     * Fails with {@link StreamFencedException} when a higher epoch exists or another node still has the stream open,
     * and with {@link StreamNotFoundException} when there is no such stream. Opening a stream this engine already
     * has open at a lower epoch fences the older handle.
     */
    public CompletableFuture<Stream> openStream(long streamId, long epoch) {
        return engine.openStream(streamId, epoch);
    }

    /**
     * Every stream not deleted, in id order, as the shared metadata knows it: the streams of every node on this object
     * store, not only this engine's. A stream created or deleted by another node shows once this node's metadata has
     * caught up with it (within the manifest's poll interval).
     */
    public CompletableFuture<List<StreamInfo>> listStreams() {
        return engine.listStreams();
    }

    /**
     * Takes over the WAL of node {@code nodeId}, which must be presumed dead, so that its acknowledged data and its
     * streams do not wait for it to come back. In order:
     * <ol>
     *   <li><b>fence</b> the node in the manifest (a new node epoch): if it is in fact still running (paused,
     *       partitioned), it can no longer commit, and its WAL refuses to acknowledge anything this takeover does not
     *       recover; it fails with {@link NodeFencedException} and must restart, when it gets a newer epoch again;</li>
     *   <li><b>recover</b> its WAL from the last trim point and commit every acknowledged record that was not yet in a
     *       committed object (with {@code wal-object}, the WAL's objects themselves are committed: no data moves);</li>
     *   <li><b>release</b> its streams: each one it held open is closed, so any node can open it with a higher epoch.</li>
     * </ol>
     * Only a WAL on shared storage can be taken over ({@code fsx://}, {@code objectwal://}); with a WAL on the node's
     * own disk ({@code blockdev://}) this fails with {@link InvalidConfigException} and the node's streams wait for it.
     * The WAL is opened with this engine's WAL URI and the dead node's id, so every node of a cluster configures the
     * same WAL URI. Deciding that a node is dead (leases, health checks) is the caller's job; taking over a live node
     * is safe but stops it. Two nodes taking over the same node at once are safe too: the one with the lower fencing
     * epoch fails with {@link NodeFencedException}.
     */
    public CompletableFuture<TakeoverResult> takeOverNode(long nodeId) {
        return engine.takeOverNode(nodeId, -1);
    }

    /**
     * {@link #takeOverNode(long)} of the instance of node {@code nodeId} at {@code nodeEpoch} only: if the node
     * registered again since (it restarted while its death was being decided), nothing is fenced or recovered and the
     * future fails with {@link io.s3stream.spi.MetadataConflictException}. A caller that learns node epochs from its
     * liveness records (each instance publishing {@link #nodeEpoch()}) should use this form.
     */
    public CompletableFuture<TakeoverResult> takeOverNode(long nodeId, long nodeEpoch) {
        if (nodeEpoch < 1) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("node epochs start at 1, was " + nodeEpoch));
        }
        return engine.takeOverNode(nodeId, nodeEpoch);
    }

    /** This instance's node epoch: registered when the engine opened; higher than any earlier instance's. */
    public long nodeEpoch() {
        return engine.nodeEpoch();
    }

    /** The key-value space shared by every node on this object store. */
    public KeyValues keyValues() {
        return engine.keyValues();
    }

    /** Counters of the engine and its object store. */
    public StorageMetrics metrics() {
        return engine.metrics();
    }

    /** Uploads the log cache, closes every open stream and releases all resources. Idempotent. */
    @Override
    public void close() {
        engine.close();
    }
}
