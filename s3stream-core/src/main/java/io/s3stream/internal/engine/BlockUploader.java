package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.s3stream.NodeFencedException;
import io.s3stream.StorageIOException;
import io.s3stream.internal.format.ObjectBuilder;
import io.s3stream.internal.metadata.Continuity;
import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.internal.util.Futures;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectKeys;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamMetadata;
import io.s3stream.spi.StreamRange;
import io.s3stream.spi.StreamState;
import io.s3stream.spi.WalRecordFormat;
import io.s3stream.spi.WalSegment;
import io.s3stream.spi.WriteAheadLog;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongUnaryOperator;

/**
 * Turns one sealed log-cache block into committed objects: the work of one upload, shared by the upload pipeline
 * ({@link Uploader}), recovery at start and the takeover of another node's WAL ({@link WalReplay}).
 *
 * <h2>Per block</h2>
 * <ol>
 *   <li><b>Adopt WAL segments.</b> When the WAL stores its records as objects in object format v1 (wal-object), every
 *       segment that ends inside the block is committed as it is (a stream set object under the segment's own key),
 *       for each stream whose records in that segment are exactly the block's acknowledged batches of that stream.
 *       A stream that does not match (its records straddle blocks, or a failed append left unacknowledged records in
 *       the segment) is left out of that segment's ranges; a segment may so be adopted with no range at all, and the
 *       manifest deletes it. Every segment is adopted exactly once: in the block where it ends.</li>
 *   <li><b>Upload the rest.</b> Batches no adopted segment covers are grouped by stream: a stream with at least
 *       {@code streamObjectThresholdBytes} becomes its own stream object, the rest share one stream set object. Ids are
 *       prepared (once per block: the attempts after a failure reuse them, so an outage adds no manifest entry per
 *       retry), objects written (multipart above {@code multipartThresholdBytes}).</li>
 *   <li><b>Commit</b> everything in one {@link CommitRequest} carrying the block's end as the node's WAL position.</li>
 * </ol>
 * A stream that was fenced or deleted meanwhile makes the commit fail; such streams are left out and the commit is
 * retried (their data stays out of the manifest; written objects expire with their prepared ids). A fenced node fails
 * with {@link NodeFencedException}.
 *
 * <h2>Data nobody needs</h2>
 * Batches of a destroyed stream ({@link #drop}) and batches wholly below a stream's committed trim point are not
 * written: a trim or a deletion is how a user frees space, and it must shrink an upload that a full disk or bucket
 * refuses rather than wait for it. Leaving a trimmed prefix out makes the stream's next range start past its committed
 * end; the manifest accepts such a gap when it lies wholly below the stream's start offset.
 *
 * <h2>Threading</h2>
 * Not thread-safe: one caller at a time (the uploader thread, or a recovery on its own thread). It blocks on the
 * object store and the manifest.
 */
final class BlockUploader {
    private static final System.Logger LOG = System.getLogger(BlockUploader.class.getName());
    private static final Duration PREPARED_TTL = Duration.ofHours(1);
    private static final long RETRY_PAUSE_MS = 200;
    private static final long WARNING_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);
    /** Part size of multipart uploads: large enough for throughput, small enough to send several at once. */
    static final int PART_SIZE_BYTES = 8 * 1024 * 1024;

    /** Sizes that shape the objects of an upload. */
    record Settings(long streamObjectThresholdBytes, int blockSizeBytes, long multipartThresholdBytes) {
    }

    /** Decides after each failed attempt whether to stop retrying. */
    @FunctionalInterface
    interface GiveUp {
        GiveUp NEVER = (attempts, cause) -> false;

        boolean after(int failedAttempts, Throwable cause);
    }

    /** What one upload did. */
    record Outcome(Set<Long> lostStreams, int adoptedSegments) {
    }

    private final ObjectStorage objects;
    private final MetadataStore metadata;
    private final WriteAheadLog wal;
    private final ByteBufAllocator alloc;
    private final long nodeId;
    private final long nodeEpoch;
    private final Settings settings;
    final LongAdder uploadedObjects = new LongAdder();
    final LongAdder uploadedBytes = new LongAdder();
    final LongAdder adoptedObjects = new LongAdder();
    final LongAdder adoptedBytes = new LongAdder();
    // Object ids prepared for the block being uploaded, kept across its failed attempts: a prepare is a manifest
    // commit, and a store that fails for minutes must not make the manifest grow by an entry per retry.
    private long reservedBlock = -1;
    /**
     * Streams destroyed on this node: their batches are left out of every upload from then on (their deletion is
     * committed, so nothing needs them), which is what lets a stream be destroyed while uploads fail — a full disk or
     * bucket — and shrinks what is left to write.
     */
    private final Set<Long> dropped = ConcurrentHashMap.newKeySet();
    /** A stream's start offset as committed in the manifest, or -1 when unknown here (see the constructor). */
    private final LongUnaryOperator committedStart;
    private long reservedFirstId;
    private int reservedCount;
    private long reservedAtNanos;

    /**
     * @param nodeId         the node whose WAL the block came from, committing at {@code nodeEpoch}; a takeover
     *                       commits as the dead node at the epoch that fenced it
     * @param committedStart a stream's start offset once the manifest has committed it, or -1 when unknown; batches
     *                       wholly below it are left out of uploads. It must never answer an offset the manifest has
     *                       not committed as the stream's start.
     */
    BlockUploader(ObjectStorage objects, MetadataStore metadata, WriteAheadLog wal, ByteBufAllocator alloc,
                  long nodeId, long nodeEpoch, Settings settings, LongUnaryOperator committedStart) {
        this.objects = objects;
        this.metadata = metadata;
        this.wal = wal;
        this.alloc = alloc;
        this.nodeId = nodeId;
        this.nodeEpoch = nodeEpoch;
        this.settings = settings;
        this.committedStart = committedStart;
    }

    /**
     * Leaves {@code streamId}'s batches out of every upload from now on, the one being retried included. Only for a
     * stream whose deletion the manifest has committed: its records are then needed nowhere.
     */
    void drop(long streamId) {
        dropped.add(streamId);
    }

    /** Uploads and commits the block (see the class comment); throws what the store or manifest threw. */
    Outcome upload(LogCache.Block block) {
        List<LogCache.Run> runs = block.runsInOrder();
        List<WalSegment> segments = segmentsEndingIn(block);
        Set<Long> excluded = new HashSet<>();
        for (LogCache.Run run : runs) {
            if (dropped.contains(run.streamId)) {
                excluded.add(run.streamId);
            }
        }
        Set<CachedBatch> trimmed = trimmedBatches(runs);
        while (true) {
            List<CommitRequest.NewObject> adopted = new ArrayList<>(segments.size());
            Set<CachedBatch> covered = Collections.newSetFromMap(new IdentityHashMap<>());
            covered.addAll(trimmed); // "covered" by nothing: not written at all
            for (WalSegment segment : segments) {
                adopted.add(adopt(segment, runs, excluded, covered));
            }
            List<LogCache.Run> rest = new ArrayList<>();
            for (LogCache.Run run : runs) {
                if (!excluded.contains(run.streamId)) {
                    rest.add(run);
                }
            }
            List<CommitRequest.NewObject> written = writeUncovered(block, rest, covered);
            List<CommitRequest.NewObject> all = new ArrayList<>(adopted);
            all.addAll(written);
            if (all.isEmpty()) {
                return new Outcome(excluded, 0);
            }
            try {
                metadata.commitObjects(new CommitRequest(nodeId, nodeEpoch, all, List.of(),
                        block.walNextPosition)).join();
                for (CommitRequest.NewObject o : written) {
                    uploadedObjects.increment();
                    uploadedBytes.add(o.sizeBytes());
                }
                for (CommitRequest.NewObject o : adopted) {
                    adoptedObjects.increment();
                    adoptedBytes.add(o.sizeBytes());
                }
                reservedBlock = -1; // committed: the ids are used up
                return new Outcome(excluded, adopted.size());
            } catch (CompletionException e) {
                Throwable cause = Futures.unwrap(e);
                if (cause instanceof NodeFencedException nfe) {
                    throw nfe;
                }
                Set<Long> dead = streamsThatCannotCommit(runs, excluded);
                if (dead.isEmpty()) {
                    throw e;
                }
                LOG.log(System.Logger.Level.WARNING, "streams " + dead + " were fenced or deleted before their data "
                        + "was committed; leaving it out of the upload: " + cause.getMessage());
                excluded.addAll(dead);
            }
        }
    }

    /**
     * {@link #upload}, repeated after a pause while it fails, until it succeeds or {@code giveUp} says so (then the
     * last failure is thrown). A fenced node is never retried.
     */
    Outcome uploadRetrying(LogCache.Block block, GiveUp giveUp) {
        int attempt = 0;
        long firstFailure = 0;
        long lastWarning = 0;
        while (true) {
            try {
                Outcome outcome = upload(block);
                if (attempt > 0) {
                    int failed = attempt;
                    long seconds = (System.nanoTime() - firstFailure) / 1_000_000_000L;
                    LOG.log(System.Logger.Level.INFO, () -> "upload of log cache block " + block.id
                            + " succeeded after " + failed + " failed attempts over " + seconds + " s");
                }
                return outcome;
            } catch (RuntimeException e) {
                Throwable cause = Futures.unwrap(e);
                if (cause instanceof NodeFencedException nfe) {
                    throw nfe;
                }
                attempt++;
                if (giveUp.after(attempt, cause)) {
                    throw e;
                }
                // One warning when the failure starts, then one a minute while it lasts: a store that is down for an
                // hour must not write a line every few seconds.
                long now = System.nanoTime();
                if (attempt == 1) {
                    firstFailure = now;
                    lastWarning = now;
                    LOG.log(System.Logger.Level.WARNING, "upload of log cache block " + block.id
                            + " failed, retrying: " + e);
                } else if (now - lastWarning >= WARNING_INTERVAL_NANOS) {
                    lastWarning = now;
                    LOG.log(System.Logger.Level.WARNING, "upload of log cache block " + block.id + " still failing: "
                            + attempt + " attempts over " + (now - firstFailure) / 1_000_000_000L
                            + " s; last error: " + e);
                }
                try {
                    Thread.sleep(Math.min(5_000, RETRY_PAUSE_MS * attempt));
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new StorageIOException("upload interrupted", ie);
                }
            }
        }
    }

    /**
     * The block's batches that lie wholly below their stream's committed start offset. They are a prefix of each
     * stream's batches, so what remains of a stream starts at or below its start offset.
     */
    private Set<CachedBatch> trimmedBatches(List<LogCache.Run> runs) {
        Set<CachedBatch> out = Collections.newSetFromMap(new IdentityHashMap<>());
        for (LogCache.Run run : runs) {
            long start = committedStart.applyAsLong(run.streamId);
            if (start <= run.startOffset) {
                continue;
            }
            for (CachedBatch b : run.batches) {
                if (b.endOffset() > start) {
                    break;
                }
                out.add(b);
            }
        }
        return out;
    }

    /** Segments of the WAL that end inside the block, or none when the WAL has no segments. */
    private List<WalSegment> segmentsEndingIn(LogCache.Block block) {
        if (block.walStartPosition < 0 || block.walNextPosition <= block.walStartPosition) {
            return List.of();
        }
        List<WalSegment> out = new ArrayList<>();
        for (WalSegment s : wal.segments(block.walStartPosition, block.walNextPosition)) {
            if (s.endPosition() > block.walStartPosition && s.endPosition() <= block.walNextPosition) {
                out.add(s);
            }
        }
        return out;
    }

    /**
     * The segment as an adopted object holding the ranges of the streams whose acknowledged batches in this block are
     * exactly the segment's records of that stream; those batches are added to {@code covered}.
     */
    private static CommitRequest.NewObject adopt(WalSegment segment, List<LogCache.Run> runs, Set<Long> excluded,
                                                 Set<CachedBatch> covered) {
        List<StreamRange> kept = new ArrayList<>(segment.ranges().size());
        for (StreamRange range : segment.ranges()) {
            if (excluded.contains(range.streamId())) {
                continue;
            }
            List<CachedBatch> inSegment = new ArrayList<>();
            for (LogCache.Run run : runs) {
                if (run.streamId != range.streamId()) {
                    continue;
                }
                for (CachedBatch b : run.batches) {
                    if (b.walNextPosition > segment.startPosition() && b.walNextPosition <= segment.endPosition()) {
                        inSegment.add(b);
                    }
                }
            }
            if (matches(range, inSegment)) {
                kept.add(range);
                covered.addAll(inSegment);
            }
        }
        return CommitRequest.NewObject.adopted(segment.key(), segment.sizeBytes(), kept);
    }

    /** Whether {@code batches} (in WAL order) are exactly the contiguous range {@code range} at its epoch. */
    private static boolean matches(StreamRange range, List<CachedBatch> batches) {
        if (batches.isEmpty()) {
            return false;
        }
        long next = range.startOffset();
        for (CachedBatch b : batches) {
            if (b.baseOffset != next || b.epoch != range.epoch()) {
                return false;
            }
            next = b.endOffset();
        }
        return next == range.endOffset();
    }

    /** Writes the batches not covered by adopted segments as one stream set object plus stream objects. */
    private List<CommitRequest.NewObject> writeUncovered(LogCache.Block block, List<LogCache.Run> runs,
                                                         Set<CachedBatch> covered) {
        List<List<CachedBatch>> byStream = new ArrayList<>();
        Map<Long, Long> bytesByStream = new LinkedHashMap<>();
        long currentStream = Long.MIN_VALUE;
        long currentBytes = 0;
        int total = 0;
        for (LogCache.Run run : runs) {
            total += run.batches.size();
            List<CachedBatch> kept = run.batches; // usually whole (a sealed block's runs no longer change)
            long keptBytes = run.bytes;
            if (!covered.isEmpty()) {
                kept = new ArrayList<>(run.batches.size());
                keptBytes = 0;
                for (CachedBatch b : run.batches) {
                    if (!covered.contains(b)) {
                        kept.add(b);
                        keptBytes += b.sizeBytes();
                    }
                }
                if (kept.isEmpty()) {
                    continue;
                }
            }
            if (run.streamId != currentStream) {
                if (currentBytes > 0) {
                    bytesByStream.merge(currentStream, currentBytes, Long::sum);
                }
                byStream.add(kept);
                currentStream = run.streamId;
                currentBytes = 0;
            } else {
                List<CachedBatch> joined = new ArrayList<>(byStream.getLast()); // the stream's next epoch
                joined.addAll(kept);
                byStream.set(byStream.size() - 1, joined);
            }
            currentBytes += keptBytes; // summed per stream, not boxed per batch
        }
        if (currentBytes > 0) {
            bytesByStream.merge(currentStream, currentBytes, Long::sum);
        }
        if (byStream.isEmpty()) {
            return List.of();
        }
        List<List<CachedBatch>> groups = new ArrayList<>();
        List<ObjectType> types = new ArrayList<>();
        List<CachedBatch> setBatches = null; // sized on first use: a block holds thousands of batches
        for (List<CachedBatch> stream : byStream) {
            if (bytesByStream.get(stream.getFirst().streamId) >= settings.streamObjectThresholdBytes()) {
                groups.add(stream);
                types.add(ObjectType.STREAM);
            } else {
                if (setBatches == null) {
                    setBatches = new ArrayList<>(total);
                }
                setBatches.addAll(stream);
            }
        }
        if (setBatches != null) {
            groups.add(setBatches);
            types.add(ObjectType.STREAM_SET);
        }
        long firstId = prepare(block, groups.size());
        List<CommitRequest.NewObject> out = new ArrayList<>(groups.size());
        for (int i = 0; i < groups.size(); i++) {
            out.add(writeObject(firstId + i, types.get(i), groups.get(i)));
        }
        return out;
    }

    /**
     * The first of {@code count} prepared object ids for {@code block}: those of its previous, failed attempt while they
     * are fresh (an uncommitted object under a reused id is simply written again), else newly prepared ones.
     */
    private long prepare(LogCache.Block block, int count) {
        long now = System.nanoTime();
        if (reservedBlock == block.id && count <= reservedCount && now - reservedAtNanos < PREPARED_TTL.toNanos() / 2) {
            return reservedFirstId;
        }
        long firstId = metadata.prepareObjects(count, PREPARED_TTL).join();
        reservedBlock = block.id;
        reservedFirstId = firstId;
        reservedCount = count;
        reservedAtNanos = now;
        return firstId;
    }

    private CommitRequest.NewObject writeObject(long objectId, ObjectType type, List<CachedBatch> batches) {
        List<StreamRange> ranges = new ArrayList<>();
        ByteBuf object;
        try (ObjectBuilder builder = new ObjectBuilder(alloc, settings.blockSizeBytes())) {
            // One range per run of contiguous batches of one stream and epoch, made when the run ends.
            CachedBatch first = null;
            CachedBatch last = null;
            for (CachedBatch b : batches) {
                if (b.view != null) {
                    builder.add(b.streamId, b.baseOffset, b.count, b.view, b.index + WalRecordFormat.HEADER_SIZE,
                            b.payloadBytes());
                } else {
                    // A recovered record: the uploading thread is the only user of its internal NIO view.
                    builder.add(b.streamId, b.baseOffset, b.count, b.buffer, b.index + WalRecordFormat.HEADER_SIZE,
                            b.payloadBytes(), true);
                }
                if (last != null && (last.streamId != b.streamId || last.endOffset() != b.baseOffset
                        || last.epoch != b.epoch)) {
                    ranges.add(new StreamRange(first.streamId, first.epoch, first.baseOffset, last.endOffset()));
                    first = null;
                }
                if (first == null) {
                    first = b;
                }
                last = b;
            }
            if (last != null) {
                ranges.add(new StreamRange(first.streamId, first.epoch, first.baseOffset, last.endOffset()));
            }
            object = builder.build();
        }
        long size = object.readableBytes();
        try {
            String key = ObjectKeys.dataKey(objectId);
            if (size > settings.multipartThresholdBytes()) {
                // Parts go out concurrently; a failed upload is aborted and the whole object retried by the caller.
                objects.putMultipart(key, object, PART_SIZE_BYTES, ObjectStorage.Priority.UPLOAD).join();
            } else {
                objects.put(key, object, ObjectStorage.Priority.UPLOAD).join();
            }
        } finally {
            object.release();
        }
        return new CommitRequest.NewObject(objectId, type, size, ranges);
    }

    /** Streams of the block that moved on (deleted, newer epoch, or end offset no longer matching). */
    private Set<Long> streamsThatCannotCommit(List<LogCache.Run> runs, Set<Long> excluded) {
        Set<Long> dead = new HashSet<>();
        Map<Long, LogCache.Run> firstRun = new LinkedHashMap<>();
        for (LogCache.Run run : runs) {
            if (!excluded.contains(run.streamId)) {
                firstRun.putIfAbsent(run.streamId, run);
            }
        }
        for (Map.Entry<Long, LogCache.Run> e : firstRun.entrySet()) {
            Optional<StreamMetadata> meta = metadata.getStream(e.getKey()).join();
            LogCache.Run run = e.getValue();
            if (meta.isEmpty() || meta.get().state() == StreamState.DELETED || meta.get().epoch() > run.epoch
                    || !Continuity.continuesAt(meta.get().endOffset(), meta.get().startOffset(), run.startOffset)) {
                dead.add(e.getKey());
            }
        }
        return dead;
    }
}
