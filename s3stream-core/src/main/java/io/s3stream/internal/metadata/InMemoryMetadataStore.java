package io.s3stream.internal.metadata;

import io.s3stream.StreamOptions;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.NodeMetadata;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.StreamMetadata;

import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * A {@link MetadataStore} held in memory, for unit tests and for engines that share one JVM; it is the reference
 * implementation of the rules below, which {@code MetadataStoreContractTest} checks for every implementation.
 *
 * <h2>Nodes</h2>
 * <ul>
 *   <li>{@link #registerNode} returns 1 for a node id's first registration and one more on each later one. Node ids
 *       must be {@code >= 0} ({@code -1} means "no owner").</li>
 *   <li>Every call carrying {@code (nodeId, nodeEpoch)} ({@code createStream}, {@code openStream},
 *       {@code closeStream}, {@code commitObjects}) fails with {@link io.s3stream.NodeFencedException} naming the
 *       registered epoch when {@code nodeEpoch} is older; with {@link io.s3stream.spi.MetadataConflictException} when
 *       the node id was never registered or {@code nodeEpoch} was never issued (newer than the registered one).</li>
 * </ul>
 *
 * <h2>Streams</h2>
 * <ul>
 *   <li>{@code createStream}: ids increase monotonically (the first is 0); epoch 0, {@code OPENED} by the caller,
 *       {@code startOffset = endOffset = options.startOffset()}, tags kept.</li>
 *   <li>{@code openStream}: {@link io.s3stream.StreamNotFoundException} if the stream never existed or is deleted;
 *       {@link io.s3stream.StreamFencedException} if {@code epoch} is below the current epoch, or if another node
 *       holds the stream open (the message names that node: it must close the stream first, whatever the epochs).
 *       A stream {@code CLOSED}, or {@code OPENED} by the same node id (a restart), becomes {@code OPENED} by the
 *       caller at the given epoch (equal to the current one is allowed).</li>
 *   <li>{@code closeStream}: the epoch must be the current one (older: fenced; newer: conflict) and the caller its
 *       owner (else fenced, naming the owner). Closing a stream that is already {@code CLOSED} at the current epoch
 *       is a no-op that returns it, so a retried close succeeds. The stream becomes {@code CLOSED}, owner -1.
 *       <em>Takeover:</em> a node taking over a dead node's streams registers under the dead node's id (fencing it)
 *       and closes them with that node id and the new node epoch.</li>
 *   <li>{@code trimStream}: the epoch must be the current one (older: fenced; newer: conflict); the stream may be
 *       {@code OPENED} or {@code CLOSED}; any node may trim. A new start offset at or below the current one is a
 *       no-op. <b>The start offset may pass the end offset</b>: the engine trims up to its confirmed offset, whose
 *       data may still wait in a log cache for upload; the store does not know the stream's next offset and so
 *       cannot bound the trim, and the engine must not trim past it. Ranges committed later that lie wholly below
 *       the start offset are dead on arrival, and an upload may leave them out (see {@code commitObjects}). (This
 *       refines the SPI's "never past its end offset".)</li>
 *   <li>{@code deleteStream}: epoch at least the current one (older: fenced), whoever holds the stream; the
 *       stream is forgotten (its id is never given again). Deleting twice fails with not-found ("was deleted").</li>
 *   <li>{@code getStream} and {@code listStreams} do not know a deleted stream: empty, omitted.</li>
 * </ul>
 *
 * <h2>Objects</h2>
 * <ul>
 *   <li>{@code prepareObjects(count, ttl)}: {@code count >= 1} consecutive ids (the first is 0), state
 *       {@code PREPARED}, deadline {@code clock.instant() + ttl}. At or after the deadline an id still prepared
 *       becomes {@code MARKED_FOR_DELETION}; the check runs lazily at the start of every call. An id never committed
 *       is reported with type {@code STREAM_SET}, size 0, no ranges, node -1 and {@code committedAtMs} -1.</li>
 *   <li>{@code commitObjects}: the node epoch is checked; each object id must be {@code PREPARED} (not unknown, not
 *       committed before, not expired) and appear once; each object holds at least one range, at most one range per
 *       stream, sorted by stream id, and a {@code STREAM} object exactly one range. Ranges of a stream held by
 *       different objects of one request are sorted by start offset before they are checked.
 *       <ul>
 *         <li><b>Upload</b> (no compacted inputs): at most one {@code STREAM_SET} object. For each stream: it must
 *             exist ({@link io.s3stream.StreamNotFoundException}); every range's epoch must be the stream's current
 *             epoch (older: fenced; newer: conflict); the ranges must start at the stream's end offset and touch
 *             (a gap or an overlap is a conflict, except a gap wholly below the start offset: a trimmed prefix the
 *             owner left out of its upload); the end offset then moves to the last range's end. Ownership is
 *             <em>not</em> checked, so a node that took over another node's WAL can upload its data. A stream
 *             <b>deleted meanwhile is skipped</b>: its ranges are accepted unchecked but dead on arrival, so the rest
 *             of the upload (and the WAL trim behind it) is not held up by a deletion.</li>
 *         <li><b>Compaction</b> (compacted inputs present): inputs must be {@code COMMITTED} and distinct. For each
 *             stream, the output ranges must not overlap each other, must lie inside the union of the inputs' ranges
 *             of that stream, and must cover that union at and above the stream's start offset (the compactor may
 *             drop trimmed data, and all data of a deleted stream). Epochs and stream states are not checked; end
 *             offsets do not move; inputs become {@code MARKED_FOR_DELETION}.</li>
 *       </ul>
 *       A range is <em>dead</em> when it lies wholly below its stream's start offset ({@code end <= startOffset})
 *       or its stream is deleted. An object whose ranges are all dead becomes {@code MARKED_FOR_DELETION} as soon as
 *       that is true: at commit, at a trim, or at a deletion. For a {@code STREAM} object that is its single range;
 *       a {@code STREAM_SET} object survives while any one of its ranges lives.</li>
 *   <li>Any violation fails the whole request and nothing changes.</li>
 *   <li>{@code getObjects(streamId, start, end, limit)}: committed objects holding a <em>live</em> range of the
 *       stream that overlaps {@code [start, end)} (end exclusive), ordered by that range's start, at most
 *       {@code limit} ({@code >= 1}). Empty for an unknown or deleted stream or an empty interval. A range wholly
 *       below the start offset is trimmed data and is not returned even if its stream set object lives on.</li>
 *   <li>{@code listObjects(states...)}: objects in any of the states, in id order; no states means every state.</li>
 *   <li>{@code objectsDeleted(ids)}: objects {@code MARKED_FOR_DELETION} are forgotten (no state lists them any
 *       more, their ids and adopted keys are unknown from then on); an id forgotten before (allocated, no longer
 *       known) is accepted again (a retried call succeeds); any other state or an id never allocated is a conflict
 *       and nothing changes.</li>
 * </ul>
 *
 * <h2>Key-value space and futures</h2>
 * Values are copied on the way in and out. Every method returns a future that is already complete: failures
 * (including null arguments and use after {@link #close()}) complete it exceptionally and nothing is thrown.
 * Dependent stages therefore run on the caller's thread.
 *
 * <h2>Concurrency</h2>
 * Thread-safe: each call is one atomic step under the lock of the {@link ManifestState} behind this handle.
 * Several handles may share one manifest; {@link #close()} closes this handle only.
 */
public final class InMemoryMetadataStore implements MetadataStore {

    private final ManifestState manifest;
    private volatile boolean closed;

    /** A store with its own state and the system clock. */
    public InMemoryMetadataStore() {
        this(InstantSource.system());
    }

    /** A store with its own state; {@code clock} decides when prepared object ids expire and commit times. */
    public InMemoryMetadataStore(InstantSource clock) {
        this(new ManifestState(clock));
    }

    /** A handle on a manifest that other handles may share. */
    InMemoryMetadataStore(ManifestState manifest) {
        this.manifest = manifest;
    }

    private <T> CompletableFuture<T> call(Supplier<T> operation) {
        try {
            if (closed) {
                throw new IllegalStateException("this metadata store handle is closed");
            }
            return CompletableFuture.completedFuture(operation.get());
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private CompletableFuture<Void> run(Runnable operation) {
        return call(() -> {
            operation.run();
            return null;
        });
    }

    @Override
    public CompletableFuture<Long> registerNode(long nodeId) {
        return call(() -> manifest.registerNode(nodeId));
    }

    @Override
    public CompletableFuture<Long> registerNode(long nodeId, long expectedNodeEpoch) {
        return call(() -> manifest.registerNode(nodeId, expectedNodeEpoch));
    }

    @Override
    public CompletableFuture<Optional<NodeMetadata>> getNode(long nodeId) {
        return call(() -> manifest.getNode(nodeId));
    }

    @Override
    public CompletableFuture<List<NodeMetadata>> listNodes() {
        return call(manifest::listNodes);
    }

    @Override
    public CompletableFuture<StreamMetadata> createStream(long nodeId, long nodeEpoch, StreamOptions options) {
        return call(() -> manifest.createStream(nodeId, nodeEpoch, options));
    }

    @Override
    public CompletableFuture<StreamMetadata> openStream(long streamId, long epoch, long nodeId, long nodeEpoch) {
        return call(() -> manifest.openStream(streamId, epoch, nodeId, nodeEpoch));
    }

    @Override
    public CompletableFuture<StreamMetadata> closeStream(long streamId, long epoch, long nodeId, long nodeEpoch) {
        return call(() -> manifest.closeStream(streamId, epoch, nodeId, nodeEpoch));
    }

    @Override
    public CompletableFuture<StreamMetadata> trimStream(long streamId, long epoch, long newStartOffset) {
        return call(() -> manifest.trimStream(streamId, epoch, newStartOffset));
    }

    @Override
    public CompletableFuture<Void> deleteStream(long streamId, long epoch) {
        return run(() -> manifest.deleteStream(streamId, epoch));
    }

    @Override
    public CompletableFuture<Optional<StreamMetadata>> getStream(long streamId) {
        return call(() -> manifest.getStream(streamId));
    }

    @Override
    public CompletableFuture<List<StreamMetadata>> listStreams() {
        return call(manifest::listStreams);
    }

    @Override
    public CompletableFuture<Long> prepareObjects(int count, Duration timeToLive) {
        return call(() -> manifest.prepareObjects(count, timeToLive));
    }

    @Override
    public CompletableFuture<Void> commitObjects(CommitRequest request) {
        return run(() -> manifest.commitObjects(request));
    }

    @Override
    public CompletableFuture<List<ObjectMetadata>> getObjects(long streamId, long startOffset, long endOffset,
                                                              int limit) {
        return call(() -> manifest.getObjects(streamId, startOffset, endOffset, limit));
    }

    @Override
    public CompletableFuture<List<ObjectMetadata>> listObjects(ObjectState... states) {
        return call(() -> manifest.listObjects(states));
    }

    @Override
    public CompletableFuture<Void> objectsDeleted(List<Long> objectIds) {
        return run(() -> manifest.objectsDeleted(objectIds));
    }

    @Override
    public CompletableFuture<Optional<byte[]>> getKv(String key) {
        return call(() -> manifest.getKv(key));
    }

    @Override
    public CompletableFuture<Void> putKv(String key, byte[] value) {
        return run(() -> manifest.putKv(key, value));
    }

    @Override
    public CompletableFuture<Void> deleteKv(String key) {
        return run(() -> manifest.deleteKv(key));
    }

    @Override
    public CompletableFuture<java.util.SortedMap<String, byte[]>> listKv(String prefix) {
        return call(() -> manifest.listKv(prefix));
    }

    @Override
    public CompletableFuture<Void> sync() {
        return run(() -> { }); // one shared state: always current
    }

    @Override
    public CompletableFuture<Boolean> compareAndSetKv(String key, byte[] expected, byte[] value) {
        return call(() -> manifest.compareAndSetKv(key, expected, value));
    }

    @Override
    public CompletableFuture<Void> putKv(long nodeId, long nodeEpoch, String key, byte[] value) {
        return run(() -> manifest.changeKvByNode(new ManifestOp.ByNode(nodeId, nodeEpoch,
                new ManifestOp.PutKv(key, value))));
    }

    @Override
    public CompletableFuture<Void> deleteKv(long nodeId, long nodeEpoch, String key) {
        return run(() -> manifest.changeKvByNode(new ManifestOp.ByNode(nodeId, nodeEpoch, new ManifestOp.DeleteKv(key))));
    }

    @Override
    public CompletableFuture<Boolean> compareAndSetKv(long nodeId, long nodeEpoch, String key, byte[] expected,
                                                      byte[] value) {
        return call(() -> (Boolean) manifest.changeKvByNode(new ManifestOp.ByNode(nodeId, nodeEpoch,
                new ManifestOp.CompareAndSetKv(key, expected, value))));
    }

    @Override
    public CompletableFuture<Void> updateKv(long nodeId, long nodeEpoch, java.util.Map<String, byte[]> puts,
                                            java.util.Collection<String> deletes) {
        return run(() -> manifest.changeKvsByNode(ManifestOp.ByNode.batch(nodeId, nodeEpoch, puts, deletes)));
    }

    /** Closes this handle; idempotent. The manifest (possibly shared with other handles) keeps its state. */
    @Override
    public void close() {
        closed = true;
    }
}
