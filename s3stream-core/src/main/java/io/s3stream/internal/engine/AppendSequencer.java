package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.s3stream.AppendResult;
import io.s3stream.NodeFencedException;
import io.s3stream.OverCapacityException;
import io.s3stream.RecordBatch;
import io.s3stream.StorageIOException;
import io.s3stream.StreamClosedException;
import io.s3stream.internal.util.Futures;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalRecordFormat;
import io.s3stream.spi.WriteAheadLog;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiConsumer;

/**
 * The write path of every stream of one engine: assigns offsets, hands WAL records to the write-ahead log, and once
 * they are durable puts the batches into the log cache and completes the appends' futures, in WAL order.
 *
 * <h2>Concurrency</h2>
 * Appends of all streams pass one short critical section, the <em>sequencer</em> lock: it assigns the stream's offsets,
 * encodes the WAL record, hands it to the WAL and queues the in-flight append. Because the WAL is called in sequencer
 * order, WAL positions follow queue order. Completions are <em>drained</em> from the head of that queue only, by
 * whichever thread finds the head durable (usually the WAL's completion thread), so batches enter the log cache and
 * futures complete in WAL order: per stream in offset order, and across streams in an order that makes every sealed
 * log-cache block a prefix of the WAL. Everything else that must be ordered with appends (a stream's refusal, a flush
 * marker) is taken under the same lock.
 *
 * <h2>Durability</h2>
 * An append's future completes only after the WAL reported it durable and the batch is in the log cache.
 *
 * <h2>Failure</h2>
 * A full log cache makes appends wait, then fail with {@link OverCapacityException} before any offset is assigned, so
 * a refused append leaves no hole. A batch whose WAL append failed fences its stream: later batches of that stream fail
 * too, even if durable, so the stream never has a hole (recovery skips such orphans). A WAL device error
 * ({@link StorageIOException}) or a takeover of the WAL ({@link NodeFencedException}) fails the whole engine at once:
 * every later append fails fast with that cause, while acknowledged data in the log cache is still uploaded.
 */
final class AppendSequencer {
    private static final System.Logger LOG = System.getLogger(AppendSequencer.class.getName());

    private final WriteAheadLog wal;
    private final LogCache logCache;
    private final Uploader uploader;
    private final ByteBufAllocator alloc;
    private final int maxBatchBytes;
    private final long backpressureNanos;
    private final ReentrantLock lock = new ReentrantLock();
    /**
     * In-flight appends as an intrusive queue through {@link CachedBatch#next}: linked at {@link #inflightTail} under
     * the lock, consumed from {@link #drainHead} (a sentinel: the last processed batch) by one drainer at a time.
     */
    private CachedBatch inflightTail;
    private volatile CachedBatch drainHead;
    private final AtomicBoolean draining = new AtomicBoolean();
    private final BiConsumer<Object, Throwable> drainOnCompletion = (result, error) -> drain();
    private volatile RuntimeException failure;
    private volatile boolean closed;
    final LongAdder appendedBatches = new LongAdder();
    final LongAdder appendedBytes = new LongAdder();

    AppendSequencer(WriteAheadLog wal, LogCache logCache, Uploader uploader, ByteBufAllocator alloc, int maxBatchBytes,
                    long backpressureNanos) {
        this.wal = wal;
        this.logCache = logCache;
        this.uploader = uploader;
        this.alloc = alloc;
        this.maxBatchBytes = maxBatchBytes;
        this.backpressureNanos = backpressureNanos;
        CachedBatch sentinel = CachedBatch.marker(() -> { });
        this.inflightTail = sentinel;
        this.drainHead = sentinel;
    }

    CompletableFuture<AppendResult> append(StreamHandle handle, RecordBatch batch) {
        int payloadBytes = batch.sizeBytes();
        int recordBytes = WalRecordFormat.HEADER_SIZE + payloadBytes;
        if (payloadBytes > maxBatchBytes || recordBytes > wal.maxRecordBytes()) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("a batch of " + payloadBytes
                    + " bytes exceeds the largest batch (StorageConfig.maxBatchBytes " + maxBatchBytes
                    + ", WAL record limit " + (wal.maxRecordBytes() - WalRecordFormat.HEADER_SIZE) + ")"));
        }
        RuntimeException refused = refusal(handle);
        if (refused != null) {
            return CompletableFuture.failedFuture(refused);
        }
        try {
            logCache.reserve(recordBytes, backpressureNanos);
        } catch (OverCapacityException e) {
            return CompletableFuture.failedFuture(e);
        }
        CachedBatch pending;
        CompletableFuture<WalAppendResult> walFuture;
        lock.lock();
        try {
            refused = refusal(handle);
            if (refused != null) {
                logCache.unreserve(recordBytes);
                return CompletableFuture.failedFuture(refused);
            }
            long baseOffset = handle.nextOffset;
            ByteBuf record = WalRecordFormat.encode(alloc, handle.streamId(), handle.epoch(), baseOffset,
                    batch.count(), batch.payload());
            pending = new CachedBatch(handle.streamId(), handle, handle.epoch(), baseOffset, batch.count(), record,
                    new CompletableFuture<>());
            handle.nextOffset = baseOffset + batch.count();
            try {
                walFuture = wal.append(record);
            } catch (RuntimeException e) {
                walFuture = CompletableFuture.failedFuture(e);
            }
            pending.walFuture = walFuture;
            enqueue(pending);
        } finally {
            lock.unlock();
        }
        // `pending.walFuture` may already be processed and cleared by a drain on another thread: use the local.
        walFuture.whenComplete(drainOnCompletion);
        return pending.userFuture;
    }

    /** The stream's next offset, as assigned under the lock. */
    long nextOffset(StreamHandle handle) {
        lock.lock();
        try {
            return handle.nextOffset;
        } finally {
            lock.unlock();
        }
    }

    /** Refuses the stream's later appends with {@code why}, ordered with appends (anything sequenced before still goes). */
    void refuse(StreamHandle handle, RuntimeException why) {
        lock.lock();
        try {
            handle.refuse(why);
        } finally {
            lock.unlock();
        }
    }

    /** Completes once every append sequenced before the call has been processed (acknowledged or failed). */
    CompletableFuture<Void> drained() {
        CompletableFuture<Void> drained = new CompletableFuture<>();
        lock.lock();
        try {
            enqueue(CachedBatch.marker(() -> drained.complete(null)));
        } finally {
            lock.unlock();
        }
        drain();
        return drained;
    }

    /** Fences the engine: appends fail fast with {@code cause}; acknowledged data is still uploaded. */
    void fail(RuntimeException cause) {
        if (failure == null) {
            failure = cause;
            LOG.log(System.Logger.Level.ERROR, "storage engine fenced: " + cause.getMessage(), cause);
        }
    }

    /** The engine is closing: later appends fail with {@link StreamClosedException}. */
    void close() {
        closed = true;
    }

    private RuntimeException refusal(StreamHandle handle) {
        RuntimeException engineFailure = failure;
        if (engineFailure != null) {
            return engineFailure;
        }
        if (closed) {
            return new StreamClosedException("the storage engine is closed");
        }
        return handle.refusal;
    }

    /** Links a batch at the tail of the in-flight queue; caller holds the lock. */
    private void enqueue(CachedBatch batch) {
        inflightTail.next = batch; // volatile write publishes the batch to the drainer
        inflightTail = batch;
    }

    /** Processes durable appends from the head of the queue, in order; safe to call from any thread. */
    private void drain() {
        while (true) {
            if (!draining.compareAndSet(false, true)) {
                return;
            }
            try {
                CachedBatch head = drainHead;
                CachedBatch next;
                while ((next = head.next) != null && next.walFuture.isDone()) {
                    // Unlink the old sentinel; `next` becomes the sentinel. The sequencer never writes head.next
                    // again: once it is non-null the tail has moved past head.
                    head.next = null;
                    head = next;
                    drainHead = head;
                    process(head);
                }
            } finally {
                draining.set(false);
            }
            CachedBatch next = drainHead.next;
            if (next == null || !next.walFuture.isDone()) {
                return;
            }
        }
    }

    private void process(CachedBatch batch) {
        if (batch.marker != null) {
            batch.marker.run();
            return;
        }
        StreamHandle handle = batch.stream;
        Throwable error = null;
        WalAppendResult result = null;
        try {
            result = batch.walFuture.join();
        } catch (CompletionException e) {
            error = Futures.unwrap(e);
        }
        if (error == null && handle.holeCause != null) {
            error = StreamHandle.fenced(handle.streamId(), handle.epoch(), "an earlier append failed: "
                    + handle.holeCause.getMessage());
        }
        if (error != null) {
            logCache.unreserve(batch.sizeBytes());
            batch.record.release();
            if (handle.holeCause == null) {
                handle.holeCause = error;
                refuse(handle, StreamHandle.fenced(handle.streamId(), handle.epoch(), "append at offset "
                        + batch.baseOffset + " failed: " + error.getMessage()));
            }
            if ((error instanceof StorageIOException || error instanceof NodeFencedException) && failure == null) {
                fail((RuntimeException) error);
            }
            if (logCache.sealPendingNow()) {
                // The WAL segment this append belonged to will not complete: seal where we are, so a flush waiting
                // for a segment boundary is not held up (its records are uploaded, not committed as the segment).
                uploader.trigger();
            }
            batch.userFuture.completeExceptionally(error);
            return;
        }
        batch.walNextPosition = result.nextPosition();
        batch.walFuture = null;
        long activeBytes = logCache.insert(batch, wal.isSegmentBoundary(result.nextPosition()));
        if (activeBytes == LogCache.SEALED) {
            uploader.trigger();
        } else {
            uploader.onActiveSize(activeBytes);
        }
        handle.confirm(batch.endOffset());
        appendedBatches.increment();
        appendedBytes.add(batch.payloadBytes());
        batch.userFuture.complete(new AppendResult(batch.baseOffset));
    }
}
