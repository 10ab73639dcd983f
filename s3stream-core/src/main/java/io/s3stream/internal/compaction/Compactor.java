package io.s3stream.internal.compaction;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.s3stream.CorruptDataException;
import io.s3stream.KeyCompaction;
import io.s3stream.StorageConfig;
import io.s3stream.internal.format.DataBlock;
import io.s3stream.internal.format.IndexEntry;
import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.internal.util.Executors2;
import io.s3stream.internal.util.Futures;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.MetadataConflictException;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectKeys;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamMetadata;
import io.s3stream.spi.StreamRange;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Keeps one node's objects few, young and free of dead data, and deletes retired objects from the bucket.
 *
 * <h2>Policy</h2>
 * Every {@code compactionInterval} one round runs, in this order:
 * <ol>
 *   <li><b>Deletion</b> ({@link RetiredObjects}). Objects the manifest marked for deletion (compaction inputs,
 *       objects whose data was all trimmed or whose streams were destroyed, prepared ids that expired unused) are
 *       deleted from the bucket once they have been seen marked for {@code objectDeletionGracePeriod}, in batches,
 *       then reported with {@link MetadataStore#objectsDeleted}. The first sighting is remembered in memory: after a
 *       restart the clock starts again, which only ever delays a deletion, never hastens it. Deletion also runs
 *       every interval on a thread of its own, so a slow or stuck round never holds space back (a round running
 *       for more than 10 minutes is reported with the compactor's stack).</li>
 *   <li><b>Stream set objects</b> (this node's only). Inputs: every <em>fresh</em> SSO (written by an upload), plus the
 *       earlier <em>residual</em> SSOs of this compactor once their data is older than {@code compactionMaxAge} or
 *       their dead share reaches {@code compactionDeadShareThreshold}. Each stream's live data in the inputs forms
 *       contiguous segments; a segment becomes its own stream object when it has at least
 *       {@code streamObjectThresholdBytes}, when its data is older than the max age, or when the stream has more than
 *       one segment; all other segments go into one new residual SSO. Data below a stream's start offset and data of
 *       destroyed streams are dropped. Residual SSOs are not merged again until they age out, so a byte passes through
 *       SSO compaction at most twice.</li>
 *   <li><b>Stream objects.</b> Per stream, adjacent stream objects smaller than half of
 *       {@code streamObjectTargetBytes} are merged, greedily in offset order, up to the target; a group is merged once
 *       it holds half the target or eight objects, and a single object is rewritten when its dead share reaches the
 *       threshold. Ranges of whole input blocks that start at a part boundary and hold at least the store's minimum
 *       part size are copied server-side ({@code UploadPartCopy}); everything else passes through the node.</li>
 * </ol>
 * Objects wholly below a stream's start offset need no rewrite: the manifest marks them itself.
 *
 * <h2>Concurrency</h2>
 * One owner thread per engine does everything above, one run at a time; other threads only ask for a round
 * ({@link #runNow()}). A run reads the manifest, writes outputs under freshly prepared ids, and commits once: the
 * outputs and the retirement of the inputs are one atomic manifest change, checked by the manifest (outputs must lie
 * inside the inputs and cover their live data). Appends, uploads and trims run meanwhile: a trim that races with a run
 * only makes some output data dead on arrival; an input retired meanwhile (its data trimmed away) makes the commit
 * fail, and the next round plans again. Readers that looked up an input just before the commit still find it in the
 * bucket for the grace period, and a reader that does hit a deleted object re-queries the manifest.
 *
 * <h2>Memory</h2>
 * Never an object set in memory: inputs are read with ranged GETs in spans of whole blocks
 * ({@link SpanReader}, two spans per input at most), outputs are written block by block into multipart parts
 * ({@link ObjectWriter}). The number of SSO inputs per run is capped so the read-ahead of all inputs plus one part
 * fits {@code compactionMemoryBytes}; {@link Stats#memoryPeakBytes()} reports what was actually held.
 *
 * <h2>Failure</h2>
 * A run that fails changes nothing in the manifest. Outputs written before the failure are deleted at once when the
 * commit was never attempted or was refused; when the commit's outcome is unknown they are left to the prepared-id
 * expiry ({@code compactionRunTimeout}), after which the deletion pass removes them if they were not committed. An
 * input whose block or index fails its CRC stops the run with a {@link CompactionException} naming the object; the
 * object stays referenced (readers get the same error), is left out of later runs until restart, and corrupt bytes
 * are never copied through the node into a new object with a fresh CRC. Object-store errors are retried below, in
 * {@link ObjectStorage}, under the shared budget.
 *
 * <h2>Cost</h2>
 * Per SSO run: one tail GET per input, about one ranged GET per input per memory chunk, one PUT (or a multipart upload)
 * per output, one commit. Per SO merge: one tail GET per input and the part uploads or copies of one output. Deletions
 * cost one batched DELETE per thousand objects. Bytes through the node are throttled to
 * {@code compactionBytesPerSecond}; server-side copies move no bytes through the node, except on a store that copies on
 * this node ({@code file://}), where they are throttled too ({@link ObjectWriter}, "Throttle").
 */
public final class Compactor implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Compactor.class.getName());
    private static final int MAX_SMALL_OBJECTS_PER_GROUP = 8;
    private static final int MAX_SSO_RUNS_PER_ROUND = 8;
    private static final long MIN_CHUNK_BYTES = 64 * 1024;

    /**
     * The settings the compactor uses, taken from {@link StorageConfig}.
     *
     * @param interval                pause between rounds
     * @param maxAge                  SSO data older than this is split out
     * @param streamObjectThreshold   segment size that earns a stream object
     * @param streamObjectTarget      merge target of stream objects
     * @param deadShareThreshold      dead share that triggers a rewrite
     * @param gracePeriod             how long marked objects stay in the bucket
     * @param bytesPerSecond          throttle
     * @param concurrency             requests in flight per run
     * @param memoryBytes             memory budget
     * @param runTimeout              time-to-live of a run's prepared output ids
     * @param blockSizeBytes          target block size of outputs
     * @param keyMapBytes             memory of key compaction's key map
     */
    public record Settings(Duration interval, Duration maxAge, long streamObjectThreshold, long streamObjectTarget,
                           double deadShareThreshold, Duration gracePeriod, long bytesPerSecond, int concurrency,
                           long memoryBytes, Duration runTimeout, int blockSizeBytes, long keyMapBytes) {
        public static Settings of(StorageConfig c) {
            return new Settings(c.compactionInterval(), c.compactionMaxAge(), c.streamObjectThresholdBytes(),
                    c.streamObjectTargetBytes(), c.compactionDeadShareThreshold(), c.objectDeletionGracePeriod(),
                    c.compactionBytesPerSecond(), c.compactionConcurrency(), c.compactionMemoryBytes(),
                    c.compactionRunTimeout(), c.objectBlockSizeBytes(), c.keyCompactionMapBytes());
        }
    }

    /**
     * Counters since start.
     *
     * @param runs                 compaction runs that committed
     * @param failedRuns           runs that failed (nothing committed)
     * @param inputObjects         objects retired by compaction
     * @param outputObjects        objects written by compaction
     * @param bytesRead            bytes read through the node
     * @param bytesWritten         bytes of blocks written through the node
     * @param bytesCopied          bytes copied server-side
     * @param objectsDeleted       objects deleted from the bucket
     * @param memoryPeakBytes      most buffer memory held at once
     * @param keyCompactionRuns    key compaction runs that committed
     * @param keyCompactionBytesIn bytes of blocks key compaction rewrote
     * @param keyCompactionBytesOut bytes of blocks key compaction wrote in their place
     * @param lastError            message of the latest failure, or null
     */
    public record Stats(long runs, long failedRuns, long inputObjects, long outputObjects, long bytesRead,
                        long bytesWritten, long bytesCopied, long objectsDeleted, long memoryPeakBytes,
                        long keyCompactionRuns, long keyCompactionBytesIn, long keyCompactionBytesOut,
                        String lastError) {
    }

    private final Settings settings;
    private final ObjectStorage store;
    private final MetadataStore metadata;
    private final ByteBufAllocator alloc;
    private final long nodeId;
    private final long nodeEpoch;
    private final RetiredObjects retired;
    private final ScheduledExecutorService thread;
    private final DeletionLoop deletion;
    private final MemoryGauge gauge = new MemoryGauge();
    private final Throttle throttle;
    private final Supplier<Map<Long, KeyCompaction>> keyCompacted;
    private final KeyCompactor keyCompactor;

    // Owner-thread state.
    /** Residual SSOs this compactor wrote, with the commit time (ms) of the oldest data in them. */
    private final Map<Long, Long> residualDataTimeMs = new HashMap<>();
    private final Set<Long> quarantined = new HashSet<>();

    private final LongAdder runs = new LongAdder();
    private final LongAdder failedRuns = new LongAdder();
    private final LongAdder inputObjects = new LongAdder();
    private final LongAdder outputObjects = new LongAdder();
    private final LongAdder bytesRead = new LongAdder();
    private final LongAdder bytesWritten = new LongAdder();
    private final LongAdder bytesCopied = new LongAdder();
    private final LongAdder objectsDeleted = new LongAdder();
    private final LongAdder keyRuns = new LongAdder();
    private final LongAdder keyBytesIn = new LongAdder();
    private final LongAdder keyBytesOut = new LongAdder();
    private volatile String lastError;
    private volatile boolean closed;

    /**
     * @param onDeleted called with each object id deleted from the bucket (the engine forgets its cached index)
     * @param nanoClock the clock that times the deletion grace period, like {@link System#nanoTime()}
     * @param keyCompacted the streams open on this node whose embedder asked for key compaction, by id
     */
    public Compactor(Settings settings, ObjectStorage store, MetadataStore metadata, ByteBufAllocator alloc,
                     long nodeId, long nodeEpoch, LongConsumer onDeleted, LongSupplier nanoClock,
                     Supplier<Map<Long, KeyCompaction>> keyCompacted) {
        this.settings = settings;
        this.store = store;
        this.metadata = metadata;
        this.alloc = alloc;
        this.nodeId = nodeId;
        this.nodeEpoch = nodeEpoch;
        this.retired = new RetiredObjects(store, metadata, settings.gracePeriod(), nanoClock, id -> {
            residualDataTimeMs.remove(id);
            onDeleted.accept(id);
        });
        this.throttle = new Throttle(settings.bytesPerSecond());
        this.keyCompacted = keyCompacted;
        this.keyCompactor = new KeyCompactor(this, metadata, settings.keyMapBytes(),
                Math.max(MIN_CHUNK_BYTES, settings.memoryBytes() / 4));
        this.thread = Executors.newSingleThreadScheduledExecutor(
                r -> Thread.ofPlatform().daemon().name("s3stream-compactor").unstarted(r));
        this.deletion = new DeletionLoop(retired, objectsDeleted::add, this::noteFailure);
    }

    /** Schedules rounds every interval (the first after one interval). */
    public void start() {
        long ms = settings.interval().toMillis();
        thread.scheduleWithFixedDelay(this::round, ms, ms, TimeUnit.MILLISECONDS);
        deletion.start(ms);
    }

    /** Runs one whole round (deletion, SSO and SO compaction) on the owner thread and waits for it. */
    public Stats runNow() {
        try {
            thread.submit(this::round).get(10, TimeUnit.MINUTES);
        } catch (ExecutionException e) {
            throw new CompactionException("compaction round failed", e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CompactionException("interrupted", e);
        } catch (TimeoutException e) {
            throw new CompactionException("compaction round did not finish in 10 minutes", e);
        }
        return stats();
    }

    public Stats stats() {
        return new Stats(runs.sum(), failedRuns.sum(), inputObjects.sum(), outputObjects.sum(), bytesRead.sum(),
                bytesWritten.sum(), bytesCopied.sum(), objectsDeleted.sum(), gauge.peak(), keyRuns.sum(), keyBytesIn.sum(),
                keyBytesOut.sum(), lastError);
    }

    private void round() {
        if (closed) {
            return;
        }
        deletion.roundStarted();
        try {
            roundSteps();
        } finally {
            deletion.roundEnded();
        }
    }

    private void roundSteps() {
        try {
            deletion.deleteDue();
        } catch (RuntimeException e) {
            noteFailure("deletion pass failed", e);
        }
        try {
            for (int i = 0; i < MAX_SSO_RUNS_PER_ROUND && !closed && compactStreamSetObjects(); i++) {
                // each run takes as many inputs as the memory budget allows; repeat while there is work
            }
        } catch (RuntimeException e) {
            noteFailure("stream set object compaction failed", e);
        }
        try {
            compactKeys();
        } catch (RuntimeException e) {
            noteFailure("key compaction failed", e);
        }
        try {
            compactStreamObjects();
        } catch (RuntimeException e) {
            noteFailure("stream object compaction failed", e);
        }
    }

    private void noteFailure(String what, RuntimeException e) {
        failedRuns.increment();
        Throwable cause = Futures.unwrap(e);
        lastError = what + ": " + cause.getMessage();
        LOG.log(System.Logger.Level.WARNING, lastError, cause);
    }

    // ------------------------------------------------------------------------------------------------ planning

    /** Live share of an object's offsets, by range (the manifest knows offsets, not bytes per range). */
    private static double deadShare(ObjectMetadata o, Map<Long, StreamMetadata> streams) {
        double dead = 0;
        for (StreamRange r : o.ranges()) {
            StreamMetadata s = streams.get(r.streamId());
            if (s == null) {
                dead += 1;
            } else if (s.startOffset() > r.startOffset()) {
                dead += (double) (Math.min(s.startOffset(), r.endOffset()) - r.startOffset())
                        / (r.endOffset() - r.startOffset());
            }
        }
        return o.ranges().isEmpty() ? 0 : dead / o.ranges().size();
    }

    /**
     * Whether {@code o} really holds at least the threshold share of dead bytes. The offset-based estimate can only
     * say "maybe": a block that straddles a stream's start offset must be kept whole, so an object rewritten without its
     * dead blocks may still look dead by offsets. The exact answer reads the index (one tail GET).
     */
    private boolean worthRewriting(ObjectMetadata o, Map<Long, StreamMetadata> streams) {
        if (deadShare(o, streams) < settings.deadShareThreshold()) {
            return false;
        }
        InputObject in = loadInput(o);
        long dead = 0;
        long total = 0;
        for (IndexEntry e : in.index().entries()) {
            StreamMetadata s = streams.get(e.streamId());
            total += e.sizeBytes();
            if (s == null || e.endOffset() <= s.startOffset()) {
                dead += e.sizeBytes();
            }
        }
        return total > 0 && (double) dead / total >= settings.deadShareThreshold();
    }

    private Map<Long, StreamMetadata> liveStreams() {
        Map<Long, StreamMetadata> out = new HashMap<>();
        for (StreamMetadata s : metadata.listStreams().join()) {
            out.put(s.streamId(), s);
        }
        return out;
    }

    private long dataTimeMs(ObjectMetadata o) {
        return residualDataTimeMs.getOrDefault(o.objectId(), o.committedAtMs());
    }

    /** One SSO compaction run; returns whether it committed (so another may follow). */
    private boolean compactStreamSetObjects() {
        long nowMs = System.currentTimeMillis();
        long maxAgeMs = settings.maxAge().toMillis();
        Map<Long, StreamMetadata> streams = liveStreams();
        List<ObjectMetadata> candidates = new ArrayList<>();
        boolean urgent = false;
        Set<Long> keyed = keyCompacted.get().keySet();
        for (ObjectMetadata o : metadata.listObjects(ObjectState.COMMITTED).join()) {
            if (o.type() != ObjectType.STREAM_SET || o.nodeId() != nodeId || quarantined.contains(o.objectId())) {
                continue;
            }
            // Key compaction only rewrites stream objects: a key-compacted stream's data is split out at once.
            boolean old = dataTimeMs(o) <= nowMs - maxAgeMs
                    || o.ranges().stream().anyMatch(r -> keyed.contains(r.streamId()));
            boolean dead = worthRewriting(o, streams);
            if (residualDataTimeMs.containsKey(o.objectId()) && !old && !dead) {
                continue; // a young residual: left alone until it ages out
            }
            urgent |= old || dead;
            candidates.add(o);
        }
        if (candidates.size() < 2 && !urgent) {
            return false;
        }
        int maxInputs = (int) Math.max(2, settings.memoryBytes() / 2 / (2L * Math.max(MIN_CHUNK_BYTES,
                settings.blockSizeBytes())));
        List<ObjectMetadata> chosen = candidates.subList(0, Math.min(candidates.size(), maxInputs));
        long chunkBytes = Math.max(Math.max(MIN_CHUNK_BYTES, settings.blockSizeBytes()),
                settings.memoryBytes() / 2 / (2L * chosen.size()));

        List<InputObject> inputs = new ArrayList<>();
        for (ObjectMetadata o : chosen) {
            inputs.add(loadInput(o));
        }
        SsoPlan plan = SsoPlan.of(inputs, streams, this::dataTimeMs, nowMs, maxAgeMs, settings.streamObjectThreshold(),
                keyed::contains);
        List<SsoPlan.Segment> segments = plan.segments();
        List<SsoPlan.Segment> residual = plan.residual();
        int outputs = plan.outputs();
        long residualDataMs = plan.residualDataMs(nowMs);

        Map<InputObject, SpanReader> readers = new LinkedHashMap<>();
        List<ObjectWriter> writers = new ArrayList<>();
        List<CommitRequest.NewObject> written = new ArrayList<>();
        boolean commitAttempted = false;
        try {
            long firstId = outputs == 0 ? -1 : metadata.prepareObjects(outputs, settings.runTimeout()).join();
            long nextId = firstId;
            for (InputObject in : inputs) {
                readers.put(in, new SpanReader(store, in.key(), plan.blocksOf(in), chunkBytes, 1, gauge, throttle));
            }
            ObjectWriter residualWriter = null;
            long residualId = -1;
            Map<Long, Long> epochs = new HashMap<>();
            if (!residual.isEmpty()) {
                residualId = nextId++;
                residualWriter = newWriter(residualId);
                writers.add(residualWriter);
            }
            for (SsoPlan.Segment seg : segments) {
                epochs.merge(seg.streamId(), seg.pieces().stream().mapToLong(SsoPlan.Piece::epoch).max().orElse(0),
                        Math::max);
                if (seg.ownObject()) {
                    long id = nextId++;
                    try (ObjectWriter w = newWriter(id)) {
                        copyThroughNode(seg.pieces(), readers, w);
                        long size = w.finish();
                        account(w);
                        written.add(new CommitRequest.NewObject(id, ObjectType.STREAM, size, w.ranges(epochs::get)));
                        writers.add(w);
                    }
                } else {
                    copyThroughNode(seg.pieces(), readers, residualWriter);
                }
            }
            if (residualWriter != null) {
                long size = residualWriter.finish();
                account(residualWriter);
                written.add(new CommitRequest.NewObject(residualId, ObjectType.STREAM_SET, size,
                        residualWriter.ranges(epochs::get)));
            }
            readers.values().forEach(SpanReader::close);
            commitAttempted = true;
            List<Long> inputIds = inputs.stream().map(InputObject::objectId).toList();
            metadata.commitObjects(new CommitRequest(nodeId, nodeEpoch, written, inputIds)).join();
            if (residualId >= 0) {
                residualDataTimeMs.put(residualId, residualDataMs);
            }
            inputIds.forEach(residualDataTimeMs::remove);
            runs.increment();
            inputObjects.add(inputIds.size());
            outputObjects.add(written.size());
            LOG.log(System.Logger.Level.DEBUG, "compacted {0} stream set objects into {1} objects", inputIds.size(),
                    written.size());
            return true;
        } catch (RuntimeException e) {
            cleanUpFailedRun(written, writers, commitAttempted, e);
            throw failure("stream set objects " + chosen.stream().map(ObjectMetadata::key).toList(), e);
        } finally {
            readers.values().forEach(SpanReader::close);
            for (ObjectWriter w : writers) {
                w.close();
            }
        }
    }

    InputObject loadInput(ObjectMetadata o) {
        try {
            return InputObject.load(store, o);
        } catch (RuntimeException e) {
            if (Futures.unwrap(e) instanceof CorruptDataException) {
                quarantined.add(o.objectId());
            }
            throw e;
        }
    }

    ObjectWriter newWriter(long objectId) {
        int minPart = store.backend().minPartSizeBytes();
        // A whole number of 64 KiB: a store writing parts in place with direct IO then writes whole pages only.
        int partSize = (int) Math.max(minPart, Math.min(16L << 20, settings.memoryBytes() / 4) & -(64L << 10));
        return new ObjectWriter(store, alloc, ObjectKeys.dataKey(objectId), partSize, minPart,
                settings.blockSizeBytes(), Math.max(1, settings.concurrency() / 2), gauge, throttle);
    }

    void account(ObjectWriter w) {
        bytesWritten.add(w.writtenThroughNodeBytes);
        bytesCopied.add(w.copiedBytes);
    }

    /** Reads each piece's blocks from its input's reader, verifies them, and adds them to {@code out}. */
    private void copyThroughNode(List<SsoPlan.Piece> pieces, Map<InputObject, SpanReader> readers, ObjectWriter out) {
        for (SsoPlan.Piece p : pieces) {
            SpanReader reader = readers.get(p.input());
            for (IndexEntry expected : p.blocks()) {
                ByteBuf block = reader.next();
                if (block == null || !reader.lastEntry().equals(expected)) {
                    if (block != null) {
                        block.release();
                    }
                    throw new CompactionException("reading " + p.input().key() + " out of order at " + expected);
                }
                try {
                    addVerified(p.input(), expected, block, out);
                } finally {
                    block.release();
                }
            }
        }
    }

    private void addVerified(InputObject input, IndexEntry entry, ByteBuf block, ObjectWriter out) {
        int batches;
        try {
            batches = DataBlock.decode(block, entry, input.key()).size();
        } catch (CorruptDataException e) {
            throw corruptInput(input, e);
        }
        bytesRead.add(entry.sizeBytes());
        out.addBlock(entry, batches, block);
    }

    void cleanUpFailedRun(List<CommitRequest.NewObject> written, List<ObjectWriter> writers,
                                  boolean commitAttempted, RuntimeException e) {
        for (ObjectWriter w : writers) {
            w.close();
        }
        boolean refused = Futures.unwrap(e) instanceof MetadataConflictException;
        if (!written.isEmpty() && (!commitAttempted || refused)) {
            try {
                store.delete(written.stream().map(o -> ObjectKeys.dataKey(o.objectId())).toList()).join();
            } catch (RuntimeException deleteFailed) {
                LOG.log(System.Logger.Level.DEBUG, "could not delete outputs of a failed run now; their prepared "
                        + "ids expire and the deletion pass removes them: " + deleteFailed);
            }
        }
    }

    CompactionException failure(String what, RuntimeException e) {
        Throwable cause = Futures.unwrap(e);
        if (cause instanceof CompactionException ce) {
            return ce;
        }
        return new CompactionException("compaction of " + what + " failed, inputs left in place: "
                + cause.getMessage(), cause);
    }

    /** Quarantines a corrupt input (left in place, skipped until restart) and says so. */
    CompactionException corruptInput(InputObject input, CorruptDataException e) {
        quarantined.add(input.objectId());
        return new CompactionException("input object " + input.key() + " (id " + input.objectId()
                + ") is corrupt; it is left in place and skipped by compaction: " + e.getMessage(), e);
    }

    SpanReader newReader(String key, List<IndexEntry> blocks, long chunkBytes) {
        return new SpanReader(store, key, blocks, chunkBytes, Math.max(1, settings.concurrency() / 2), gauge, throttle);
    }

    long nodeId() {
        return nodeId;
    }

    long nodeEpoch() {
        return nodeEpoch;
    }

    Duration runTimeout() {
        return settings.runTimeout();
    }

    long streamObjectTarget() {
        return settings.streamObjectTarget();
    }

    // ------------------------------------------------------------------------------------------------ key compaction

    /** Key compaction ({@link KeyCompactor}) of each registered stream this node owns that is due. */
    private void compactKeys() {
        Map<Long, KeyCompaction> registered = keyCompacted.get();
        if (registered.isEmpty()) {
            return;
        }
        Map<Long, StreamMetadata> streams = liveStreams();
        Map<Long, List<ObjectMetadata>> byStream = new HashMap<>();
        for (ObjectMetadata o : metadata.listObjects(ObjectState.COMMITTED).join()) {
            if (o.type() == ObjectType.STREAM && !quarantined.contains(o.objectId())) {
                long id = o.ranges().getFirst().streamId();
                if (registered.containsKey(id)) {
                    byStream.computeIfAbsent(id, k -> new ArrayList<>()).add(o);
                }
            }
        }
        long nowMs = System.currentTimeMillis();
        for (Map.Entry<Long, KeyCompaction> e : new TreeMap<>(registered).entrySet()) {
            StreamMetadata stream = streams.get(e.getKey());
            if (closed || stream == null || stream.ownerNodeId() != nodeId) {
                continue;
            }
            try {
                keyCompactor.compactIfDue(stream, e.getValue(), byStream.getOrDefault(e.getKey(), List.of()), nowMs)
                        .ifPresent(run -> {
                            keyRuns.increment();
                            keyBytesIn.add(run.bytesIn());
                            keyBytesOut.add(run.bytesOut());
                            inputObjects.add(run.inputObjects());
                            outputObjects.add(run.outputObjects());
                            LOG.log(System.Logger.Level.DEBUG, () -> "key compaction of stream " + stream.streamId()
                                    + ": " + run);
                        });
            } catch (RuntimeException ex) {
                noteFailure("key compaction of stream " + e.getKey(), ex);
            }
        }
    }

    /** Forgets a destroyed stream's key compaction checkpoint (best effort: a leftover key is only a small leak). */
    public CompletableFuture<Void> forgetStream(long streamId) {
        return metadata.deleteKv(KeyCompactor.checkpointKey(streamId)).exceptionally(e -> null);
    }

    // ------------------------------------------------------------------------------------------------ stream objects

    private void compactStreamObjects() {
        Map<Long, StreamMetadata> streams = liveStreams();
        Map<Long, List<ObjectMetadata>> byStream = new TreeMap<>();
        for (ObjectMetadata o : metadata.listObjects(ObjectState.COMMITTED).join()) {
            if (o.type() != ObjectType.STREAM || quarantined.contains(o.objectId())) {
                continue;
            }
            StreamRange r = o.ranges().getFirst();
            StreamMetadata s = streams.get(r.streamId());
            if (s == null || !(s.ownerNodeId() == nodeId || (s.ownerNodeId() < 0 && o.nodeId() == nodeId))) {
                continue; // another node's stream: its owner compacts it
            }
            byStream.computeIfAbsent(r.streamId(), k -> new ArrayList<>()).add(o);
        }
        long target = settings.streamObjectTarget();
        for (Map.Entry<Long, List<ObjectMetadata>> e : byStream.entrySet()) {
            if (closed) {
                return;
            }
            StreamMetadata stream = streams.get(e.getKey());
            List<ObjectMetadata> objects = new ArrayList<>(e.getValue());
            objects.sort(Comparator.comparingLong(o -> o.ranges().getFirst().startOffset()));
            List<ObjectMetadata> group = new ArrayList<>();
            long groupBytes = 0;
            for (int i = 0; i <= objects.size(); i++) {
                ObjectMetadata o = i < objects.size() ? objects.get(i) : null;
                boolean fits = o != null && o.sizeBytes() < target / 2 && (group.isEmpty()
                        || (group.getLast().ranges().getFirst().endOffset() == o.ranges().getFirst().startOffset()
                        && groupBytes + o.sizeBytes() <= target));
                if (fits) {
                    group.add(o);
                    groupBytes += o.sizeBytes();
                    continue;
                }
                boolean merge = group.size() >= 2
                        && (groupBytes >= target / 2 || group.size() >= MAX_SMALL_OBJECTS_PER_GROUP);
                boolean rewrite = group.size() == 1 && worthRewriting(group.getFirst(), streams);
                if (merge || rewrite) {
                    try {
                        mergeStreamObjects(stream, group);
                    } catch (RuntimeException ex) {
                        noteFailure("stream object compaction of stream " + stream.streamId(), ex);
                    }
                }
                group = new ArrayList<>();
                groupBytes = 0;
                if (o != null && o.sizeBytes() < target / 2) {
                    group.add(o);
                    groupBytes = o.sizeBytes();
                } else if (o != null && worthRewriting(o, streams)) {
                    try {
                        mergeStreamObjects(stream, List.of(o));
                    } catch (RuntimeException ex) {
                        noteFailure("rewrite of stream object " + o.key(), ex);
                    }
                }
            }
        }
    }

    /** Merges adjacent stream objects of one stream (or rewrites one) into one stream object, and commits. */
    private void mergeStreamObjects(StreamMetadata stream, List<ObjectMetadata> group) {
        long liveFrom = stream.startOffset();
        List<CommitRequest.NewObject> written = new ArrayList<>();
        List<ObjectWriter> writers = new ArrayList<>();
        boolean commitAttempted = false;
        try {
            long id = metadata.prepareObjects(1, settings.runTimeout()).join();
            ObjectWriter w = newWriter(id);
            writers.add(w);
            long epoch = 0;
            for (ObjectMetadata o : group) {
                epoch = Math.max(epoch, o.ranges().getFirst().epoch());
                InputObject in = loadInput(o);
                List<IndexEntry> blocks = in.liveBlocks(stream.streamId(), liveFrom);
                copyWithServerSideParts(in, blocks, w);
            }
            List<Long> inputIds = group.stream().map(ObjectMetadata::objectId).toList();
            if (!w.isEmpty()) {
                long size = w.finish();
                account(w);
                long e = epoch;
                written.add(new CommitRequest.NewObject(id, ObjectType.STREAM, size, w.ranges(s -> e)));
            }
            commitAttempted = true;
            metadata.commitObjects(new CommitRequest(nodeId, nodeEpoch, written, inputIds)).join();
            runs.increment();
            inputObjects.add(inputIds.size());
            outputObjects.add(written.size());
        } catch (RuntimeException e) {
            cleanUpFailedRun(written, writers, commitAttempted, e);
            throw failure("stream objects " + group.stream().map(ObjectMetadata::key).toList(), e);
        } finally {
            for (ObjectWriter w : writers) {
                w.close();
            }
        }
    }

    private void copyWithServerSideParts(InputObject in, List<IndexEntry> blocks, ObjectWriter w) {
        int minPart = store.backend().minPartSizeBytes();
        long chunk = Math.max(Math.max(MIN_CHUNK_BYTES, settings.blockSizeBytes()),
                settings.memoryBytes() / 4 / Math.max(1, settings.concurrency()));
        SpanReader reader = null;
        try {
            for (int i = 0; i < blocks.size(); i++) {
                long remaining = blocks.getLast().endPosition() - blocks.get(i).position();
                if (remaining >= minPart && w.canReachPartBoundary() && w.reachPartBoundary()) {
                    w.copyBlocks(in.key(), blocks.subList(i, blocks.size()));
                    return;
                }
                if (reader == null) {
                    reader = new SpanReader(store, in.key(), blocks.subList(i, blocks.size()), chunk,
                            Math.max(1, settings.concurrency() / 2), gauge, throttle);
                }
                ByteBuf block = reader.next();
                try {
                    addVerified(in, blocks.get(i), block, w);
                } finally {
                    block.release();
                }
            }
        } finally {
            if (reader != null) {
                reader.close();
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ lifecycle

    /** Stops scheduling rounds and waits for a run in progress to end. Idempotent. */
    @Override
    public void close() {
        closed = true;
        thread.shutdown(); // no new round while the deletion loop stops
        deletion.close();
        Executors2.stop(thread, 60, TimeUnit.SECONDS);
    }

    /** Crash simulation: stop at once. */
    public void halt() {
        closed = true;
        deletion.halt();
        thread.shutdownNow();
    }
}
