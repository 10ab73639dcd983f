package io.s3stream.kafka.shell.log;

import io.s3stream.FetchResult;
import io.s3stream.KeyValues;
import io.s3stream.RecordBatch;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.kafka.shell.network.ApiFamily;
import io.s3stream.kafka.shell.network.RateLimitedLog;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One topic partition on one stream: the append path (offset assignment, idempotent-producer checks, transaction
 * markers) and reads (up to the high watermark, or up to the last stable offset for read_committed).
 *
 * <h2>Concurrency</h2>
 * Appends are owned by a {@link SerialExecutor}: it assigns the base offset (the stream's next offset), rewrites the
 * Kafka batch's base offset, checks producer sequences and calls {@link Stream#append}, which may block for log-cache
 * space. Reads go straight to the stream, which is thread-safe. Long-polling fetches register a waiter that the
 * append completion path runs, since this shell is the only writer of its partitions.
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
    /** Kafka keeps the metadata of the last five batches per producer to recognise retried duplicates. */
    private static final int PRODUCER_BATCH_CACHE = 5;
    private static final System.Logger LOG = System.getLogger(PartitionLog.class.getName());

    private final String topic;
    private final int partition;
    private final Stream stream;
    private final SerialExecutor appender;
    /** How much of the partition's tail is scanned to rebuild producer state after an open. */
    static final long PRODUCER_RECOVERY_TAIL_BYTES = 8L << 20;

    private final Map<Long, ProducerEntry> producers = new HashMap<>(); // owned by appender
    private final TxnCheckpoint txnCheckpoint;
    private final TimeIndex timeIndex;
    private final PartitionTxns txns = new PartitionTxns(); // mutated by the appender
    /** Completes once {@link #txns} is rebuilt (on the appender, first thing after the open). */
    private final CompletableFuture<Void> txnsReady = new CompletableFuture<>();
    /** Set when {@link #txns} could not be rebuilt: read_committed reads fail until the partition is reopened. */
    private volatile boolean txnsUnknown;
    private boolean producersRecovered; // owned by appender
    /** After a failed rebuild of producer state, when the next may start (nanoTime); 0 when none failed. */
    private long producersRetryAtNanos; // owned by appender
    static final long PRODUCER_RECOVERY_RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final RateLimitedLog PRODUCER_RECOVERY_FAILED =
            new RateLimitedLog(LOG, System.Logger.Level.WARNING, TimeUnit.MINUTES.toNanos(1));
    private final AppendWaiters waiters = new AppendWaiters();
    private volatile Throwable failure;
    private volatile boolean retired;
    private KafkaKeyCompaction keyCompaction; // guarded by this
    /** Bytes of batches appended and of records read (fetches, including a long poll's attempts), for the balancer. */
    private final java.util.concurrent.atomic.LongAdder bytesIn = new java.util.concurrent.atomic.LongAdder();
    /** Appends passed to the stream and not yet acknowledged: while any is, the partition is busy (see append). */
    private final AtomicInteger appendsInFlight = new AtomicInteger();
    private final java.util.concurrent.atomic.LongAdder bytesOut = new java.util.concurrent.atomic.LongAdder();
    /** The high watermark when this log opened: {@link #bytesAfter} averages the appends since. */
    private final long openedAt;

    public PartitionLog(String topic, int partition, Stream stream, Executor blockingExecutor, KeyValues kv) {
        this.topic = topic;
        this.partition = partition;
        this.stream = stream;
        this.appender = new SerialExecutor(blockingExecutor);
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
        // On the caller (the connection's event loop) when the partition is idle (its appender has nothing queued or
        // running, its last append is acknowledged) and nothing has to wait: no hand-off to the appender's thread,
        // and, when the WAL writes on the caller too, none back. A busy partition keeps the appender, so that an event
        // loop never stops reading a pipelining producer's next requests to write the WAL itself.
        if (appendsInFlight.get() != 0
                || !appender.runHereIfIdle(() -> doAppend(batchBytes, logAppendTime, result, false))) {
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
        ProducerEntry entry = null;
        if (producerId >= 0) {
            if (!producersRecovered && !mayWait) {
                return false; // reads the stream's tail
            }
            if (!producersRecovered && !recoverProducers()) {
                // Without the tail's state a retry of a batch the previous leader stored would be stored again: the
                // producer retries (same sequences) until the tail can be read.
                result.complete(new AppendOutcome(Errors.KAFKA_STORAGE_ERROR, -1, -1));
                return true;
            }
            entry = producers.get(producerId);
            if (entry != null) {
                short epoch = batch.producerEpoch();
                if (epoch < entry.epoch) {
                    result.complete(new AppendOutcome(Errors.INVALID_PRODUCER_EPOCH, -1, -1));
                    return true;
                }
                if (epoch == entry.epoch) {
                    for (BatchMeta m : entry.recent) {
                        if (m.firstSeq == batch.baseSequence() && m.lastSeq == batch.lastSequence()) {
                            LOG.log(System.Logger.Level.INFO, () -> topic + "-" + partition + ": duplicate batch of producer "
                                    + producerId + " (sequences " + m.firstSeq + ".." + m.lastSeq + ") answered with its offset "
                                    + m.baseOffset);
                            // A retried duplicate gets the original's outcome, once the original is durable: acking it
                            // earlier would acknowledge a batch whose append may still fail.
                            m.outcome.whenComplete((o, e) -> result.complete(e != null || o.error() != Errors.NONE
                                    ? new AppendOutcome(Errors.KAFKA_STORAGE_ERROR, -1, -1)
                                    : new AppendOutcome(Errors.NONE, m.baseOffset, -1)));
                            return true;
                        }
                    }
                    int expected = entry.lastSeq() == Integer.MAX_VALUE ? 0 : entry.lastSeq() + 1;
                    if (batch.baseSequence() != expected) {
                        outOfOrder(producerId, batch, "expected sequence " + expected, entry);
                        result.complete(new AppendOutcome(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1));
                        return true;
                    }
                } else if (batch.baseSequence() != 0) {
                    outOfOrder(producerId, batch, "a new epoch starts at sequence 0", entry);
                    result.complete(new AppendOutcome(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1));
                    return true;
                }
            }
            if (entry == null && batch.baseSequence() != 0) {
                // Unknown here, and not at its first batch: its earlier batches are older than the recovered tail, or
                // still on their way (during a move, an earlier batch went to the old leader and was refused there
                // while this one came here). Accepting this one would leave that earlier batch out of order forever
                // (the client retries it, the log refuses it: a stuck producer), so the producer is told its state is
                // unknown: it bumps its epoch and resends its batches from sequence 0 (KIP-360).
                LOG.log(System.Logger.Level.INFO, () -> topic + "-" + partition + ": batch of unknown producer "
                        + producerId + " epoch " + batch.producerEpoch() + " at sequence " + batch.baseSequence()
                        + ", not 0: answered UNKNOWN_PRODUCER_ID so that it restarts its sequences");
                result.complete(new AppendOutcome(Errors.UNKNOWN_PRODUCER_ID, -1, -1));
                return true;
            }
            // A producer first seen at sequence 0 starts here.
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
        appendsInFlight.incrementAndGet();
        if (transactional) {
            txns.onTransactionalBatch(producerId, baseOffset);
            txnCheckpoint.changed();
        }
        if (producerId >= 0) {
            if (entry == null || entry.epoch != batch.producerEpoch()) {
                entry = new ProducerEntry(batch.producerEpoch());
                producers.put(producerId, entry);
            }
            entry.recent.addLast(new BatchMeta(batch.baseSequence(), batch.lastSequence(), baseOffset, result));
            if (entry.recent.size() > PRODUCER_BATCH_CACHE) {
                entry.recent.removeFirst();
            }
        }
        long logAppendTimeMs = appendTime;
        int size = bytes.remaining();
        maybeCheckpointTxns(durable, size);
        timeIndex.onAppend(baseOffset, batch.lastOffset(), batch.maxTimestamp(), size, durable, stream.startOffset());
        durable.whenComplete((r, e) -> {
            appendsInFlight.decrementAndGet();
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
        if (!producersRecovered && !recoverProducers()) {
            result.complete(Errors.KAFKA_STORAGE_ERROR);
            return;
        }
        ProducerEntry entry = producers.get(producerId);
        if (entry != null && epoch < entry.epoch) {
            result.complete(Errors.INVALID_PRODUCER_EPOCH);
            return;
        }
        if (entry != null && epoch > entry.epoch) {
            producers.put(producerId, new ProducerEntry(epoch));
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
            long scanned = scan(Math.max(at, stream.startOffset()), end, kb -> {
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
                if (!producersRecovered && !recoverProducers()) {
                    throw new org.apache.kafka.common.errors.KafkaStorageException(topic + "-" + partition
                            + ": the producer state cannot be rebuilt from the partition's tail now; retry");
                }
                List<ProducerState> out = new ArrayList<>();
                producers.forEach((pid, e) -> out.add(new ProducerState(pid, e.epoch, e.lastSeq(), txns.openSince(pid))));
                result.complete(out);
            } catch (RuntimeException e) {
                result.completeExceptionally(e);
            }
        });
        return result;
    }

    /** Says why a batch was refused as out of order: the producer retries it, so this explains a stuck producer. */
    private void outOfOrder(long producerId, MutableRecordBatch batch, String why, ProducerEntry entry) {
        LOG.log(System.Logger.Level.INFO, () -> topic + "-" + partition + ": out-of-order batch of producer " + producerId
                + " epoch " + batch.producerEpoch() + ", sequences " + batch.baseSequence() + ".." + batch.lastSequence()
                + " (" + why + "); known: epoch " + entry.epoch + ", recent " + entry.recent.stream()
                .map(m -> m.firstSeq + ".." + m.lastSeq + "@" + m.baseOffset + (m.outcome == DURABLE ? " (from the tail)" : ""))
                .toList());
    }

    /**
     * Hands every Kafka batch stored in {@code [from, end)} to {@code visit}, in offset order; returns how many. Reads
     * through the library (log cache, block cache, object storage) one megabyte at a time; blocks.
     */
    private long scan(long from, long end, java.util.function.Consumer<MutableRecordBatch> visit) {
        long count = 0;
        while (from < end) {
            long next = from;
            try (FetchResult fr = stream.fetch(from, end, 1 << 20).join()) {
                for (StoredBatch sb : fr.batches()) {
                    next = sb.endOffset();
                    for (MutableRecordBatch kb : MemoryRecords.readableRecords(sb.payload().duplicate()).batches()) {
                        count++;
                        visit.accept(kb);
                    }
                }
            }
            if (next <= from) {
                break;
            }
            from = next;
        }
        return count;
    }

    /**
     * Rebuilds idempotent-producer state (epoch and the last five batches per producer id) from the partition's tail,
     * once per open, on the first idempotent append: a retry that spans a broker restart or a partition move then gets
     * its original offset instead of being stored twice, and a gap is still rejected. The tail is the last
     * {@link #PRODUCER_RECOVERY_TAIL_BYTES} or so (estimated from the size of the last batch); a producer whose last
     * batch is older than that is unknown, and asked to restart its sequences when it next writes here. Runs on the
     * appender, before any idempotent append of this handle.
     *
     * <p>A tail that cannot be read (the object store failing) leaves no state at all and returns false: the caller
     * refuses the append with a retriable error, and the rebuild is tried again at the next idempotent append, at most
     * once per {@link #PRODUCER_RECOVERY_RETRY_NANOS}. Half a rebuild is worse than none: it would take the last batch
     * it reached for the producer's last, refuse the retry of a batch the previous leader stored as out of order, and
     * the producer, restarting its sequences, would store that batch twice (ChaosIT found this).
     */
    private boolean recoverProducers() {
        long now = System.nanoTime();
        if (producersRetryAtNanos != 0 && now - producersRetryAtNanos < 0) {
            return false;
        }
        long end = stream.confirmedOffset();
        long start = stream.startOffset();
        if (end <= start) {
            producersRecovered = true;
            return true;
        }
        try {
            long from;
            try (FetchResult last = stream.fetch(end - 1, end, 1).join()) {
                StoredBatch b = last.batches().getFirst();
                long perRecord = Math.max(1, b.payload().remaining() / Math.max(1, b.count()));
                from = Math.max(start, end - Math.max(1, PRODUCER_RECOVERY_TAIL_BYTES / perRecord));
            }
            long scanned = scan(from, end, kb -> {
                if (kb.producerId() < 0) {
                    return;
                }
                ProducerEntry e = producers.get(kb.producerId());
                if (kb.isControlBatch()) {
                    // A marker at a bumped epoch (a coordinator's abort on timeout) fences older epochs.
                    if (e != null && kb.producerEpoch() > e.epoch) {
                        producers.put(kb.producerId(), new ProducerEntry(kb.producerEpoch()));
                    }
                    return;
                }
                if (e == null || kb.producerEpoch() > e.epoch) {
                    e = new ProducerEntry(kb.producerEpoch());
                    producers.put(kb.producerId(), e);
                } else if (kb.producerEpoch() < e.epoch) {
                    return;
                }
                e.recent.addLast(new BatchMeta(kb.baseSequence(), kb.lastSequence(), kb.baseOffset(), DURABLE));
                if (e.recent.size() > PRODUCER_BATCH_CACHE) {
                    e.recent.removeFirst();
                }
            });
            long batches = scanned;
            LOG.log(System.Logger.Level.DEBUG, () -> topic + "-" + partition + ": producer state of " + producers.size()
                    + " producer(s) rebuilt from " + batches + " tail batch(es)");
            producersRecovered = true;
            producersRetryAtNanos = 0;
            return true;
        } catch (RuntimeException e) {
            // Unreadable now (or trimmed meanwhile): forget what was read, refuse idempotent appends, try again later.
            producers.clear();
            producersRetryAtNanos = now + PRODUCER_RECOVERY_RETRY_NANOS;
            PRODUCER_RECOVERY_FAILED.log(() -> topic + "-" + partition + ": could not rebuild producer state from the "
                    + "tail; idempotent appends answer KAFKA_STORAGE_ERROR (retriable) until it can: "
                    + ApiFamily.cause(e));
            return false;
        }
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

    /** A recent batch of one producer; {@code outcome} completes when its append is durable (or failed). */
    private record BatchMeta(int firstSeq, int lastSeq, long baseOffset, CompletableFuture<AppendOutcome> outcome) {
    }

    /** The outcome of a batch read back from the stream: durable by definition. */
    private static final CompletableFuture<AppendOutcome> DURABLE =
            CompletableFuture.completedFuture(new AppendOutcome(Errors.NONE, -1, -1));

    private static final class ProducerEntry {
        final short epoch;
        final ArrayDeque<BatchMeta> recent = new ArrayDeque<>();

        ProducerEntry(short epoch) {
            this.epoch = epoch;
        }

        int lastSeq() {
            return recent.isEmpty() ? -1 : recent.getLast().lastSeq;
        }
    }
}
