package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.s3stream.AppendResult;
import io.s3stream.NodeFencedException;
import io.s3stream.OverCapacityException;
import io.s3stream.RecordBatch;
import io.s3stream.StorageIOException;
import io.s3stream.StreamClosedException;
import io.s3stream.spi.WalRecordFormat;
import io.s3stream.spi.WriteAheadLog;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The write path of every stream of one engine: assigns offsets, hands WAL records to the write-ahead log, and once
 * they are durable puts the batches into the log cache and completes the appends' futures, in WAL order.
 *
 * <h2>Concurrency</h2>
 * Appends of all streams pass one short critical section, the <em>sequencer</em> lock: it assigns the stream's offsets,
 * encodes the WAL record (into the {@link RecordArena}), queues the in-flight append and hands the record to the WAL,
 * with the append itself as the WAL's callback. Because the WAL is called in sequencer order, WAL positions follow
 * queue order. A WAL may write a lone record on the calling thread (wal-blockdev, on a quiet WAL): the lock is then
 * held through that write, and an append of another stream arriving meanwhile waits for it, which is what makes the
 * WAL see appends close together and go back to group commits on its own thread. Completions are <em>drained</em> from the head of that queue only, by whichever thread finds the head
 * durable (usually the WAL's completion thread, from the callback), so batches enter the log cache and
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
    /** Where records are encoded; used under the lock. */
    private final RecordArena arena;
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
    private volatile RuntimeException failure;
    private volatile boolean closed;
    final LongAdder appendedBatches = new LongAdder();
    final LongAdder appendedBytes = new LongAdder();

    AppendSequencer(WriteAheadLog wal, LogCache logCache, Uploader uploader, ByteBufAllocator alloc, int maxBatchBytes,
                    long backpressureNanos) {
        this.wal = wal;
        this.logCache = logCache;
        this.uploader = uploader;
        this.arena = new RecordArena(alloc);
        this.maxBatchBytes = maxBatchBytes;
        this.backpressureNanos = backpressureNanos;
        CachedBatch sentinel = CachedBatch.marker();
        this.inflightTail = sentinel;
        this.drainHead = sentinel;
    }

    /**
     * Sequences {@code batch} for {@code handle}. With {@code mayWait} false, returns null (nothing reserved, no offset
     * assigned) where it would wait: when the log cache has no room for it now (instead of waiting for an upload to
     * make some) and when another append holds the lock (it may be writing an idle WAL on its own thread). Appends in
     * flight do not make it wait: the WAL queues the record for its own threads then (benchmarks/README.md, "A busy
     * partition's produce on the event loop").
     */
    CompletableFuture<AppendResult> append(StreamHandle handle, RecordBatch batch, boolean mayWait) {
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
        if (!mayWait) {
            if (!logCache.tryReserve(recordBytes)) {
                return null;
            }
        } else {
            try {
                logCache.reserve(recordBytes, backpressureNanos);
            } catch (OverCapacityException e) {
                return CompletableFuture.failedFuture(e);
            }
        }
        CachedBatch pending;
        if (mayWait) {
            lock.lock();
        } else if (!lock.tryLock()) {
            logCache.unreserve(recordBytes);
            return null;
        }
        try {
            refused = refusal(handle);
            if (refused != null) {
                logCache.unreserve(recordBytes);
                return CompletableFuture.failedFuture(refused);
            }
            long baseOffset = handle.nextOffset;
            ByteBuf buffer = arena.encode(handle.streamId(), handle.epoch(), baseOffset, batch.count(),
                    batch.payload());
            pending = new CachedBatch(handle.streamId(), handle, handle.epoch(), baseOffset, batch.count(), buffer,
                    arena.index(), arena.view());
            handle.nextOffset = baseOffset + batch.count();
            enqueue(pending);
            try {
                // Its callback drains (not while this thread holds the lock: below).
                wal.append(buffer, pending.index, recordBytes, pending);
            } catch (RuntimeException e) {
                pending.onFailure(e);
            }
        } finally {
            lock.unlock();
        }
        // Completes the append at once if the WAL already did (a refusal, or a WAL thread faster than this one).
        drain();
        return pending;
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
        CachedBatch marker = CachedBatch.marker();
        lock.lock();
        try {
            enqueue(marker);
        } finally {
            lock.unlock();
        }
        drain();
        return marker.thenApply(ignored -> null);
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
        lock.lock();
        try {
            closed = true;
            arena.close();
        } finally {
            lock.unlock();
        }
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

    /**
     * An append's WAL outcome arrived ({@link CachedBatch#onDurable}): drains, unless this thread holds the lock (the
     * WAL refused the record inside {@code append}, which drains once it let go of the lock).
     */
    void walCompleted() {
        if (!lock.isHeldByCurrentThread()) {
            drain();
        }
    }

    /**
     * Processes durable appends from the head of the queue, in order; safe to call from any thread. Every WAL outcome
     * calls it; no wake-up is lost: whoever leaves the drainer's flag looks at the head again, and a thread that could
     * not take the flag published its outcome (or linked its append) before, so the drainer sees it.
     */
    private void drain() {
        while (true) {
            if (!draining.compareAndSet(false, true)) {
                return;
            }
            try {
                CachedBatch head = drainHead;
                CachedBatch next;
                while ((next = head.next) != null && next.walDone()) {
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
            if (next == null || !next.walDone()) {
                return;
            }
        }
    }

    private void process(CachedBatch batch) {
        if (batch.isMarker()) {
            batch.complete(null);
            return;
        }
        StreamHandle handle = batch.stream;
        Throwable error = batch.walError();
        if (error == null && handle.holeCause != null) {
            error = StreamHandle.fenced(handle.streamId(), handle.epoch(), "an earlier append failed: "
                    + handle.holeCause.getMessage());
        }
        if (error != null) {
            logCache.unreserve(batch.sizeBytes());
            batch.releaseRecord();
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
            batch.completeExceptionally(error);
            return;
        }
        // Counted before the log cache has it: from there on an upload may release the record's buffer.
        appendedBatches.increment();
        appendedBytes.add(batch.payloadBytes());
        long activeBytes = logCache.insert(batch, wal.isSegmentBoundary(batch.walNextPosition));
        if (activeBytes == LogCache.SEALED) {
            uploader.trigger();
        } else {
            uploader.onActiveSize(activeBytes);
        }
        handle.confirm(batch.endOffset());
        batch.complete(new AppendResult(batch.baseOffset));
    }
}
