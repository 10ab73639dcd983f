package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.s3stream.spi.WalRecordFormat;

import java.util.concurrent.CompletableFuture;

/**
 * One appended batch, from the moment its offsets are assigned until the log cache lets go of it. The same object is
 * first the in-flight append (waiting for the WAL) and then the log-cache entry, so the steady append path allocates
 * it once.
 *
 * <p>{@code record} is the encoded WAL record ({@link WalRecordFormat}); the payload starts at
 * {@link WalRecordFormat#HEADER_SIZE}. The log cache owns one reference to it.
 */
final class CachedBatch {
    final long streamId;
    /** The appending handle, or null for batches recovered from the WAL. */
    final StreamHandle stream;
    final long epoch;
    final long baseOffset;
    final int count;
    final ByteBuf record;
    /** Completed by the engine once durable and cached; null for recovered batches. */
    final CompletableFuture<io.s3stream.AppendResult> userFuture;
    /** WAL completion, or null for markers and recovered batches. */
    CompletableFuture<io.s3stream.spi.WalAppendResult> walFuture;
    long walNextPosition;
    /** The next in-flight append (engine's intrusive queue); written under the sequencer, read by the drainer. */
    volatile CachedBatch next;
    /** Runs after every earlier append was processed (flush markers only). */
    final Runnable marker;

    CachedBatch(long streamId, StreamHandle stream, long epoch, long baseOffset, int count, ByteBuf record,
                CompletableFuture<io.s3stream.AppendResult> userFuture) {
        this.streamId = streamId;
        this.stream = stream;
        this.epoch = epoch;
        this.baseOffset = baseOffset;
        this.count = count;
        this.record = record;
        this.userFuture = userFuture;
        this.marker = null;
    }

    private CachedBatch(Runnable marker) {
        this.streamId = -1;
        this.stream = null;
        this.epoch = 0;
        this.baseOffset = 0;
        this.count = 0;
        this.record = null;
        this.userFuture = null;
        this.marker = marker;
        this.walFuture = CompletableFuture.completedFuture(null);
    }

    static CachedBatch marker(Runnable action) {
        return new CachedBatch(action);
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
