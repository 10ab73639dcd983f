package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.s3stream.AppendResult;
import io.s3stream.spi.WalRecordFormat;
import io.s3stream.spi.WriteAheadLog;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * One appended batch, from the moment its offsets are assigned until the log cache lets go of it. The same object is
 * the future the appender gets back, the WAL's callback for the record, the in-flight append (waiting for the WAL) and
 * then the log-cache entry, so the steady append path allocates it once (with the {@link AppendResult}).
 *
 * <p>The encoded WAL record ({@link WalRecordFormat}) is at {@link #index} of {@link #buffer}, the arena's chunk it was
 * carved from (or a buffer of its own): no slice object per record. Its size is read from its header, so an entry
 * needs no field for it. The log cache owns one reference to {@code buffer} per entry.
 */
final class CachedBatch extends CompletableFuture<AppendResult> implements WriteAheadLog.AppendCallback {
    private static final Object DURABLE = new Object();

    final long streamId;
    /** The appending handle, or null for batches recovered from the WAL. */
    final StreamHandle stream;
    final long epoch;
    final long baseOffset;
    final int count;
    /** The buffer holding the record (one reference is this entry's); null for markers. */
    final ByteBuf buffer;
    /** Where the record starts, in {@link #buffer} and in {@link #view}. */
    final int index;
    /**
     * {@code buffer}'s memory from its index 0, for absolute reads by any thread ({@link RecordArena#view()}); null for
     * recovered batches and markers.
     */
    final ByteBuffer view;
    /**
     * The WAL's outcome: null while it is pending, {@link #DURABLE}, or why the append failed. Written once by the WAL
     * ({@link #onDurable}, {@link #onFailure}), read by the drainer.
     */
    private volatile Object walOutcome;
    /** Where the WAL record ends; written before {@link #walOutcome}. */
    long walNextPosition;
    /** The next in-flight append (engine's intrusive queue); written under the sequencer, read by the drainer. */
    volatile CachedBatch next;
    CachedBatch(long streamId, StreamHandle stream, long epoch, long baseOffset, int count, ByteBuf buffer, int index,
                ByteBuffer view) {
        this.streamId = streamId;
        this.stream = stream;
        this.epoch = epoch;
        this.baseOffset = baseOffset;
        this.count = count;
        this.buffer = buffer;
        this.index = index;
        this.view = view;
        this.walOutcome = stream == null ? DURABLE : null; // recovered: durable already
    }

    /**
     * A marker in the in-flight queue: no record, durable at once; the drainer completes it (with null) once every
     * append linked before it was processed.
     */
    static CachedBatch marker() {
        return new CachedBatch(-1, null, 0, 0, 0, null, 0, null);
    }

    boolean isMarker() {
        return buffer == null;
    }

    @Override
    public void onDurable(long walPosition, long nextPosition) {
        walNextPosition = nextPosition;
        walOutcome = DURABLE;
        stream.sequencer().walCompleted();
    }

    @Override
    public void onFailure(Throwable error) {
        walOutcome = error;
        stream.sequencer().walCompleted();
    }

    /** Whether the WAL reported this append's outcome (always true for markers and recovered batches). */
    boolean walDone() {
        return walOutcome != null;
    }

    /** Why the WAL append failed, or null (durable, or still pending). */
    Throwable walError() {
        return walOutcome instanceof Throwable error ? error : null;
    }

    long endOffset() {
        return baseOffset + count;
    }

    int payloadBytes() {
        return buffer.getInt(index + WalRecordFormat.PAYLOAD_LENGTH_OFFSET);
    }

    int sizeBytes() {
        return WalRecordFormat.HEADER_SIZE + payloadBytes();
    }

    /** A retained slice of the payload, for a reader. */
    ByteBuf retainedPayload() {
        return buffer.retainedSlice(index + WalRecordFormat.HEADER_SIZE, payloadBytes());
    }

    /** Lets go of this entry's reference to its record's buffer. */
    void releaseRecord() {
        buffer.release();
    }
}
