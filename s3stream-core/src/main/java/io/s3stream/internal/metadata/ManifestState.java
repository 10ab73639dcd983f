package io.s3stream.internal.metadata;

import io.s3stream.NodeFencedException;
import io.s3stream.StreamFencedException;
import io.s3stream.StreamNotFoundException;
import io.s3stream.StreamOptions;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.MetadataConflictException;
import io.s3stream.spi.NodeMetadata;
import io.s3stream.spi.ObjectKeys;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamMetadata;
import io.s3stream.spi.StreamRange;
import io.s3stream.spi.StreamState;
import io.s3stream.spi.WalContext;

import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The state and the rules of the manifest: synchronous methods that either apply one whole change or throw and change
 * nothing. Both metadata stores are built on it: {@link InMemoryMetadataStore} turns the methods into futures (several
 * store handles may share one state, see {@link InMemoryMetadataStoreProvider}), and the durable manifest in object
 * storage ({@code ManifestMetadataStore}) replays its log of operations through the same rules, so the two cannot
 * disagree on what a commit, a trim or a fence means.
 *
 * <h2>Concurrency</h2>
 * Every public method holds this object's monitor for its whole duration, so each call is one atomic step against
 * one consistent state. Metadata calls are a cold path next to appends; one lock keeps the rules easy to check.
 *
 * <h2>Atomicity</h2>
 * Each mutating method first validates everything against the current state and only then mutates. No validation
 * happens after the first mutation, so a thrown exception always means "nothing changed". The one exception is the
 * lazy expiry of prepared object ids ({@link #expirePrepared()}), which runs at the start of every mutation: it is
 * driven by time, not by the call, and would have happened at the deadline in a store with a background timer.
 *
 * <h2>Indexes</h2>
 * Each stream keeps a {@link TreeMap} from range start offset to the committed object holding that range, holding
 * only <em>live</em> ranges (not wholly below the stream's start offset, stream not deleted). Live ranges of one
 * stream never overlap: uploads only extend past the end offset and compaction outputs lie inside the inputs they
 * replace. So a lookup is one {@code floorKey} plus an in-order walk, and a trim visits only the ranges it kills.
 * Each object counts its live ranges; it is marked for deletion when the count reaches zero. A deleted stream is
 * forgotten at once: its ranges die with it, and an id below {@code nextStreamId} that names no stream is a deleted one
 * (so ranges of it that objects still list, or that an upload brings late, are dead). A broker that creates and deletes
 * topics all day keeps a manifest the size of what lives.
 *
 * <h2>Replay (shared with the durable manifest)</h2>
 * {@link #apply(ManifestOp, Instant)} runs one operation as of a given instant and {@link #check(ManifestOp, Instant)}
 * validates it without changing anything; both run exactly the rules of the synchronous methods, so
 * {@code io.s3stream.internal.manifest.ManifestMetadataStore} replays its log through the same code that serves the
 * in-memory store. Mutations take their time from that instant (commit times, prepared deadlines, expiry); reads use
 * the clock and never mutate: a prepared id past its deadline is <em>reported</em> as marked for deletion until the
 * next mutation marks it. That keeps replay deterministic: what a replica's clock says never changes its state.
 * {@link #snapshot()} and {@link #restore} copy the whole state out and back for checkpoints.
 *
 * <h2>What lives elsewhere</h2>
 * The state machine itself — nodes, streams, objects and their indexes, changed only under one monitor by
 * validate-then-mutate methods — stays in this class, because each rule's validation and its mutation need the same
 * lock and the same indexes. What has no mutation of its own lives beside it: the read-only checks of a commit
 * ({@link CommitValidation}), the mutable entries ({@link StreamEntry}, {@link ObjectEntry}, {@link IndexedRange})
 * and the key-value space ({@link KvSpace}), all guarded by this monitor. Outside the package: the operation log and
 * replay ({@code ManifestOp}), checkpoints ({@code ManifestIo}) and the stores built on it.
 */
public final class ManifestState {

    /** Type reported for object ids that were never committed: the SPI record has no "unknown" type. */
    static final ObjectType UNCOMMITTED_TYPE = ObjectType.STREAM_SET;

    private final InstantSource clock;
    private final Map<Long, Long> nodeEpochs = new HashMap<>();
    /** Per node: every record of its WAL below this position is in committed objects. Absent: none recorded. */
    private final Map<Long, Long> walPositions = new HashMap<>();
    private final TreeMap<Long, StreamEntry> streams = new TreeMap<>();
    private final TreeMap<Long, ObjectEntry> objects = new TreeMap<>();
    /**
     * Adopted objects by key, until their deletion is recorded: a key is adopted at most once while the manifest
     * knows it (a second adoption would be deleted while the first still references the bytes).
     */
    private final Map<String, Long> adoptedKeys = new HashMap<>();
    private final PriorityQueue<ObjectEntry> preparedByDeadline =
            new PriorityQueue<>(Comparator.comparing((ObjectEntry e) -> e.deadline).thenComparingLong(e -> e.objectId));
    private final KvSpace kv = new KvSpace();
    private long nextStreamId;
    private long nextObjectId;

    /** Instant at which the running mutation applies; null outside {@link #apply} and {@link #check}. */
    private Instant pinned;

    /** An empty manifest; {@code clock} is the time of direct calls and of reads. */
    public ManifestState(InstantSource clock) {
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    private Instant now() {
        return pinned != null ? pinned : clock.instant();
    }

    // ---------------------------------------------------------------------------------------------- replay

    /**
     * Applies {@code op} as of {@code at}: expires prepared ids due by then and runs the operation. Returns what the
     * matching SPI method returns (node epoch, {@link StreamMetadata}, first object id, {@link Boolean}, or null);
     * throws the SPI's typed exceptions and then changed nothing but the expiry.
     */
    public synchronized Object apply(ManifestOp op, Instant at) {
        pinned = Objects.requireNonNull(at, "at");
        try {
            expirePrepared();
            return dispatch(op, false);
        } finally {
            pinned = null;
        }
    }

    /**
     * Validates {@code op} as of {@code at} without changing anything: throws what {@link #apply} would throw. For
     * {@link ManifestOp.CompareAndSetKv} returns whether the expected value matches; otherwise null.
     */
    public synchronized Object check(ManifestOp op, Instant at) {
        pinned = Objects.requireNonNull(at, "at");
        try {
            return dispatch(op, true);
        } finally {
            pinned = null;
        }
    }

    private Object dispatch(ManifestOp op, boolean dryRun) {
        Objects.requireNonNull(op, "op");
        return switch (op) {
            case ManifestOp.RegisterNode o -> doRegisterNode(o.nodeId(), dryRun);
            case ManifestOp.RegisterNodeIf o -> {
                Long current = nodeEpochs.get(o.nodeId());
                if (current == null || current != o.expectedEpoch()) {
                    throw new MetadataConflictException("node " + o.nodeId() + " is at node epoch "
                            + (current == null ? "none (never registered)" : current) + ", not "
                            + o.expectedEpoch() + ": it registered again since");
                }
                yield doRegisterNode(o.nodeId(), dryRun);
            }
            case ManifestOp.CreateStream o ->
                    doCreateStream(o.nodeId(), o.nodeEpoch(), new StreamOptions(o.startOffset(), o.tags()), dryRun);
            case ManifestOp.OpenStream o -> doOpenStream(o.streamId(), o.epoch(), o.nodeId(), o.nodeEpoch(), dryRun);
            case ManifestOp.CloseStream o -> doCloseStream(o.streamId(), o.epoch(), o.nodeId(), o.nodeEpoch(), dryRun);
            case ManifestOp.TrimStream o -> doTrimStream(o.streamId(), o.epoch(), o.newStartOffset(), dryRun);
            case ManifestOp.DeleteStream o -> {
                doDeleteStream(o.streamId(), o.epoch(), dryRun);
                yield null;
            }
            case ManifestOp.PrepareObjects o -> doPrepareObjects(o.count(), Duration.ofNanos(o.timeToLiveNanos()), dryRun);
            case ManifestOp.CommitObjects o -> {
                doCommitObjects(o.request(), dryRun);
                yield null;
            }
            case ManifestOp.ObjectsDeleted o -> {
                doObjectsDeleted(o.objectIds(), dryRun);
                yield null;
            }
            case ManifestOp.PutKv o -> {
                kv.put(o.key(), o.value(), dryRun);
                yield null;
            }
            case ManifestOp.DeleteKv o -> {
                kv.delete(o.key(), dryRun);
                yield null;
            }
            case ManifestOp.CompareAndSetKv o -> kv.compareAndSet(o.key(), o.expected(), o.value(), dryRun);
            case ManifestOp.ByNode o -> {
                checkNode(o.nodeId(), o.nodeEpoch());
                yield dispatch(o.op(), dryRun);
            }
        };
    }

    // ---------------------------------------------------------------------------------------------- nodes

    synchronized long registerNode(long nodeId) {
        expirePrepared();
        return doRegisterNode(nodeId, false);
    }

    synchronized long registerNode(long nodeId, long expectedEpoch) {
        expirePrepared();
        return (Long) dispatch(new ManifestOp.RegisterNodeIf(nodeId, expectedEpoch), false);
    }

    private Long doRegisterNode(long nodeId, boolean dryRun) {
        if (nodeId < 0) {
            throw new IllegalArgumentException("node id must be >= 0, was " + nodeId);
        }
        if (dryRun) {
            return null;
        }
        return nodeEpochs.merge(nodeId, 1L, Long::sum);
    }

    public synchronized Optional<NodeMetadata> getNode(long nodeId) {
        Long epoch = nodeEpochs.get(nodeId);
        return epoch == null ? Optional.empty() : Optional.of(nodeMetadata(nodeId, epoch));
    }

    public synchronized List<NodeMetadata> listNodes() {
        List<NodeMetadata> out = new ArrayList<>(nodeEpochs.size());
        new TreeMap<>(nodeEpochs).forEach((id, epoch) -> out.add(nodeMetadata(id, epoch)));
        return out;
    }

    private NodeMetadata nodeMetadata(long nodeId, long epoch) {
        return new NodeMetadata(nodeId, epoch, walPositions.getOrDefault(nodeId, WalContext.NO_POSITION));
    }

    private void checkNode(long nodeId, long nodeEpoch) {
        Long current = nodeEpochs.get(nodeId);
        if (current == null) {
            throw new MetadataConflictException("node " + nodeId + " is not registered; call registerNode first");
        }
        if (nodeEpoch < current) {
            throw new NodeFencedException("node " + nodeId + " at node epoch " + nodeEpoch
                    + " is fenced: a newer instance registered with node epoch " + current);
        }
        if (nodeEpoch > current) {
            throw new MetadataConflictException("node " + nodeId + " has node epoch " + current + "; node epoch "
                    + nodeEpoch + " was never issued");
        }
    }

    // ---------------------------------------------------------------------------------------------- streams

    synchronized StreamMetadata createStream(long nodeId, long nodeEpoch, StreamOptions options) {
        expirePrepared();
        return doCreateStream(nodeId, nodeEpoch, options, false);
    }

    private StreamMetadata doCreateStream(long nodeId, long nodeEpoch, StreamOptions options, boolean dryRun) {
        Objects.requireNonNull(options, "options");
        checkNode(nodeId, nodeEpoch);
        if (dryRun) {
            return null;
        }
        StreamEntry s = new StreamEntry(nextStreamId++, options.startOffset(), options.tags());
        s.state = StreamState.OPENED;
        s.ownerNodeId = nodeId;
        streams.put(s.streamId, s);
        return s.toMetadata();
    }

    synchronized StreamMetadata openStream(long streamId, long epoch, long nodeId, long nodeEpoch) {
        expirePrepared();
        return doOpenStream(streamId, epoch, nodeId, nodeEpoch, false);
    }

    private StreamMetadata doOpenStream(long streamId, long epoch, long nodeId, long nodeEpoch, boolean dryRun) {
        checkNode(nodeId, nodeEpoch);
        StreamEntry s = liveStream(streamId);
        if (epoch < s.epoch) {
            throw new StreamFencedException("stream " + streamId + " is at epoch " + s.epoch + "; opening at epoch "
                    + epoch + " is fenced");
        }
        if (s.state == StreamState.OPENED && s.ownerNodeId != nodeId) {
            throw new StreamFencedException("stream " + streamId + " is held open by node " + s.ownerNodeId
                    + " at epoch " + s.epoch + "; node " + s.ownerNodeId + " must close it before node " + nodeId
                    + " can open it");
        }
        if (dryRun) {
            return null;
        }
        s.epoch = epoch;
        s.state = StreamState.OPENED;
        s.ownerNodeId = nodeId;
        return s.toMetadata();
    }

    synchronized StreamMetadata closeStream(long streamId, long epoch, long nodeId, long nodeEpoch) {
        expirePrepared();
        return doCloseStream(streamId, epoch, nodeId, nodeEpoch, false);
    }

    private StreamMetadata doCloseStream(long streamId, long epoch, long nodeId, long nodeEpoch, boolean dryRun) {
        checkNode(nodeId, nodeEpoch);
        StreamEntry s = liveStream(streamId);
        checkCurrentEpoch(s, epoch, "close");
        if (s.state == StreamState.CLOSED) {
            return s.toMetadata(); // idempotent: a retried close after a lost reply must not fail
        }
        if (s.ownerNodeId != nodeId) {
            throw new StreamFencedException("stream " + streamId + " is held open by node " + s.ownerNodeId
                    + " at epoch " + s.epoch + ", not by node " + nodeId + "; only its owner can close it");
        }
        if (dryRun) {
            return null;
        }
        s.state = StreamState.CLOSED;
        s.ownerNodeId = -1;
        return s.toMetadata();
    }

    synchronized StreamMetadata trimStream(long streamId, long epoch, long newStartOffset) {
        expirePrepared();
        return doTrimStream(streamId, epoch, newStartOffset, false);
    }

    private StreamMetadata doTrimStream(long streamId, long epoch, long newStartOffset, boolean dryRun) {
        StreamEntry s = liveStream(streamId);
        checkCurrentEpoch(s, epoch, "trim");
        if (newStartOffset <= s.startOffset) {
            return s.toMetadata(); // moving backwards (or nowhere) is a no-op
        }
        if (dryRun) {
            return null;
        }
        s.startOffset = newStartOffset;
        // Live ranges are disjoint and sorted, so the ones wholly below the new start are a prefix of the index.
        List<IndexedRange> dead = new ArrayList<>();
        for (IndexedRange r : s.index.headMap(newStartOffset, false).values()) {
            if (r.range().endOffset() <= newStartOffset) {
                dead.add(r);
            }
        }
        for (IndexedRange r : dead) {
            s.index.remove(r.range().startOffset());
            loseLiveRange(objects.get(r.objectId()));
        }
        return s.toMetadata();
    }

    synchronized void deleteStream(long streamId, long epoch) {
        expirePrepared();
        doDeleteStream(streamId, epoch, false);
    }

    private void doDeleteStream(long streamId, long epoch, boolean dryRun) {
        StreamEntry s = liveStream(streamId);
        if (epoch < s.epoch) {
            throw new StreamFencedException("stream " + streamId + " is at epoch " + s.epoch + "; deleting at epoch "
                    + epoch + " is fenced");
        }
        if (dryRun) {
            return;
        }
        for (IndexedRange r : s.index.values()) {
            loseLiveRange(objects.get(r.objectId()));
        }
        streams.remove(streamId); // forgotten: an id below nextStreamId that no entry holds is a deleted stream
    }

    public synchronized Optional<StreamMetadata> getStream(long streamId) {
        StreamEntry s = streams.get(streamId);
        return s == null ? Optional.empty() : Optional.of(s.toMetadata());
    }

    public synchronized List<StreamMetadata> listStreams() {
        List<StreamMetadata> result = new ArrayList<>(streams.size());
        for (StreamEntry s : streams.values()) {
            result.add(s.toMetadata());
        }
        return result;
    }

    private StreamEntry liveStream(long streamId) {
        StreamEntry s = streams.get(streamId);
        if (s == null) {
            throw new StreamNotFoundException("stream " + streamId
                    + (wasDeleted(streamId) ? " was deleted" : " does not exist"));
        }
        return s;
    }

    /** Whether {@code streamId} names a stream that was created and is now deleted (and so forgotten). */
    private boolean wasDeleted(long streamId) {
        return streamId >= 0 && streamId < nextStreamId && !streams.containsKey(streamId);
    }

    private static void checkCurrentEpoch(StreamEntry s, long epoch, String action) {
        if (epoch < s.epoch) {
            throw new StreamFencedException("stream " + s.streamId + " is at epoch " + s.epoch + "; " + action
                    + " at epoch " + epoch + " is fenced");
        }
        if (epoch > s.epoch) {
            throw new MetadataConflictException("stream " + s.streamId + " is at epoch " + s.epoch
                    + "; it was never opened at epoch " + epoch + " (" + action + ")");
        }
    }

    // ---------------------------------------------------------------------------------------------- objects

    synchronized long prepareObjects(int count, Duration timeToLive) {
        expirePrepared();
        return doPrepareObjects(count, timeToLive, false);
    }

    private Long doPrepareObjects(int count, Duration timeToLive, boolean dryRun) {
        if (count < 1) {
            throw new IllegalArgumentException("count must be >= 1, was " + count);
        }
        Objects.requireNonNull(timeToLive, "timeToLive");
        if (timeToLive.isNegative() || timeToLive.isZero()) {
            throw new IllegalArgumentException("timeToLive must be positive, was " + timeToLive);
        }
        if (dryRun) {
            return null;
        }
        Instant deadline;
        try {
            deadline = now().plus(timeToLive);
        } catch (DateTimeException | ArithmeticException e) {
            deadline = Instant.MAX;
        }
        long first = nextObjectId;
        nextObjectId += count;
        for (long id = first; id < first + count; id++) {
            ObjectEntry e = new ObjectEntry(id, deadline);
            objects.put(id, e);
            preparedByDeadline.add(e);
        }
        return first;
    }

    /** Marks every prepared id whose deadline has passed; entries committed meanwhile are simply dropped. */
    private void expirePrepared() {
        Instant now = now();
        while (!preparedByDeadline.isEmpty() && !now.isBefore(preparedByDeadline.peek().deadline)) {
            ObjectEntry e = preparedByDeadline.poll();
            if (e.state == ObjectState.PREPARED) {
                e.state = ObjectState.MARKED_FOR_DELETION;
                e.expired = true;
            }
        }
    }

    synchronized void commitObjects(CommitRequest request) {
        expirePrepared();
        doCommitObjects(request, false);
    }

    private void doCommitObjects(CommitRequest request, boolean dryRun) {
        Objects.requireNonNull(request, "request");
        checkNode(request.nodeId(), request.nodeEpoch());
        boolean compaction = !request.compactedObjectIds().isEmpty();

        // 1. Validate: every check happens before the first mutation.
        Set<Long> outputIds = new HashSet<>();
        Set<String> keysInRequest = new HashSet<>();
        int streamSetObjects = 0;
        Map<Long, List<StreamRange>> outputsByStream = new TreeMap<>();
        for (CommitRequest.NewObject o : request.objects()) {
            Objects.requireNonNull(o, "object");
            if (o.isAdopted()) {
                if (compaction) {
                    throw new MetadataConflictException("a compaction cannot adopt object " + o.key());
                }
                if (!keysInRequest.add(o.key())) {
                    throw new MetadataConflictException("object " + o.key() + " appears twice in one commit");
                }
                Long existing = adoptedKeys.get(o.key());
                if (existing != null) {
                    throw new MetadataConflictException("object " + o.key() + " is already adopted as object "
                            + existing + "; a key is adopted once (it would be deleted while still referenced)");
                }
            } else {
                if (!outputIds.add(o.objectId())) {
                    throw new MetadataConflictException("object " + o.objectId() + " appears twice in one commit");
                }
                checkPrepared(o.objectId());
                if (o.type() == ObjectType.STREAM_SET) {
                    streamSetObjects++;
                }
            }
            CommitValidation.checkShape(o);
            for (StreamRange r : o.ranges()) {
                outputsByStream.computeIfAbsent(r.streamId(), k -> new ArrayList<>()).add(r);
            }
        }
        for (List<StreamRange> ranges : outputsByStream.values()) {
            ranges.sort(Comparator.comparingLong(StreamRange::startOffset));
        }
        Map<Long, Long> newEndOffsets = new HashMap<>();
        List<ObjectEntry> inputs = new ArrayList<>();
        if (compaction) {
            CommitValidation.validateCompaction(streams, objects, request, outputsByStream, inputs);
        } else {
            if (streamSetObjects > 1) {
                throw new MetadataConflictException("an upload commits at most one prepared stream set object, this "
                        + "one has " + streamSetObjects);
            }
            CommitValidation.validateUpload(streams, nextStreamId, outputsByStream, newEndOffsets);
        }
        if (dryRun) {
            return;
        }

        // 2. Apply.
        for (ObjectEntry input : inputs) {
            retire(input);
        }
        long nowMs = now().toEpochMilli();
        for (CommitRequest.NewObject o : request.objects()) {
            ObjectEntry e;
            if (o.isAdopted()) {
                e = new ObjectEntry(nextObjectId++, Instant.EPOCH);
                e.key = o.key();
                objects.put(e.objectId, e);
                adoptedKeys.put(e.key, e.objectId);
            } else {
                e = objects.get(o.objectId());
            }
            e.type = o.type();
            e.sizeBytes = o.sizeBytes();
            e.ranges = o.ranges();
            e.nodeId = request.nodeId();
            e.committedAtMs = nowMs;
            e.state = ObjectState.COMMITTED;
            for (StreamRange r : o.ranges()) {
                StreamEntry s = streams.get(r.streamId()); // null: deleted, the range is dead on arrival
                if (s != null && r.endOffset() > s.startOffset) {
                    s.index.put(r.startOffset(), new IndexedRange(e.objectId, r));
                    e.liveRanges++;
                }
            }
            if (e.liveRanges == 0) {
                e.state = ObjectState.MARKED_FOR_DELETION;
            }
        }
        newEndOffsets.forEach((streamId, end) -> streams.get(streamId).endOffset = end);
        if (!compaction && request.walPosition() != WalContext.NO_POSITION) {
            walPositions.merge(request.nodeId(), request.walPosition(), Math::max);
        }
    }

    private void checkPrepared(long objectId) {
        ObjectEntry e = objects.get(objectId);
        if (e == null) {
            throw new MetadataConflictException("object " + objectId + (objectId >= 0 && objectId < nextObjectId
                    ? " is deleted" : " was never prepared"));
        }
        switch (e.state) {
            case PREPARED -> {
                if (!now().isBefore(e.deadline)) { // due but not yet marked: a dry run does not expire
                    throw new MetadataConflictException("object " + objectId + " expired at " + e.deadline
                            + " before it was committed");
                }
            }
            case COMMITTED -> throw new MetadataConflictException("object " + objectId + " is already committed");
            case MARKED_FOR_DELETION -> throw new MetadataConflictException(e.expired
                    ? "object " + objectId + " expired at " + e.deadline + " before it was committed"
                    : "object " + objectId + " is already committed and marked for deletion");
        }
    }

    /** Takes a compaction input out of every index and marks it. */
    private void retire(ObjectEntry e) {
        for (StreamRange r : e.ranges) {
            StreamEntry s = streams.get(r.streamId());
            IndexedRange indexed = s == null ? null : s.index.get(r.startOffset());
            if (indexed != null && indexed.objectId() == e.objectId) {
                s.index.remove(r.startOffset());
            }
        }
        e.liveRanges = 0;
        e.state = ObjectState.MARKED_FOR_DELETION;
    }

    private static void loseLiveRange(ObjectEntry e) {
        if (--e.liveRanges == 0 && e.state == ObjectState.COMMITTED) {
            e.state = ObjectState.MARKED_FOR_DELETION;
        }
    }

    public synchronized List<ObjectMetadata> getObjects(long streamId, long startOffset, long endOffset, int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be >= 1, was " + limit);
        }
        List<ObjectMetadata> result = new ArrayList<>();
        StreamEntry s = streams.get(streamId);
        if (s == null || startOffset >= endOffset) {
            return result;
        }
        Long from = s.index.floorKey(startOffset);
        if (from == null || s.index.get(from).range().endOffset() <= startOffset) {
            from = startOffset;
        }
        for (IndexedRange r : s.index.subMap(from, true, endOffset, false).values()) {
            if (result.size() == limit) {
                break;
            }
            result.add(objects.get(r.objectId()).toMetadata());
        }
        return result;
    }

    public synchronized List<ObjectMetadata> listObjects(ObjectState... states) {
        Objects.requireNonNull(states, "states");
        Set<ObjectState> wanted = states.length == 0 ? EnumSet.allOf(ObjectState.class) : EnumSet.noneOf(ObjectState.class);
        for (ObjectState state : states) {
            wanted.add(Objects.requireNonNull(state, "state"));
        }
        Instant now = clock.instant();
        List<ObjectMetadata> result = new ArrayList<>();
        for (ObjectEntry e : objects.values()) {
            ObjectState state = e.state == ObjectState.PREPARED && !now.isBefore(e.deadline)
                    ? ObjectState.MARKED_FOR_DELETION // due: reported as the next mutation will mark it
                    : e.state;
            if (wanted.contains(state)) {
                ObjectMetadata m = e.toMetadata();
                result.add(state == e.state ? m : new ObjectMetadata(m.objectId(), m.type(), m.sizeBytes(),
                        m.ranges(), m.nodeId(), m.committedAtMs(), state));
            }
        }
        return result;
    }

    synchronized void objectsDeleted(List<Long> objectIds) {
        expirePrepared();
        doObjectsDeleted(objectIds, false);
    }

    /**
     * Forgets objects whose deletion from the bucket is recorded: the entry and its adopted key go, so the manifest
     * holds what exists (or may still exist) and not the history of everything ever written. An id below
     * {@link #nextObjectId} that is not known any more was deleted already: a retried call is accepted.
     */
    private void doObjectsDeleted(List<Long> objectIds, boolean dryRun) {
        Objects.requireNonNull(objectIds, "objectIds");
        List<ObjectEntry> entries = new ArrayList<>(objectIds.size());
        for (Long id : objectIds) {
            Objects.requireNonNull(id, "object id");
            ObjectEntry e = objects.get(id);
            if (e == null) {
                if (id >= 0 && id < nextObjectId) {
                    continue; // deleted and forgotten before: a retried call
                }
                throw new MetadataConflictException("object " + id + " was never prepared");
            }
            boolean due = e.state == ObjectState.PREPARED && !now().isBefore(e.deadline); // expired, not yet marked
            if (e.state != ObjectState.MARKED_FOR_DELETION && !due) {
                throw new MetadataConflictException("object " + id + " is " + e.state
                        + ", not MARKED_FOR_DELETION; it must not be deleted from the bucket");
            }
            entries.add(e);
        }
        if (dryRun) {
            return;
        }
        for (ObjectEntry e : entries) {
            e.state = ObjectState.DELETED; // for the prepared-deadline queue, which may still hold the entry
            objects.remove(e.objectId);
            if (e.key != null) {
                adoptedKeys.remove(e.key);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------- key-value

    public synchronized Optional<byte[]> getKv(String key) {
        return kv.get(key);
    }

    synchronized void putKv(String key, byte[] value) {
        expirePrepared();
        kv.put(key, value, false);
    }

    synchronized void deleteKv(String key) {
        expirePrepared();
        kv.delete(key, false);
    }

    public synchronized SortedMap<String, byte[]> listKv(String prefix) {
        return kv.list(prefix);
    }

    synchronized boolean compareAndSetKv(String key, byte[] expected, byte[] value) {
        expirePrepared();
        return kv.compareAndSet(key, expected, value, false);
    }

    /** A key-value change by a node (a {@link ManifestOp.ByNode}), as of now. */
    synchronized Object changeKvByNode(ManifestOp.ByNode change) {
        expirePrepared();
        return dispatch(change, false);
    }

    /** Key-value changes by a node ({@link ManifestOp.ByNode#batch}), all or none, as of now. */
    synchronized void changeKvsByNode(List<ManifestOp> changes) {
        expirePrepared();
        for (ManifestOp change : changes) {
            dispatch(change, true);
        }
        for (ManifestOp change : changes) {
            dispatch(change, false);
        }
    }

    // ---------------------------------------------------------------------------------------------- snapshots

    /**
     * The whole state, in a form a checkpoint writes: every node epoch, stream (deleted ones are forgotten), object id
     * (with its prepared deadline) and key. Indexes and live-range counts are not part of it; {@link #restore}
     * derives them, because a committed object's live ranges are exactly its ranges of streams still known that end
     * above the stream's start offset.
     */
    public record Snapshot(long nextStreamId, long nextObjectId, SortedMap<Long, Long> nodeEpochs,
                           SortedMap<Long, Long> walPositions, List<StreamMetadata> streams, List<ObjectSnapshot> objects,
                           SortedMap<String, byte[]> kv) {
    }

    /** An object id in a {@link Snapshot}: its metadata, prepared deadline and whether it expired unused. */
    public record ObjectSnapshot(ObjectMetadata metadata, Instant deadline, boolean expired) {
    }

    /** Copies the state out (values of the key-value space are shared, not copied: nobody mutates them). */
    public synchronized Snapshot snapshot() {
        List<StreamMetadata> s = new ArrayList<>(streams.size());
        for (StreamEntry e : streams.values()) {
            s.add(e.toMetadata());
        }
        List<ObjectSnapshot> o = new ArrayList<>(objects.size());
        for (ObjectEntry e : objects.values()) {
            o.add(new ObjectSnapshot(e.toMetadata(), e.deadline, e.expired));
        }
        return new Snapshot(nextStreamId, nextObjectId, new TreeMap<>(nodeEpochs), new TreeMap<>(walPositions), s, o,
                kv.snapshot());
    }

    /** A manifest holding {@code snapshot}'s state, with indexes rebuilt; {@code clock} as for the constructor. */
    public static ManifestState restore(Snapshot snapshot, InstantSource clock) {
        ManifestState m = new ManifestState(clock);
        m.nextStreamId = snapshot.nextStreamId();
        m.nextObjectId = snapshot.nextObjectId();
        m.nodeEpochs.putAll(snapshot.nodeEpochs());
        m.walPositions.putAll(snapshot.walPositions());
        for (StreamMetadata sm : snapshot.streams()) {
            if (sm.state() == StreamState.DELETED) {
                continue; // a checkpoint written before deleted streams were forgotten (doDeleteStream)
            }
            StreamEntry s = new StreamEntry(sm.streamId(), sm.startOffset(), sm.tags());
            s.epoch = sm.epoch();
            s.endOffset = sm.endOffset();
            s.state = sm.state();
            s.ownerNodeId = sm.ownerNodeId();
            m.streams.put(s.streamId, s);
        }
        for (ObjectSnapshot os : snapshot.objects()) {
            ObjectMetadata om = os.metadata();
            if (om.state() == ObjectState.DELETED) {
                continue; // a checkpoint written before deleted objects were forgotten (doObjectsDeleted)
            }
            ObjectEntry e = new ObjectEntry(om.objectId(), os.deadline());
            e.type = om.type();
            e.sizeBytes = om.sizeBytes();
            e.ranges = om.ranges();
            e.nodeId = om.nodeId();
            e.committedAtMs = om.committedAtMs();
            e.state = om.state();
            e.expired = os.expired();
            e.key = om.key().equals(ObjectKeys.dataKey(om.objectId())) ? null : om.key();
            m.objects.put(e.objectId, e);
            if (e.key != null) {
                m.adoptedKeys.put(e.key, e.objectId);
            }
            if (e.state == ObjectState.PREPARED) {
                m.preparedByDeadline.add(e);
            } else if (e.state == ObjectState.COMMITTED) {
                for (StreamRange r : e.ranges) {
                    StreamEntry s = m.streams.get(r.streamId());
                    if (s != null && r.endOffset() > s.startOffset) {
                        s.index.put(r.startOffset(), new IndexedRange(e.objectId, r));
                        e.liveRanges++;
                    }
                }
            }
        }
        m.kv.restore(snapshot.kv());
        return m;
    }
}
