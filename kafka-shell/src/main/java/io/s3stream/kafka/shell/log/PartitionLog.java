package io.s3stream.kafka.shell.log;

import io.s3stream.FetchResult;
import io.s3stream.KeyValues;
import io.s3stream.RecordBatch;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * One topic partition on one stream: the append path (offset assignment, idempotent-producer checks, transaction
 * markers) and reads (up to the high watermark, or up to the last stable offset for read_committed).
 *
 * <h2>Concurrency</h2>
 * Appends are owned by a {@link SerialExecutor}: it assigns the base offset (the stream's next offset), rewrites the
 * Kafka batch's base offset, checks producer sequences ({@link ProducerStates}) and calls {@link Stream#append}, which
 * may block for log-cache space. Reads go straight to the stream, which is thread-safe. Long-polling fetches register a
 * waiter that the append completion path runs, since this shell is the only writer of its partitions.
 *
 * <h2>Transactions</h2>
 * Transactional batches open a transaction of their producer here; a marker (a Kafka control batch written for the
 * transaction coordinator, {@link #writeMarker}) ends it. {@link PartitionTxns} derives the last stable offset and the
 * aborted-transactions index from them; it is rebuilt at open from a checkpoint in the key-value space
 * ({@code kafka/txn-index/<stream id>}) plus a scan of the stream after it. A partition that never saw a transactional
 * batch has no checkpoint: the first one is written before such a batch is appended, so no checkpoint means nothing
 * to scan.
 *
 * <h2>Failure</h2>
 * A failed append fences the stream (the library never leaves a hole); the partition then answers
 * KAFKA_STORAGE_ERROR until the shell reopens it at a higher epoch.
 */
public final class PartitionLog {
    private static final System.Logger LOG = System.getLogger(PartitionLog.class.getName());

    private final String topic;
    private final int partition;
    private final Stream stream;
    private final SerialExecutor appender;
    private final ProducerStates producers; // owned by appender
    private final TxnCheckpoint txnCheckpoint;
    private final TimeIndex timeIndex;
    private final PartitionTxns txns = new PartitionTxns(); // mutated by the appender
    /** Completes once {@link #txns} is rebuilt (on the appender, first thing after the open). */
    private final CompletableFuture<Void> txnsReady = new CompletableFuture<>();
    /** Set when {@link #txns} could not be rebuilt: read_committed reads fail until the partition is reopened. */
    private volatile boolean txnsUnknown;
    private final AppendWaiters waiters = new AppendWaiters();
    private volatile Throwable failure;
    private volatile boolean retired;
    private KafkaKeyCompaction keyCompaction; // guarded by this
    /** Bytes of batches appended and of records read (fetches, including a long poll's attempts), for the balancer. */
    private final java.util.concurrent.atomic.LongAdder bytesIn = new java.util.concurrent.atomic.LongAdder();
    private final java.util.concurrent.atomic.LongAdder bytesOut = new java.util.concurrent.atomic.LongAdder();
    /** The high watermark when this log opened: {@link #bytesAfter} averages the appends since. */
    private final long openedAt;

    public PartitionLog(String topic, int partition, Stream stream, Executor blockingExecutor, KeyValues kv) {
        this.topic = topic;
        this.partition = partition;
        this.stream = stream;
        this.appender = new SerialExecutor(blockingExecutor);
        this.producers = new ProducerStates(topic + "-" + partition, stream);
        this.txnCheckpoint = new TxnCheckpoint(kv, stream.streamId(), topic + "-" + partition);
        this.openedAt = stream.confirmedOffset();
        this.timeIndex = new TimeIndex(kv, stream.streamId(), topic + "-" + partition);
        appender.execute(timeIndex::load);
        appender.execute(this::recoverTxns);
    }


    public Stream stream() {
        return stream;
    }

    public TimeIndex timeIndex() {
        return timeIndex;
    }

    public long logStartOffset() {
        return stream.startOffset();
    }

    /** The high watermark: everything below is durable and readable. */
    public long highWatermark() {
        return stream.confirmedOffset();
    }

    /** The transactions as key compaction needs them, or null while they are not known (opening, or unreadable). */
    private KafkaKeyCompaction.Transactions transactionsForCompaction() {
        if (!txnsReady.isDone() || txnsUnknown || failure != null || retired) {
            return null;
        }
        try {
            appender.execute(this::checkpointTxnsIfIdle); // so that compaction may remove the markers a round later
        } catch (java.util.concurrent.RejectedExecutionException e) {
            return null; // the shell is closing
        }
        PartitionTxns.View view = txns.view();
        return new KafkaKeyCompaction.Transactions(view.lastStableOffset(highWatermark()), view.aborted(),
                txnCheckpoint.covered());
    }

    /** Checkpoints the transaction state if it changed a while ago and everything appended is durable (appender). */
    private void checkpointTxnsIfIdle() {
        long offset = stream.nextOffset();
        if (failure == null && !retired && stream.confirmedOffset() >= offset && txnCheckpoint.dueIdle()) {
            txnCheckpoint.write(offset, txns.checkpoint(offset));
        }
    }

    /**
     * Turns Kafka log compaction of this partition on or off to match the topic's {@code cleanup.policy};
     * {@code topicConfig} gives the topic's current effective configs and is read at every compaction round. Called
     * periodically by the shell: a policy altered on any shell takes effect here within one call.
     */
    public synchronized void syncKeyCompaction(java.util.function.Supplier<Map<String, String>> topicConfig) {
        boolean on = KafkaKeyCompaction.compacts(topicConfig.get()) && !retired;
        if (on && keyCompaction == null) {
            keyCompaction = new KafkaKeyCompaction(this::transactionsForCompaction, topicConfig,
                    System::currentTimeMillis);
            stream.compactKeys(keyCompaction);
        } else if (!on && keyCompaction != null) {
            stream.compactKeys(null);
            keyCompaction = null;
        }
    }

    /** The key of stream {@code streamId}'s transaction checkpoint, which goes with its topic. */
    public static String transactionsKey(long streamId) {
        return TxnCheckpoint.key(streamId);
    }

    /** Where every transaction checkpoint's key starts; the stream id follows. */
    public static final String TRANSACTIONS_PREFIX = TxnCheckpoint.PREFIX;

    /**
     * Stops taking appends (they get NOT_LEADER_OR_FOLLOWER) and closes the stream once the appends queued before this
     * call are done; the library uploads the stream's data so another shell can open it. Long polls are woken.
     */
    public CompletableFuture<Void> retire() {
        CompletableFuture<Void> done = new CompletableFuture<>();
        syncKeyCompaction(Map::of); // off: the next owner compacts
        appender.execute(() -> {
            retired = true;
            // The next owner then opens the partition without scanning for transactions.
            byte[] checkpoint = txnCheckpoint.exists() && failure == null ? txns.checkpoint(stream.nextOffset()) : null;
            long offset = stream.nextOffset();
            stream.close().thenCompose(v -> checkpoint == null ? CompletableFuture.<Void>completedFuture(null)
                    : txnCheckpoint.write(offset, checkpoint).exceptionally(e -> null))
                    .thenCompose(v -> timeIndex.writeAll(stream.startOffset(), stream.confirmedOffset())
                            .exceptionally(e -> null)).whenComplete((v, e) -> {
                waiters.wake();
                if (e != null) {
                    done.completeExceptionally(e);
                } else {
                    done.complete(null);
                }
            });
        });
        return done;
    }

    public boolean retired() {
        return retired;
    }

    /** Why an append failed, after which this handle refuses appends (its stream would have a hole); null if none did. */
    public Throwable failure() {
        return failure;
    }

    /** Outcome of one produce to this partition. */
    public record AppendOutcome(Errors error, long baseOffset, long logAppendTimeMs) {
    }

    /**
     * Appends one validated Kafka batch (its bytes are owned by this call). Completes when the batch is durable, or
     * with an error outcome (never exceptionally).
     */
    public CompletableFuture<AppendOutcome> append(ByteBuffer batchBytes, boolean logAppendTime) {
        CompletableFuture<AppendOutcome> result = new CompletableFuture<>();
        // On the caller (the connection's event loop) when the partition's appender has nothing queued or running and
        // nothing has to wait: no hand-off to the appender's thread, and, when the WAL writes on the caller too (an
        // idle WAL), none back. With appends in flight the WAL queues the record for its own threads, so a pipelining
        // producer's requests are sequenced as they are read, without a thread wake-up each (benchmarks/README.md,
        // "A busy partition's produce on the event loop").
        if (!appender.runHereIfIdle(() -> doAppend(batchBytes, logAppendTime, result, false))) {
            appender.execute(() -> doAppend(batchBytes, logAppendTime, result, true));
        }
        return result;
    }

    /** Whether the partition's appender has nothing queued or running (a snapshot, for tests). */
    boolean appenderIdle() {
        return appender.idle();
    }

    /**
     * The append, on the appender. With {@code mayWait} false it must not block: it returns false, having changed
     * nothing but the batch's rewritten fields (rewritten again by the retry), where it would wait (rebuilding producer
     * state, the first transaction checkpoint, log-cache space). True once {@code result} is or will be completed.
     */
    private boolean doAppend(ByteBuffer bytes, boolean logAppendTime, CompletableFuture<AppendOutcome> result,
                             boolean mayWait) {
        if (retired) {
            result.complete(new AppendOutcome(Errors.NOT_LEADER_OR_FOLLOWER, -1, -1));
            return true;
        }
        if (failure != null) {
            result.complete(new AppendOutcome(Errors.KAFKA_STORAGE_ERROR, -1, -1));
            return true;
        }
        MutableRecordBatch batch = MemoryRecords.readableRecords(bytes).batches().iterator().next();
        long producerId = batch.producerId();
        int count = (int) (batch.lastOffset() - batch.baseOffset()) + 1;
        if (producerId >= 0) {
            if (!producers.recovered() && !mayWait) {
                return false; // reads the stream's tail
            }
            if (!producers.recover()) {
                // Without the tail's state a retry of a batch the previous leader stored would be stored again: the
                // producer retries (same sequences) until the tail can be read.
                result.complete(new AppendOutcome(Errors.KAFKA_STORAGE_ERROR, -1, -1));
                return true;
            }
            if (!producers.admit(batch, result)) {
                return true;
            }
        }
        boolean transactional = batch.isTransactional();
        if (transactional && !txnCheckpoint.exists()) {
            if (!mayWait) {
                return false; // waits for the checkpoint's write
            }
            // The first transactional batch this partition takes: record that transactions start here, before it is
            // appended, so that an open knows to rebuild them (no checkpoint means no transactional data).
            try {
                txnCheckpoint.writeNow(stream.nextOffset(), txns.checkpoint(stream.nextOffset()));
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, () -> topic + "-" + partition
                        + ": could not record the first transaction checkpoint; transactional batch refused", e);
                result.complete(new AppendOutcome(Errors.KAFKA_STORAGE_ERROR, -1, -1));
                return true;
            }
        }
        long baseOffset = stream.nextOffset();
        batch.setLastOffset(baseOffset + (int) (batch.lastOffset() - batch.baseOffset()));
        batch.setPartitionLeaderEpoch(0);
        long appendTime = -1;
        if (logAppendTime) {
            appendTime = System.currentTimeMillis();
            batch.setMaxTimestamp(TimestampType.LOG_APPEND_TIME, appendTime);
        }
        CompletableFuture<io.s3stream.AppendResult> durable;
        try {
            RecordBatch records = RecordBatch.of(count, bytes.duplicate().rewind());
            durable = mayWait ? stream.append(records) : stream.tryAppend(records);
        } catch (RuntimeException e) {
            durable = CompletableFuture.failedFuture(e);
        }
        if (durable == null) {
            return false; // it would wait for log-cache space: nothing was appended
        }
        if (transactional) {
            txns.onTransactionalBatch(producerId, baseOffset);
            txnCheckpoint.changed();
        }
        if (producerId >= 0) {
            producers.onAppended(batch, baseOffset, result);
        }
        long logAppendTimeMs = appendTime;
        int size = bytes.remaining();
        maybeCheckpointTxns(durable, size);
        timeIndex.onAppend(baseOffset, batch.lastOffset(), batch.maxTimestamp(), size, durable, stream.startOffset());
        durable.whenComplete((r, e) -> {
            if (e == null) {
                bytesIn.add(size);
            }
            if (e != null) {
                failure = e;
                result.complete(new AppendOutcome(Errors.forException(e) == Errors.UNKNOWN_SERVER_ERROR
                        ? Errors.KAFKA_STORAGE_ERROR : Errors.forException(e), -1, -1));
            } else {
                if (r.baseOffset() != baseOffset) {
                    failure = new IllegalStateException("stream " + stream.streamId() + " assigned " + r.baseOffset()
                            + ", expected " + baseOffset + ": another writer?");
                }
                result.complete(new AppendOutcome(Errors.NONE, baseOffset, logAppendTimeMs));
            }
            waiters.wake();
        });
        return true;
    }

    /**
     * Writes the marker that ends {@code producerId}'s transaction here (a control batch, as Kafka writes it), for the
     * transaction coordinator. Completes when it is durable: NONE, or NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR, or
     * INVALID_PRODUCER_EPOCH for a marker older than the producer's epoch here (a newer one was written already). A
     * marker for a producer with no open transaction here (a retry, or a partition it added but never wrote to) writes
     * nothing and answers NONE; a bumped epoch still fences the producer's older epoch.
     */
    public CompletableFuture<Errors> writeMarker(long producerId, short epoch, boolean commit, int coordinatorEpoch) {
        CompletableFuture<Errors> result = new CompletableFuture<>();
        appender.execute(() -> doWriteMarker(producerId, epoch, commit, coordinatorEpoch, result));
        return result;
    }

    private void doWriteMarker(long producerId, short epoch, boolean commit, int coordinatorEpoch,
                               CompletableFuture<Errors> result) {
        if (retired) {
            result.complete(Errors.NOT_LEADER_OR_FOLLOWER);
            return;
        }
        if (failure != null) {
            result.complete(Errors.KAFKA_STORAGE_ERROR);
            return;
        }
        if (!producers.recover()) {
            result.complete(Errors.KAFKA_STORAGE_ERROR);
            return;
        }
        if (!producers.acceptMarker(producerId, epoch)) {
            result.complete(Errors.INVALID_PRODUCER_EPOCH);
            return;
        }
        if (!txns.isOpen(producerId)) {
            result.complete(Errors.NONE);
            return;
        }
        long offset = stream.nextOffset();
        long now = System.currentTimeMillis();
        MemoryRecords marker = MemoryRecords.withEndTransactionMarker(offset, now, 0,
                producerId, epoch, new EndTransactionMarker(commit ? ControlRecordType.COMMIT : ControlRecordType.ABORT,
                        coordinatorEpoch));
        CompletableFuture<io.s3stream.AppendResult> durable;
        try {
            durable = stream.append(RecordBatch.of(1, marker.buffer()));
        } catch (RuntimeException e) {
            durable = CompletableFuture.failedFuture(e);
        }
        txns.onMarker(producerId, commit, offset, stream.confirmedOffset());
        txnCheckpoint.changed();
        maybeCheckpointTxns(durable, marker.sizeInBytes());
        timeIndex.onAppend(offset, offset, now, marker.sizeInBytes(), durable, stream.startOffset());
        durable.whenComplete((r, e) -> {
            if (e != null) {
                failure = e;
                result.complete(Errors.KAFKA_STORAGE_ERROR);
            } else {
                result.complete(Errors.NONE);
            }
            waiters.wake();
        });
    }

    /**
     * Rebuilds {@link #txns} at open: the checkpoint, then the stream's batches after it. Runs on the appender before
     * anything else; a failure fences this handle (KAFKA_STORAGE_ERROR, then a reopen) rather than serve a
     * read_committed reader records of an undecided or aborted transaction.
     */
    private void recoverTxns() {
        try {
            byte[] checkpoint = txnCheckpoint.read().orElse(null);
            if (checkpoint == null) {
                return;
            }
            long end = stream.confirmedOffset();
            long at = txns.restore(checkpoint, end);
            long scanned = StreamScan.scan(stream, Math.max(at, stream.startOffset()), end, kb -> {
                // A stored batch that key compaction merged may begin below the checkpoint: what is there is in it.
                if (kb.baseOffset() < at) {
                    return;
                }
                if (kb.isControlBatch()) {
                    Iterator<Record> records = kb.iterator();
                    if (records.hasNext()) { // a marker compaction emptied decides nothing (none at or above at)
                        ControlRecordType type = EndTransactionMarker.deserialize(records.next()).controlType();
                        txns.onMarker(kb.producerId(), type == ControlRecordType.COMMIT, kb.baseOffset(), end);
                    }
                } else if (kb.isTransactional()) {
                    txns.onTransactionalBatch(kb.producerId(), kb.baseOffset());
                }
            });
            txns.trimBelow(stream.startOffset());
            if (at != end) {
                // Start the next open from here, not from the old checkpoint.
                txnCheckpoint.writeNow(end, txns.checkpoint(end));
            } else {
                txnCheckpoint.opened(at);
            }
            long batches = scanned;
            LOG.log(System.Logger.Level.DEBUG, () -> topic + "-" + partition + ": transaction state rebuilt from offset "
                    + at + " (" + batches + " batches scanned): " + txns.view().open().size() + " open, "
                    + txns.view().aborted().size() + " aborted");
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, () -> topic + "-" + partition
                    + ": could not rebuild the transaction state; the partition is reopened", e);
            txnsUnknown = true;
            failure = e;
        } finally {
            txnsReady.complete(null);
        }
    }

    /**
     * After the append of {@code bytes} that will end at the stream's next offset: checkpoints the transaction state
     * as of there, once that append is durable, if it changed a while ago or much was written since. On the appender.
     */
    private void maybeCheckpointTxns(CompletableFuture<?> durable, int bytes) {
        if (!txnCheckpoint.due(bytes)) {
            return;
        }
        long offset = stream.nextOffset();
        byte[] checkpoint = txns.checkpoint(offset);
        txns.trimBelow(stream.startOffset());
        durable.thenRun(() -> txnCheckpoint.write(offset, checkpoint));
    }

    /** The last stable offset: below it, every transaction is decided (the high watermark when none is open). */
    public CompletableFuture<Long> lastStableOffset() {
        return txnsReady.thenApply(v -> {
            if (txnsUnknown) {
                throw new IllegalStateException(topic + "-" + partition + ": transaction state unknown");
            }
            return txns.view().lastStableOffset(highWatermark());
        });
    }

    /**
     * DeleteRecords: makes every offset below {@code offset} ({@code -1}: the high watermark) unreadable, durably and
     * for every shell; completes with the new log start offset. An offset at or below the current start changes
     * nothing; one above the high watermark fails with {@link org.apache.kafka.common.errors.OffsetOutOfRangeException}.
     * The start may fall inside a batch, as in Kafka: fetches from it return that whole batch and the consumer skips
     * the records before its position.
     */
    public CompletableFuture<Long> deleteRecordsBefore(long offset) {
        long hw = highWatermark();
        long target = offset == -1 ? hw : offset;
        if (target < 0 || target > hw) {
            return CompletableFuture.failedFuture(new org.apache.kafka.common.errors.OffsetOutOfRangeException(
                    topic + "-" + partition + ": cannot delete records before " + offset + ": the high watermark is " + hw));
        }
        if (target <= stream.startOffset()) {
            return CompletableFuture.completedFuture(stream.startOffset());
        }
        return stream.trim(target).thenApply(v -> stream.startOffset());
    }

    /** One producer as DescribeProducers shows it; {@code currentTxnStartOffset} is -1 without an open transaction. */
    public record ProducerState(long producerId, short epoch, int lastSequence, long currentTxnStartOffset) {
    }

    /** The producers known here (from this handle's appends and the tail it rebuilt state from), on the appender. */
    public CompletableFuture<List<ProducerState>> producers() {
        CompletableFuture<List<ProducerState>> result = new CompletableFuture<>();
        appender.execute(() -> {
            try {
                if (!producers.recover()) {
                    throw new org.apache.kafka.common.errors.KafkaStorageException(topic + "-" + partition
                            + ": the producer state cannot be rebuilt from the partition's tail now; retry");
                }
                result.complete(producers.describe(txns::openSince));
            } catch (RuntimeException e) {
                result.completeExceptionally(e);
            }
        });
        return result;
    }

    /**
     * Runs {@code waiter} once after the next append completes, or at once if the high watermark has moved past
     * {@code seenHighWatermark} (the one the caller's read saw).
     */
    public void awaitData(long seenHighWatermark, Runnable waiter) {
        waiters.add(waiter);
        if (highWatermark() > seenHighWatermark) {
            waiters.wake();
        }
    }

    /** Forgets a waiter of {@link #awaitData} that has not run: its fetch answered for another reason. */
    public void cancelAwait(Runnable waiter) {
        waiters.remove(waiter);
    }

    /** Waiters registered and neither run nor cancelled. */
    public int awaiting() {
        return waiters.size();
    }

    /**
     * About how many bytes of batches lie from {@code offset} to the high watermark, at the bytes per offset appended
     * since this log opened: 0 when nothing is there, -1 when unknown (nothing appended since it opened).
     */
    public long bytesAfter(long offset) {
        long hw = highWatermark();
        long appended = hw - openedAt;
        long bytes = bytesIn.sum();
        if (offset >= hw) {
            return 0;
        }
        return appended <= 0 || bytes <= 0 ? -1 : (long) Math.min(1e15, (double) bytes / appended * (hw - offset));
    }

    /**
     * Bytes read for one fetch: whole Kafka batches in the library's buffers (null on an error; the holder releases
     * them, see {@link ReadRecords}), with the offsets a Fetch response carries. {@code abortedTransactions} is null
     * unless the read was read_committed.
     */
    public record ReadResult(Errors error, ReadRecords records, long highWatermark, long logStartOffset,
                             long lastStableOffset, List<PartitionTxns.Aborted> abortedTransactions) {
        public ReadResult(Errors error, ReadRecords records, long highWatermark, long logStartOffset) {
            this(error, records, highWatermark, logStartOffset, highWatermark, null);
        }

        ReadResult withTransactions(long lso, List<PartitionTxns.Aborted> aborted) {
            return new ReadResult(error, records, highWatermark, logStartOffset, lso, aborted);
        }
    }

    /**
     * Reads whole batches from {@code offset}, at most about {@code maxBytes} (at least one batch if any): up to the
     * high watermark, or for {@code readCommitted} up to the last stable offset, with the aborted transactions among
     * them (Kafka's read_committed isolation: the consumer drops the records of those).
     */
    public CompletableFuture<ReadResult> read(long offset, int maxBytes, boolean readCommitted) {
        return txnsReady.thenCompose(ready -> {
            long hw = highWatermark();
            long start = logStartOffset();
            PartitionTxns.View view = txns.view();
            long lso = view.lastStableOffset(hw);
            long end = readCommitted ? lso : hw;
            if (readCommitted && txnsUnknown) {
                return CompletableFuture.completedFuture(new ReadResult(Errors.KAFKA_STORAGE_ERROR, null, hw, start));
            }
            List<PartitionTxns.Aborted> aborted = readCommitted ? view.abortedBetween(offset, end) : null;
            if (offset < start || offset > hw) {
                return CompletableFuture.completedFuture(new ReadResult(Errors.OFFSET_OUT_OF_RANGE, null, hw, start)
                        .withTransactions(lso, aborted));
            }
            if (offset >= end || maxBytes <= 0) {
                return CompletableFuture.completedFuture(new ReadResult(Errors.NONE, ReadRecords.EMPTY, hw, start)
                        .withTransactions(lso, readCommitted ? List.of() : null));
            }
            return readFrom(offset, end, hw, start, maxBytes, new ArrayList<>(), new ArrayList<>(), 0).thenApply(r -> {
                if (r.records() != null) {
                    bytesOut.add(r.records().sizeInBytes());
                }
                return r.withTransactions(lso, aborted);
            });
        });
    }

    /** {@link #read(long, int, boolean)} read_uncommitted. */
    public CompletableFuture<ReadResult> read(long offset, int maxBytes) {
        return read(offset, maxBytes, false);
    }

    /** Bytes appended plus bytes read since this log was opened; the balancer turns differences into rates. */
    public long trafficBytes() {
        return bytesIn.sum() + bytesOut.sum();
    }

    public String topic() {
        return topic;
    }

    public int partition() {
        return partition;
    }

    /**
     * One library fetch may return fewer batches than are there (it stops at a cache block or an object), so a read
     * continues until it reaches {@code end} or {@code maxBytes}. The batches stay in the library's buffers: every
     * fetch result read is kept open in {@code results} until the {@link ReadRecords} is released.
     */
    private CompletableFuture<ReadResult> readFrom(long from, long end, long hw, long start, int maxBytes,
                                                   List<FetchResult> results, List<ByteBuffer> batches, int total) {
        return stream.fetch(from, end, maxBytes - total).handle((r, e) -> {
            if (e != null) {
                if (!batches.isEmpty()) { // what was read so far is a valid answer
                    return CompletableFuture.completedFuture(new ReadResult(Errors.NONE,
                            ReadRecords.of(results, batches, total), hw, start));
                }
                results.forEach(FetchResult::close);
                Errors err = e.getCause() instanceof io.s3stream.OffsetOutOfRangeException
                        || e instanceof io.s3stream.OffsetOutOfRangeException
                        ? Errors.OFFSET_OUT_OF_RANGE : Errors.KAFKA_STORAGE_ERROR;
                return CompletableFuture.completedFuture(new ReadResult(err, null, hw, start));
            }
            results.add(r);
            int size = total;
            long next = from;
            boolean full = false;
            for (StoredBatch b : r.batches()) {
                int n = b.payload().remaining();
                if (size > 0 && size + n > maxBytes) {
                    full = true;
                    break;
                }
                batches.add(b.payload());
                size += n;
                next = b.endOffset();
            }
            if (full || next >= end || next <= from || size >= maxBytes) {
                return CompletableFuture.completedFuture(new ReadResult(Errors.NONE,
                        ReadRecords.of(results, batches, size), hw, start));
            }
            return readFrom(next, end, hw, start, maxBytes, results, batches, size);
        }).thenCompose(f -> f);
    }
}
