package io.s3stream.kafka.shell.log;

import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;

/**
 * One topic partition on one stream: the append path (offset assignment, idempotent-producer checks) and reads.
 *
 * <h2>Concurrency</h2>
 * Appends are owned by a {@link SerialExecutor}: it assigns the base offset (the stream's next offset), rewrites the
 * Kafka batch's base offset, checks producer sequences and calls {@link Stream#append}, which may block for log-cache
 * space. Reads go straight to the stream, which is thread-safe. Long-polling fetches register a waiter that the
 * append completion path runs, since this shell is the only writer of its partitions.
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
    private boolean producersRecovered; // owned by appender
    private final ConcurrentLinkedQueue<Runnable> waiters = new ConcurrentLinkedQueue<>();
    private volatile Throwable failure;
    private volatile boolean retired;
    /** Bytes of batches appended and of records read (fetches, including a long poll's attempts), for the balancer. */
    private final java.util.concurrent.atomic.LongAdder bytesIn = new java.util.concurrent.atomic.LongAdder();
    private final java.util.concurrent.atomic.LongAdder bytesOut = new java.util.concurrent.atomic.LongAdder();

    public PartitionLog(String topic, int partition, Stream stream, Executor blockingExecutor) {
        this.topic = topic;
        this.partition = partition;
        this.stream = stream;
        this.appender = new SerialExecutor(blockingExecutor);
    }


    public Stream stream() {
        return stream;
    }

    public long logStartOffset() {
        return stream.startOffset();
    }

    /** The high watermark: everything below is durable and readable. */
    public long highWatermark() {
        return stream.confirmedOffset();
    }

    /**
     * Stops taking appends (they get NOT_LEADER_OR_FOLLOWER) and closes the stream once the appends queued before this
     * call are done; the library uploads the stream's data so another shell can open it. Long polls are woken.
     */
    public CompletableFuture<Void> retire() {
        CompletableFuture<Void> done = new CompletableFuture<>();
        appender.execute(() -> {
            retired = true;
            stream.close().whenComplete((v, e) -> {
                wakeWaiters();
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
        appender.execute(() -> doAppend(batchBytes, logAppendTime, result));
        return result;
    }

    private void doAppend(ByteBuffer bytes, boolean logAppendTime, CompletableFuture<AppendOutcome> result) {
        if (retired) {
            result.complete(new AppendOutcome(Errors.NOT_LEADER_OR_FOLLOWER, -1, -1));
            return;
        }
        if (failure != null) {
            result.complete(new AppendOutcome(Errors.KAFKA_STORAGE_ERROR, -1, -1));
            return;
        }
        MutableRecordBatch batch = MemoryRecords.readableRecords(bytes).batches().iterator().next();
        long producerId = batch.producerId();
        int count = (int) (batch.lastOffset() - batch.baseOffset()) + 1;
        ProducerEntry entry = null;
        if (producerId >= 0) {
            if (!producersRecovered) {
                recoverProducers();
            }
            entry = producers.get(producerId);
            if (entry != null) {
                short epoch = batch.producerEpoch();
                if (epoch < entry.epoch) {
                    result.complete(new AppendOutcome(Errors.INVALID_PRODUCER_EPOCH, -1, -1));
                    return;
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
                            return;
                        }
                    }
                    int expected = entry.lastSeq() == Integer.MAX_VALUE ? 0 : entry.lastSeq() + 1;
                    if (batch.baseSequence() != expected) {
                        outOfOrder(producerId, batch, "expected sequence " + expected, entry);
                        result.complete(new AppendOutcome(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1));
                        return;
                    }
                } else if (batch.baseSequence() != 0) {
                    outOfOrder(producerId, batch, "a new epoch starts at sequence 0", entry);
                    result.complete(new AppendOutcome(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1));
                    return;
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
                return;
            }
            // A producer first seen at sequence 0 starts here.
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
            durable = stream.append(RecordBatch.of(count, bytes.duplicate().rewind()));
        } catch (RuntimeException e) {
            durable = CompletableFuture.failedFuture(e);
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
            wakeWaiters();
        });
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
     * Rebuilds idempotent-producer state (epoch and the last five batches per producer id) from the partition's tail,
     * once per open, on the first idempotent append: a retry that spans a broker restart or a partition move then gets
     * its original offset instead of being stored twice, and a gap is still rejected. The tail is the last
     * {@link #PRODUCER_RECOVERY_TAIL_BYTES} or so (estimated from the size of the last batch); a producer whose last
     * batch is older than that is unknown, and asked to restart its sequences when it next writes here. Runs on the
     * appender, before any idempotent append of this handle.
     */
    private void recoverProducers() {
        producersRecovered = true;
        long end = stream.confirmedOffset();
        long start = stream.startOffset();
        if (end <= start) {
            return;
        }
        try {
            long from;
            try (FetchResult last = stream.fetch(end - 1, end, 1).join()) {
                StoredBatch b = last.batches().getFirst();
                long perRecord = Math.max(1, b.payload().remaining() / Math.max(1, b.count()));
                from = Math.max(start, end - Math.max(1, PRODUCER_RECOVERY_TAIL_BYTES / perRecord));
            }
            long scanned = 0;
            while (from < end) {
                long next = from;
                try (FetchResult fr = stream.fetch(from, end, 1 << 20).join()) {
                    for (StoredBatch sb : fr.batches()) {
                        next = sb.endOffset();
                        scanned++;
                        for (MutableRecordBatch kb : MemoryRecords.readableRecords(sb.payload().duplicate()).batches()) {
                            if (kb.producerId() < 0 || kb.isControlBatch()) {
                                continue;
                            }
                            ProducerEntry e = producers.get(kb.producerId());
                            if (e == null || kb.producerEpoch() > e.epoch) {
                                e = new ProducerEntry(kb.producerEpoch());
                                producers.put(kb.producerId(), e);
                            } else if (kb.producerEpoch() < e.epoch) {
                                continue;
                            }
                            e.recent.addLast(new BatchMeta(kb.baseSequence(), kb.lastSequence(), kb.baseOffset(), DURABLE));
                            if (e.recent.size() > PRODUCER_BATCH_CACHE) {
                                e.recent.removeFirst();
                            }
                        }
                    }
                }
                if (next <= from) {
                    break;
                }
                from = next;
            }
            long batches = scanned;
            LOG.log(System.Logger.Level.DEBUG, () -> topic + "-" + partition + ": producer state of " + producers.size()
                    + " producer(s) rebuilt from " + batches + " tail batch(es)");
        } catch (RuntimeException e) {
            // Trimmed meanwhile or unreadable: fall back to accepting unknown producers, and say so.
            LOG.log(System.Logger.Level.WARNING, () -> topic + "-" + partition
                    + ": could not rebuild producer state from the tail; producers will be asked to restart their "
                    + "sequences (UNKNOWN_PRODUCER_ID)", e);
        }
    }

    /**
     * Runs {@code waiter} once after the next append completes, or at once if the high watermark has moved past
     * {@code seenHighWatermark} (the one the caller's read saw).
     */
    public void awaitData(long seenHighWatermark, Runnable waiter) {
        waiters.add(waiter);
        if (highWatermark() > seenHighWatermark) {
            wakeWaiters();
        }
    }

    /** Runs the waiters registered so far; one that re-registers while running waits for the next append. */
    private void wakeWaiters() {
        for (int n = waiters.size(); n > 0; n--) {
            Runnable w = waiters.poll();
            if (w == null) {
                return;
            }
            w.run();
        }
    }

    /** Bytes read for one fetch: whole Kafka batches, copied out of the library's buffers. */
    public record ReadResult(Errors error, ByteBuffer records, long highWatermark, long logStartOffset) {
    }

    /** Reads whole batches from {@code offset}, at most about {@code maxBytes} (at least one batch if any). */
    public CompletableFuture<ReadResult> read(long offset, int maxBytes) {
        long hw = highWatermark();
        long start = logStartOffset();
        if (offset < start || offset > hw) {
            return CompletableFuture.completedFuture(new ReadResult(Errors.OFFSET_OUT_OF_RANGE, null, hw, start));
        }
        if (offset == hw || maxBytes <= 0) {
            return CompletableFuture.completedFuture(new ReadResult(Errors.NONE, ByteBuffer.allocate(0), hw, start));
        }
        return readFrom(offset, hw, start, maxBytes, new ArrayList<>(), 0).thenApply(r -> {
            if (r.records() != null) {
                bytesOut.add(r.records().remaining());
            }
            return r;
        });
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
     * continues until it reaches {@code hw} or {@code maxBytes}; each chunk's batches are copied out at once so the
     * library's buffers go back before the next fetch.
     */
    private CompletableFuture<ReadResult> readFrom(long from, long hw, long start, int maxBytes, List<ByteBuffer> parts,
                                                   int total) {
        return stream.fetch(from, hw, maxBytes - total).handle((r, e) -> {
            if (e != null) {
                if (!parts.isEmpty()) { // what was read so far is a valid answer
                    return CompletableFuture.completedFuture(new ReadResult(Errors.NONE, merge(parts, total), hw, start));
                }
                Errors err = e.getCause() instanceof io.s3stream.OffsetOutOfRangeException
                        || e instanceof io.s3stream.OffsetOutOfRangeException
                        ? Errors.OFFSET_OUT_OF_RANGE : Errors.KAFKA_STORAGE_ERROR;
                return CompletableFuture.completedFuture(new ReadResult(err, null, hw, start));
            }
            int size = total;
            long next = from;
            boolean full = false;
            try (FetchResult fr = r) {
                List<ByteBuffer> chunk = new ArrayList<>();
                int chunkBytes = 0;
                for (StoredBatch b : fr.batches()) {
                    int n = b.payload().remaining();
                    if (size > 0 && size + n > maxBytes) {
                        full = true;
                        break;
                    }
                    chunk.add(b.payload());
                    chunkBytes += n;
                    size += n;
                    next = b.endOffset();
                }
                if (chunkBytes > 0) {
                    parts.add(merge(chunk, chunkBytes));
                }
            }
            if (full || next >= hw || next <= from || size >= maxBytes) {
                return CompletableFuture.completedFuture(new ReadResult(Errors.NONE, merge(parts, size), hw, start));
            }
            return readFrom(next, hw, start, maxBytes, parts, size);
        }).thenCompose(f -> f);
    }

    private static ByteBuffer merge(List<ByteBuffer> parts, int total) {
        if (parts.size() == 1 && parts.getFirst().hasArray()) {
            return parts.getFirst();
        }
        ByteBuffer out = ByteBuffer.allocate(total);
        for (ByteBuffer p : parts) {
            out.put(p.duplicate());
        }
        return out.flip();
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
