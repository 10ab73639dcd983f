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
 * then the log-cache entry, so the steady append path allocates it once (with the record's slice and the
 * {@link AppendResult}).
 *
 * <p>{@code record} is the encoded WAL record ({@link WalRecordFormat}); the payload starts at
 * {@link WalRecordFormat#HEADER_SIZE}. The log cache owns one reference to it.
 */
final class CachedBatch extends CompletableFuture<AppendResult> implements WriteAheadLog.AppendCallback {
    private static final Object DURABLE = new Object();

    final long streamId;
    /** The appending handle, or null for batches recovered from the WAL. */
    final StreamHandle stream;
    final long epoch;
    final long baseOffset;
    final int count;
    final ByteBuf record;
    /**
     * The record's memory for absolute reads by any thread ({@link RecordArena#view()}), from {@link #viewIndex}; null
     * for recovered batches and markers.
     */
    final ByteBuffer view;
    final int viewIndex;
    /**
     * The WAL's outcome: null while it is pending, {@link #DURABLE}, or why the append failed. Written once by the WAL
     * ({@link #onDurable}, {@link #onFailure}), read by the drainer.
     */
    private volatile Object walOutcome;
    /** Where the WAL record ends; written before {@link #walOutcome}. */
    long walNextPosition;
    /** The next in-flight append (engine's intrusive queue); written under the sequencer, read by the drainer. */
    volatile CachedBatch next;
    CachedBatch(long streamId, StreamHandle stream, long epoch, long baseOffset, int count, ByteBuf record,
                ByteBuffer view, int viewIndex) {
        this.streamId = streamId;
        this.stream = stream;
        this.epoch = epoch;
        this.baseOffset = baseOffset;
        this.count = count;
        this.record = record;
        this.view = view;
        this.viewIndex = viewIndex;
        this.walOutcome = stream == null ? DURABLE : null; // recovered: durable already
    }

    /**
     * A marker in the in-flight queue: no record, durable at once; the drainer completes it (with null) once every
     * append linked before it was processed.
     */
    static CachedBatch marker() {
        return new CachedBatch(-1, null, 0, 0, 0, null, null, 0);
    }

    boolean isMarker() {
        return record == null;
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
        return record.readableBytes() - WalRecordFormat.HEADER_SIZE;
    }

    int sizeBytes() {
        return record.readableBytes();
    }

    /** A retained slice of the payload, for a reader. */
    ByteBuf retainedPayload() {
        return record.retainedSlice(record.readerIndex() + WalRecordFormat.HEADER_SIZE, payloadBytes());
    }
}
