package io.s3stream.spi;

import io.s3stream.StreamOptions;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The manifest: streams, their epochs and offset ranges, the objects that hold their data, node registrations, and a
 * small key-value space for the embedding system.
 *
 * <h2>Contract (checked for every implementation by {@code MetadataStoreContractTest})</h2>
 * Every change is atomic and checked against the state it applies to:
 * <ul>
 *   <li><b>Node fencing.</b> {@link #registerNode} returns a node epoch higher than any before for that node id.
 *       Calls that carry an older node epoch fail with {@link io.s3stream.NodeFencedException}.</li>
 *   <li><b>Stream fencing.</b> {@link #openStream} needs an epoch at least the current one and a stream that no other
 *       node holds open; it then records the new epoch and owner. Calls carrying an older stream epoch fail with
 *       {@link io.s3stream.StreamFencedException}.</li>
 *   <li><b>Continuity.</b> A {@link CommitRequest} without compacted inputs must continue each stream exactly: for
 *       every stream, its ranges in the request, sorted, start at the stream's committed end offset and touch each
 *       other; the one exception is a gap that lies wholly below the stream's start offset (a trimmed prefix the
 *       owner never uploaded), so a range may start past the end offset when it starts at or below the start offset.
 *       The stream's end offset then moves to the end of the last range. A violation fails the whole request
 *       with {@link MetadataConflictException} and changes nothing.</li>
 *   <li><b>Compaction.</b> A request with compacted inputs replaces them by its outputs in one step; the outputs
 *       must cover exactly the live ranges of the inputs, and the inputs become {@link ObjectState#MARKED_FOR_DELETION}.</li>
 *   <li><b>Object lifecycle.</b> Ids come from {@link #prepareObjects}; an id not committed before its time-to-live
 *       expires is marked for deletion. Adopted objects ({@link CommitRequest.NewObject#adopted}, WAL segments) get
 *       their ids from the commit and keep their own keys; an upload commits at most one prepared stream set object
 *       but any number of adopted ones.</li>
 *   <li><b>WAL position.</b> An upload's {@link CommitRequest#walPosition()} raises the node's
 *       {@link NodeMetadata#walCommittedPosition()} in the same atomic step (never lowers it). Committed objects are returned by reads; objects whose data is entirely
 *       trimmed or whose stream was deleted become marked for deletion.</li>
 * </ul>
 * Failures complete futures with the exceptions named above, {@link io.s3stream.StreamNotFoundException}, or
 * {@link io.s3stream.StorageIOException} when the store behind the manifest fails past its retry budget; a failed
 * call changed nothing.
 */
public interface MetadataStore extends AutoCloseable {

    /**
     * Registers a (re)started node and returns its new node epoch, fencing every older instance of that node. A
     * surviving node that takes over a dead node's WAL calls it with the dead node's id, so that the dead node (should
     * it still be running) is fenced before its WAL is recovered.
     */
    CompletableFuture<Long> registerNode(long nodeId);

    /**
     * {@link #registerNode(long)} only while the node is at {@code expectedNodeEpoch}: fails with
     * {@link MetadataConflictException} and changes nothing if it is at another epoch (or was never registered). What a
     * takeover uses, so that it fences the instance it judged dead and not a successor that registered since (a
     * restart racing the takeover).
     */
    CompletableFuture<Long> registerNode(long nodeId, long expectedNodeEpoch);

    /** A registered node's epoch and WAL position, or empty for a node never registered. */
    CompletableFuture<Optional<NodeMetadata>> getNode(long nodeId);

    /** Every registered node, in id order. */
    CompletableFuture<List<NodeMetadata>> listNodes();

    /** Creates a stream opened by {@code nodeId} at epoch 0. */
    CompletableFuture<StreamMetadata> createStream(long nodeId, long nodeEpoch, StreamOptions options);

    /** Opens a stream for writing by {@code nodeId} at {@code epoch} (at least the current epoch). */
    CompletableFuture<StreamMetadata> openStream(long streamId, long epoch, long nodeId, long nodeEpoch);

    /** Marks a stream closed by its owner at {@code epoch}; it can then be opened elsewhere. */
    CompletableFuture<StreamMetadata> closeStream(long streamId, long epoch, long nodeId, long nodeEpoch);

    /**
     * Moves a stream's start offset forward; moving it backward is a no-op. The start offset may pass the committed end
     * offset, because the owner may trim data it still holds in its log cache; ranges committed later that lie wholly
     * below the start are dead on arrival, and the owner may leave such a trimmed prefix out of its uploads (see
     * Continuity above). The owner must not trim past what it has acknowledged: every offset below the start offset
     * was durably appended, so a gap below it never hides an append that failed.
     */
    CompletableFuture<StreamMetadata> trimStream(long streamId, long epoch, long newStartOffset);

    /**
     * Deletes a stream; its objects become garbage. The built-in stores then forget it (its id is never given
     * again), so a cluster that creates and deletes streams all day keeps metadata the size of what lives.
     */
    CompletableFuture<Void> deleteStream(long streamId, long epoch);

    /**
     * A stream's metadata; empty for an id never created and, in the built-in stores, for a deleted stream (a store
     * that keeps history may report it {@link StreamState#DELETED}: callers treat both alike).
     */
    CompletableFuture<Optional<StreamMetadata>> getStream(long streamId);

    /** Every stream not deleted, in id order. */
    CompletableFuture<List<StreamMetadata>> listStreams();

    /** Reserves {@code count} consecutive object ids and returns the first. */
    CompletableFuture<Long> prepareObjects(int count, Duration timeToLive);

    /** Commits uploaded objects (and, for compaction, retires their inputs) atomically. */
    CompletableFuture<Void> commitObjects(CommitRequest request);

    /**
     * Committed objects holding data of {@code streamId} that overlaps {@code [startOffset, endOffset)}, ordered by
     * the start of that stream's range in them, at most {@code limit}.
     */
    CompletableFuture<List<ObjectMetadata>> getObjects(long streamId, long startOffset, long endOffset, int limit);

    /** Every object in the given states, in id order (for compaction, deletion and leak checks). */
    CompletableFuture<List<ObjectMetadata>> listObjects(ObjectState... states);

    /**
     * Records that objects marked for deletion were deleted from the bucket. The manifest may then forget them (the
     * built-in stores do: a manifest holds what exists, not every object ever written); recording an object again is
     * accepted, so a retried call succeeds.
     */
    CompletableFuture<Void> objectsDeleted(List<Long> objectIds);

    CompletableFuture<Optional<byte[]>> getKv(String key);

    CompletableFuture<Void> putKv(String key, byte[] value);

    CompletableFuture<Void> deleteKv(String key);

    /** Every key starting with {@code prefix}, with its value, in key order. */
    CompletableFuture<java.util.SortedMap<String, byte[]>> listKv(String prefix);

    /**
     * A read barrier: completes once this store's view holds every change committed (by any node) before the call,
     * so that the reads after it see them. Reads are otherwise served from a view that may lag other nodes' changes
     * (by up to one poll of the manifest); a node that takes over a role from another (a group coordinator after a
     * failover) calls this before answering from shared state.
     */
    CompletableFuture<Void> sync();

    /**
     * Sets {@code key} to {@code value} only if its current value equals {@code expected} (byte for byte), or, with
     * {@code expected == null}, only if the key is absent. {@code value == null} deletes the key. Returns whether the
     * change was made; among concurrent callers expecting the same current value exactly one succeeds.
     */
    CompletableFuture<Boolean> compareAndSetKv(String key, byte[] expected, byte[] value);

    /**
     * {@link #putKv(String, byte[])} on behalf of node {@code nodeId} at {@code nodeEpoch}: fails with
     * {@link io.s3stream.NodeFencedException} and changes nothing once a newer instance registered with that node id
     * (a restart, or another node taking over its WAL). An engine writes its key-value space this way, so that a
     * fenced node that still runs (paused, partitioned) cannot overwrite what its successor wrote.
     */
    CompletableFuture<Void> putKv(long nodeId, long nodeEpoch, String key, byte[] value);

    /** {@link #deleteKv(String)} on behalf of a node, fenced as {@link #putKv(long, long, String, byte[])}. */
    CompletableFuture<Void> deleteKv(long nodeId, long nodeEpoch, String key);

    /**
     * {@link #compareAndSetKv(String, byte[], byte[])} on behalf of a node, fenced as
     * {@link #putKv(long, long, String, byte[])}: a fenced node gets the exception, not {@code false}.
     */
    CompletableFuture<Boolean> compareAndSetKv(long nodeId, long nodeEpoch, String key, byte[] expected, byte[] value);

    /**
     * Sets every key of {@code puts} and deletes every key of {@code deletes} on behalf of a node, fenced as
     * {@link #putKv(long, long, String, byte[])}, <em>atomically</em>: once the future completes all the changes are
     * durable and visible together; if it fails, none was made (a store failure whose outcome is unclear is resolved
     * before the future completes, as for every change). One change, not one per key: committing the offsets of a
     * hundred partitions costs one write. A key may not be in both; an empty change completes at once.
     */
    CompletableFuture<Void> updateKv(long nodeId, long nodeEpoch, java.util.Map<String, byte[]> puts,
                                     java.util.Collection<String> deletes);

    @Override
    void close();
}
