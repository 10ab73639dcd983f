package io.s3stream.internal.compaction;

import io.netty.buffer.ByteBuf;
import io.s3stream.CorruptDataException;
import io.s3stream.KeyCompaction;
import io.s3stream.internal.format.DataBlock;
import io.s3stream.internal.format.DecodedBatch;
import io.s3stream.internal.format.IndexEntry;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamMetadata;
import io.s3stream.spi.StreamRange;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * Key compaction of one stream at a time ({@link KeyCompaction}), for the {@link Compactor}'s owner thread.
 *
 * <h2>What a run covers</h2>
 * The stream's stream objects that form one contiguous run from its oldest live data, each wholly below the
 * embedder's {@link KeyCompaction#cleanableEndOffset()}. Data in stream set objects, in the WAL or the log cache is
 * never compacted: it reaches stream objects at the next stream-set compaction (key-compacted streams always get
 * stream objects there), which bounds how long data stays uncompacted. The <em>checkpoint</em>
 * ({@code s3stream/key-compaction/<stream id>} in the key-value space, written after each committed run) is the
 * offset up to which the data was compacted: objects ending above it are dirty. It also keeps when the embedder
 * asked for the compacted data to be rewritten again (a tombstone's delete horizon), so that survives restarts. A run starts when the dirty objects
 * hold at least the embedder's minimum dirty share of the covered bytes, or when the oldest dirty object has waited
 * longer than its maximum compaction lag.
 *
 * <h2>Two passes</h2>
 * <ol>
 *   <li><b>Index</b>: the dirty data is read in offset order and every key the embedder reports goes into the
 *       {@link KeyMap} with its offset. When the map is full the pass stops at that record: the new checkpoint.</li>
 *   <li><b>Rewrite</b>: every covered object from the oldest up to the one holding the new checkpoint is read again and
 *       each batch passes through {@link KeyCompaction#rewrite}, which drops the records a later record of their key
 *       supersedes. A record is dropped only when the map holds a <em>later</em> offset for its key, so the rule is
 *       right however far the map reached. Adjacent rewritten batches are merged into one batch (up to
 *       {@link #MERGED_BATCH_BYTES}), so a range whose records are all gone costs one batch header, not one per batch.
 *       Offsets do not change; outputs are stream objects of up to the stream-object target size.</li>
 * </ol>
 * The outputs and the retirement of the inputs are one manifest commit, as for every compaction run; the checkpoint
 * is written after it (a lost checkpoint write only makes the next run redo work). A crash before the commit leaves
 * prepared outputs that expire; after it, the inputs are deleted after the grace period.
 */
final class KeyCompactor {
    private static final System.Logger LOG = System.getLogger(KeyCompactor.class.getName());
    /** Rewritten batches are merged into batches of about this many payload bytes. */
    static final int MERGED_BATCH_BYTES = 256 * 1024;
    private static final String CHECKPOINT_PREFIX = "s3stream/key-compaction/";

    /**
     * What one run did.
     *
     * @param inputObjects  objects rewritten
     * @param outputObjects objects written
     * @param bytesIn       bytes of the inputs' blocks read in the rewrite pass
     * @param bytesOut      bytes of the outputs' blocks
     * @param keys          distinct keys indexed
     * @param checkpoint    the stream's new checkpoint
     */
    record Run(int inputObjects, int outputObjects, long bytesIn, long bytesOut, int keys, long checkpoint) {
    }

    private final Compactor compactor;
    private final MetadataStore metadata;
    private final long mapBytes;
    /** Allocated by the first run: a node that never key-compacts holds none. */
    private KeyMap map;
    private final long chunkBytes;

    KeyCompactor(Compactor compactor, MetadataStore metadata, long mapBytes, long chunkBytes) {
        this.compactor = compactor;
        this.metadata = metadata;
        this.mapBytes = mapBytes;
        this.chunkBytes = chunkBytes;
    }

    static String checkpointKey(long streamId) {
        return CHECKPOINT_PREFIX + streamId;
    }

    /**
     * Compacts {@code stream} if it is due. {@code objects} are the stream's committed stream objects. Returns what the
     * run did, or empty when nothing was due.
     */
    Optional<Run> compactIfDue(StreamMetadata stream, KeyCompaction compaction, List<ObjectMetadata> objects,
                               long nowMs) {
        long streamId = stream.streamId();
        if (objects.isEmpty()) {
            return Optional.empty();
        }
        long cleanableEnd = compaction.cleanableEndOffset(); // first: the embedder takes its view of the round
        Checkpoint saved = readCheckpoint(streamId);
        long checkpoint = saved.offset();
        long lagMs = compaction.minCompactionLag() == null ? 0 : compaction.minCompactionLag().toMillis();
        List<ObjectMetadata> covered = covered(stream, objects, cleanableEnd, checkpoint, nowMs - lagMs);
        if (covered.isEmpty()) {
            return Optional.empty();
        }
        long total = 0;
        long dirty = 0;
        ObjectMetadata firstDirty = null;
        for (ObjectMetadata o : covered) {
            total += o.sizeBytes();
            if (range(o, streamId).endOffset() > checkpoint) {
                dirty += o.sizeBytes();
                if (firstDirty == null) {
                    firstDirty = o;
                }
            }
        }
        boolean again = saved.rewriteAgainAtMs() <= nowMs;
        if (firstDirty == null && !again) {
            return Optional.empty();
        }
        boolean overdue = firstDirty != null && compaction.maxCompactionLag() != null
                && firstDirty.committedAtMs() <= nowMs - compaction.maxCompactionLag().toMillis();
        if (dirty < compaction.minDirtyRatio() * total && !overdue && !again) {
            return Optional.empty();
        }
        Run run = run(stream, compaction, covered, checkpoint);
        Checkpoint next = new Checkpoint(run.checkpoint(), compaction.rewriteAgainAtMs());
        try {
            metadata.putKv(checkpointKey(streamId), next.encode()).join();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "stream " + streamId + ": key compaction checkpoint not written "
                    + "(the next run redoes this one's work): " + e);
        }
        return Optional.of(run);
    }

    /**
     * What the key-value space keeps per stream: the offset up to which data was compacted, and when the embedder
     * asked for the compacted data to be rewritten again ({@link KeyCompaction#rewriteAgainAtMs()}), as ASCII
     * {@code "<offset> <ms>"}.
     */
    record Checkpoint(long offset, long rewriteAgainAtMs) {
        static final Checkpoint NONE = new Checkpoint(0, Long.MAX_VALUE);

        byte[] encode() {
            return (offset + " " + rewriteAgainAtMs).getBytes(StandardCharsets.US_ASCII);
        }

        static Checkpoint decode(byte[] value) {
            String[] parts = new String(value, StandardCharsets.US_ASCII).trim().split(" ");
            return new Checkpoint(Long.parseLong(parts[0]), parts.length > 1 ? Long.parseLong(parts[1]) : Long.MAX_VALUE);
        }
    }


    /**
     * The contiguous run of live stream objects from the oldest, each ending at or below {@code cleanableEnd}, and
     * each dirty one (ending above {@code checkpoint}) written at or before {@code writtenBy}: compaction's own outputs
     * are new objects holding old data.
     */
    private static List<ObjectMetadata> covered(StreamMetadata stream, List<ObjectMetadata> objects, long cleanableEnd,
                                                long checkpoint, long writtenBy) {
        long streamId = stream.streamId();
        List<ObjectMetadata> live = new ArrayList<>();
        for (ObjectMetadata o : objects) {
            if (o.type() == ObjectType.STREAM && range(o, streamId).endOffset() > stream.startOffset()) {
                live.add(o);
            }
        }
        live.sort(Comparator.comparingLong(o -> range(o, streamId).startOffset()));
        List<ObjectMetadata> out = new ArrayList<>();
        for (ObjectMetadata o : live) {
            StreamRange r = range(o, streamId);
            if (r.endOffset() > cleanableEnd || (r.endOffset() > checkpoint && o.committedAtMs() > writtenBy)
                    || (!out.isEmpty() && range(out.getLast(), streamId).endOffset()
                    != r.startOffset())) {
                break;
            }
            out.add(o);
        }
        return out;
    }

    private static StreamRange range(ObjectMetadata o, long streamId) {
        return o.rangeOf(streamId).orElseThrow(() -> new CompactionException("object " + o.key()
                + " was listed for stream " + streamId + " but holds no range of it"));
    }

    private Checkpoint readCheckpoint(long streamId) {
        Optional<byte[]> v = metadata.getKv(checkpointKey(streamId)).join();
        if (v.isEmpty()) {
            return Checkpoint.NONE;
        }
        try {
            return Checkpoint.decode(v.get());
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "stream " + streamId + ": unreadable key compaction checkpoint; "
                    + "compacting from the start");
            return Checkpoint.NONE;
        }
    }

    private Run run(StreamMetadata stream, KeyCompaction compaction, List<ObjectMetadata> covered, long checkpoint) {
        long streamId = stream.streamId();
        long liveFrom = stream.startOffset();
        if (map == null) {
            map = new KeyMap(mapBytes);
        } else {
            map.clear();
        }
        // Pass 1: index the dirty data until the map is full.
        long[] indexedUpTo = {range(covered.getLast(), streamId).endOffset()};
        boolean[] full = {false};
        KeyCompaction.KeyVisitor visitor = (offset, key) -> {
            // Records below the checkpoint (in a batch that straddles it) were indexed by an earlier run.
            if (!full[0] && offset >= checkpoint && !map.put(key, offset)) {
                full[0] = true;
                indexedUpTo[0] = offset;
            }
        };
        for (ObjectMetadata o : covered) {
            if (full[0]) {
                break;
            }
            if (range(o, streamId).endOffset() <= checkpoint) {
                continue;
            }
            forEachBatch(o, streamId, Math.max(liveFrom, checkpoint), (b, blockBytes) -> {
                if (!full[0] && b.endOffset() > checkpoint) {
                    compaction.keys(b.baseOffset(), b.count(), b.payload().nioBuffer(), visitor);
                }
            });
        }
        long newCheckpoint = indexedUpTo[0];
        boolean nothingDirty = range(covered.getLast(), streamId).endOffset() <= checkpoint;
        if (nothingDirty) {
            newCheckpoint = checkpoint; // a rewrite asked for by the embedder (expired tombstones): everything again
        } else if (newCheckpoint <= checkpoint) {
            throw new CompactionException("stream " + streamId + ": the key map (" + map.maxEntries()
                    + " keys) could not index one record past offset " + checkpoint);
        }
        // Pass 2: rewrite every object up to the one holding the new checkpoint.
        List<ObjectMetadata> inputs = new ArrayList<>();
        for (ObjectMetadata o : covered) {
            if (!nothingDirty && range(o, streamId).startOffset() >= newCheckpoint) {
                break;
            }
            inputs.add(o);
        }
        long epoch = inputs.stream().mapToLong(o -> range(o, streamId).epoch()).max().orElse(stream.epoch());
        Output out = new Output(streamId, epoch);
        KeyCompaction.LatestFilter latest = (offset, key) -> map.get(key) <= offset;
        long[] bytesIn = {0};
        boolean commitAttempted = false;
        try {
            for (ObjectMetadata o : inputs) {
                forEachBatch(o, streamId, liveFrom, (b, blockBytes) -> {
                    bytesIn[0] += blockBytes;
                    ByteBuffer kept = compaction.rewrite(b.baseOffset(), b.count(), b.payload().nioBuffer(), latest);
                    out.add(b.baseOffset(), b.count(), kept);
                });
            }
            out.finish();
            List<Long> inputIds = inputs.stream().map(ObjectMetadata::objectId).toList();
            commitAttempted = true;
            metadata.commitObjects(new CommitRequest(compactor.nodeId(), compactor.nodeEpoch(), out.written, inputIds))
                    .join();
        } catch (RuntimeException e) {
            compactor.cleanUpFailedRun(out.written, out.writers, commitAttempted, e);
            throw compactor.failure("key compaction of stream " + streamId, e);
        } finally {
            out.close();
        }
        return new Run(inputs.size(), out.written.size(), bytesIn[0], out.bytesOut, map.size(), newCheckpoint);
    }

    private interface BatchVisitor {
        /** {@code blockBytes} is the block's size for the first batch of each block, 0 for the others. */
        void batch(DecodedBatch batch, int blockBytes);
    }

    /** Reads the blocks of {@code streamId} in {@code o} that end above {@code from}, in order, verified. */
    private void forEachBatch(ObjectMetadata o, long streamId, long from, BatchVisitor visitor) {
        InputObject in = compactor.loadInput(o);
        List<IndexEntry> blocks = in.liveBlocks(streamId, from);
        try (SpanReader reader = compactor.newReader(in.key(), blocks, chunkBytes)) {
            for (IndexEntry entry : blocks) {
                ByteBuf block = reader.next();
                try {
                    List<DecodedBatch> batches;
                    try {
                        batches = DataBlock.decode(block, entry, in.key());
                    } catch (CorruptDataException e) {
                        throw compactor.corruptInput(in, e);
                    }
                    int size = entry.sizeBytes();
                    for (DecodedBatch b : batches) {
                        visitor.batch(b, size);
                        size = 0;
                    }
                } finally {
                    block.release();
                }
            }
        }
    }

    /**
     * The outputs of a run: merged batches into stream objects of up to the stream-object target, each under an id
     * prepared when it is opened.
     */
    private final class Output implements AutoCloseable {
        final long streamId;
        final long epoch;
        final List<CommitRequest.NewObject> written = new ArrayList<>();
        final List<ObjectWriter> writers = new ArrayList<>();
        long bytesOut;
        private ObjectWriter writer;
        private long writerId;
        private ByteBuffer merged = ByteBuffer.allocate(64 * 1024);
        private long mergedStart = -1;
        private long mergedEnd;

        Output(long streamId, long epoch) {
            this.streamId = streamId;
            this.epoch = epoch;
        }

        void add(long baseOffset, int count, ByteBuffer payload) {
            if (mergedStart >= 0 && (mergedEnd != baseOffset
                    || (payload.hasRemaining() && merged.position() > 0
                        && merged.position() + payload.remaining() > MERGED_BATCH_BYTES)
                    || mergedEnd - mergedStart + count > Integer.MAX_VALUE)) {
                flushMerged();
            }
            if (mergedStart < 0) {
                mergedStart = baseOffset;
            }
            if (merged.remaining() < payload.remaining()) {
                ByteBuffer bigger = ByteBuffer.allocate(Math.max(merged.capacity() * 2,
                        merged.position() + payload.remaining()));
                merged.flip();
                bigger.put(merged);
                merged = bigger;
            }
            merged.put(payload.duplicate());
            mergedEnd = baseOffset + count;
        }

        private void flushMerged() {
            if (mergedStart < 0) {
                return;
            }
            if (writer == null) {
                writerId = metadata.prepareObjects(1, compactor.runTimeout()).join();
                writer = compactor.newWriter(writerId);
                writers.add(writer);
            }
            merged.flip();
            writer.addBatch(streamId, mergedStart, (int) (mergedEnd - mergedStart), merged);
            merged.clear();
            mergedStart = -1;
            if (writer.sizeSoFar() >= compactor.streamObjectTarget()) {
                finishWriter();
            }
        }

        private void finishWriter() {
            long size = writer.finish();
            compactor.account(writer);
            bytesOut += writer.writtenThroughNodeBytes;
            written.add(new CommitRequest.NewObject(writerId, ObjectType.STREAM, size, writer.ranges(s -> epoch)));
            writer = null;
        }

        void finish() {
            flushMerged();
            if (writer != null) {
                finishWriter();
            }
        }

        @Override
        public void close() {
            for (ObjectWriter w : writers) {
                w.close();
            }
        }
    }
}
