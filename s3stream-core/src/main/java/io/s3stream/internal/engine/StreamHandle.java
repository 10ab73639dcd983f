package io.s3stream.internal.engine;

import io.s3stream.AppendResult;
import io.s3stream.FetchResult;
import io.s3stream.KeyCompaction;
import io.s3stream.OffsetOutOfRangeException;
import io.s3stream.RecordBatch;
import io.s3stream.Stream;
import io.s3stream.StreamClosedException;
import io.s3stream.StreamFencedException;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.StreamMetadata;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One open stream: its identity and offsets, and the entry points of the engine's write path
 * ({@link AppendSequencer}) and read path ({@link ReadPath}), which serve every stream of the engine.
 *
 * <p>Offsets: {@code nextOffset} is assigned under the sequencer's lock; {@code confirmedOffset} advances when the
 * sequencer processes a durable append, in order; {@code startOffset} moves on trims.
 */
final class StreamHandle implements Stream {
    private static final int OPEN = 0;
    private static final int CLOSING = 1;
    private static final int DESTROYING = 2;


    /** How a handle closes: the engine uploads the stream's data and records the close (or deletion). */
    interface Closer {
        void close(StreamHandle handle, boolean destroy);
    }

    private final AppendSequencer sequencer;
    private final ReadPath reads;
    private final MetadataStore metadata;
    private final Closer closer;
    private final long streamId;
    private final long epoch;
    private volatile long startOffset;
    private volatile long confirmedOffset;
    /** Guarded by the sequencer's lock. */
    long nextOffset;
    /** Null while open; otherwise why the stream refuses appends. Written under the sequencer's lock. */
    volatile RuntimeException refusal;
    /** The failure of the first failed append; later batches of this handle fail too (no holes). Drain thread only. */
    Throwable holeCause;
    private final CompletableFuture<Void> closeFuture = new CompletableFuture<>();
    /** {@link #OPEN}, or how the handle ends: decided once, by the first close, destroy or fencing reopen. */
    private final AtomicInteger ending = new AtomicInteger(OPEN);
    /** The embedder's key compaction of this stream, or null; read by the compactor. */
    private volatile KeyCompaction keyCompaction;

    StreamHandle(AppendSequencer sequencer, ReadPath reads, MetadataStore metadata, Closer closer,
                 StreamMetadata stream) {
        this.sequencer = sequencer;
        this.reads = reads;
        this.metadata = metadata;
        this.closer = closer;
        this.streamId = stream.streamId();
        this.epoch = stream.epoch();
        this.startOffset = stream.startOffset();
        // The committed end stays below the start when a trimmed prefix was never uploaded (BlockUploader); every
        // offset below the start was acknowledged, so the stream continues at the start.
        long next = Math.max(stream.endOffset(), stream.startOffset());
        this.confirmedOffset = next;
        this.nextOffset = next;
    }

    @Override
    public long streamId() {
        return streamId;
    }

    @Override
    public long epoch() {
        return epoch;
    }

    @Override
    public long startOffset() {
        return startOffset;
    }

    @Override
    public long confirmedOffset() {
        return confirmedOffset;
    }

    @Override
    public long nextOffset() {
        return sequencer.nextOffset(this);
    }

    /** Called by the sequencer, in offset order, once a batch is durable and cached. */
    AppendSequencer sequencer() {
        return sequencer;
    }

    void confirm(long endOffset) {
        confirmedOffset = endOffset;
    }

    @Override
    public CompletableFuture<AppendResult> append(RecordBatch batch) {
        return sequencer.append(this, batch, true);
    }

    @Override
    public CompletableFuture<AppendResult> tryAppend(RecordBatch batch) {
        return sequencer.append(this, batch, false);
    }

    @Override
    public CompletableFuture<FetchResult> fetch(long fetchStart, long endOffset, int maxBytes) {
        return reads.fetch(streamId, startOffset, confirmedOffset, fetchStart, endOffset, maxBytes);
    }

    @Override
    public CompletableFuture<Void> trim(long newStartOffset) {
        RuntimeException refused = refusal;
        if (refused != null) {
            return CompletableFuture.failedFuture(refused);
        }
        // Bounded by what is acknowledged, not by what is assigned: the uploader leaves data below a trim point out,
        // and the manifest accepts the gap, which is safe only if no failed append can hide in it.
        long confirmed = confirmedOffset;
        if (newStartOffset < startOffset || newStartOffset > confirmed) {
            return CompletableFuture.failedFuture(new OffsetOutOfRangeException("stream " + streamId
                    + ": trim point " + newStartOffset + " is outside [" + startOffset + ", " + confirmed
                    + "] (start, confirmed offset)"));
        }
        return metadata.trimStream(streamId, epoch, newStartOffset).thenAccept(meta -> {
            synchronized (this) {
                startOffset = Math.max(startOffset, newStartOffset);
            }
        });
    }

    @Override
    public void compactKeys(KeyCompaction compaction) {
        keyCompaction = compaction;
    }

    KeyCompaction keyCompaction() {
        return closeFuture.isDone() ? null : keyCompaction;
    }

    @Override
    public CompletableFuture<Void> close() {
        closer.close(this, false);
        return closeFuture;
    }

    @Override
    public CompletableFuture<Void> destroy() {
        closer.close(this, true);
        if (ending.get() != DESTROYING) {
            // Closed (or fenced by a newer handle) first: the close's success must not read as a deletion.
            return CompletableFuture.failedFuture(new StreamClosedException("stream " + streamId + " at epoch " + epoch
                    + " was closed on this node before it could be destroyed; open it again to destroy it"));
        }
        return closeFuture;
    }

    CompletableFuture<Void> closeFuture() {
        return closeFuture;
    }

    /**
     * Decides how the handle ends, once: true for the first call (which then finishes the handle), false for every
     * later one (a second close or destroy waits for the first).
     */
    boolean beginEnding(boolean destroy) {
        return ending.compareAndSet(OPEN, destroy ? DESTROYING : CLOSING);
    }

    /** Refuses further appends (under the sequencer's lock: see {@link AppendSequencer#refuse}). */
    void refuse(RuntimeException why) {
        if (refusal == null) {
            refusal = why;
        }
    }

    static StreamFencedException fenced(long streamId, long epoch, String why) {
        return new StreamFencedException("stream " + streamId + " at epoch " + epoch + " is fenced: " + why);
    }

    static StreamClosedException closed(long streamId) {
        return new StreamClosedException("stream " + streamId + " is closed on this node");
    }

    @Override
    public String toString() {
        return "Stream{id=" + streamId + ", epoch=" + epoch + ", start=" + startOffset + ", confirmed="
                + confirmedOffset + '}';
    }
}
