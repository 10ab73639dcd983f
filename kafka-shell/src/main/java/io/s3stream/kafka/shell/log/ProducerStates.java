package io.s3stream.kafka.shell.log;

import io.s3stream.FetchResult;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.kafka.shell.log.PartitionLog.AppendOutcome;
import io.s3stream.kafka.shell.log.PartitionLog.ProducerState;
import io.s3stream.kafka.shell.network.ApiFamily;
import io.s3stream.kafka.shell.network.RateLimitedLog;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MutableRecordBatch;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongUnaryOperator;

/**
 * The idempotent-producer state of one partition: per producer id its epoch and its last five batches, so that a
 * retried duplicate gets its original offset, a gap or a stale epoch is refused, and an unknown producer is told to
 * restart its sequences. Rebuilt once per open from the partition's tail ({@link #recover}); kept up to date by the
 * appends of the partition's handle. Owned by the partition's appender: not thread-safe.
 */
final class ProducerStates {
    /** Kafka keeps the metadata of the last five batches per producer to recognise retried duplicates. */
    private static final int BATCH_CACHE = 5;
    /** How much of the partition's tail is scanned to rebuild producer state after an open. */
    static final long RECOVERY_TAIL_BYTES = 8L << 20;
    static final long RECOVERY_RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** Logs as the partition's log does: these lines are about its appends. */
    private static final System.Logger LOG = System.getLogger(PartitionLog.class.getName());
    private static final RateLimitedLog RECOVERY_FAILED =
            new RateLimitedLog(LOG, System.Logger.Level.WARNING, TimeUnit.MINUTES.toNanos(1));
    /** The outcome of a batch read back from the stream: durable by definition. */
    private static final CompletableFuture<AppendOutcome> DURABLE =
            CompletableFuture.completedFuture(new AppendOutcome(Errors.NONE, -1, -1));

    private final String name;
    private final Stream stream;
    private final Map<Long, Entry> producers = new HashMap<>();
    private boolean recovered;
    /** After a failed rebuild, when the next may start (nanoTime); 0 when none failed. */
    private long retryAtNanos;

    /** {@code name} ("topic-partition") labels log lines. */
    ProducerStates(String name, Stream stream) {
        this.name = name;
        this.stream = stream;
    }

    /** Whether the state has been rebuilt from the tail: until then {@link #admit} must not be called. */
    boolean recovered() {
        return recovered;
    }

    /**
     * Rebuilds the state (epoch and the last five batches per producer id) from the partition's tail, once per open,
     * before the first idempotent append: a retry that spans a broker restart or a partition move then gets its
     * original offset instead of being stored twice, and a gap is still rejected. The tail is the last
     * {@link #RECOVERY_TAIL_BYTES} or so (estimated from the size of the last batch); a producer whose last batch is
     * older than that is unknown, and asked to restart its sequences when it next writes here. True once rebuilt (at
     * once if it was already); blocks on the stream's reads.
     *
     * <p>A tail that cannot be read (the object store failing) leaves no state at all and returns false: the caller
     * refuses the append with a retriable error, and the rebuild is tried again at the next call, at most once per
     * {@link #RECOVERY_RETRY_NANOS}. Half a rebuild is worse than none: it would take the last batch it reached for
     * the producer's last, refuse the retry of a batch the previous leader stored as out of order, and the producer,
     * restarting its sequences, would store that batch twice (ChaosIT found this).
     */
    boolean recover() {
        if (recovered) {
            return true;
        }
        long now = System.nanoTime();
        if (retryAtNanos != 0 && now - retryAtNanos < 0) {
            return false;
        }
        long end = stream.confirmedOffset();
        long start = stream.startOffset();
        if (end <= start) {
            recovered = true;
            return true;
        }
        try {
            long from;
            try (FetchResult last = stream.fetch(end - 1, end, 1).join()) {
                StoredBatch b = last.batches().getFirst();
                long perRecord = Math.max(1, b.payload().remaining() / Math.max(1, b.count()));
                from = Math.max(start, end - Math.max(1, RECOVERY_TAIL_BYTES / perRecord));
            }
            long batches = StreamScan.scan(stream, from, end, this::replay);
            LOG.log(System.Logger.Level.DEBUG, () -> name + ": producer state of " + producers.size()
                    + " producer(s) rebuilt from " + batches + " tail batch(es)");
            recovered = true;
            retryAtNanos = 0;
            return true;
        } catch (RuntimeException e) {
            // Unreadable now (or trimmed meanwhile): forget what was read, refuse idempotent appends, try again later.
            producers.clear();
            retryAtNanos = now + RECOVERY_RETRY_NANOS;
            RECOVERY_FAILED.log(() -> name + ": could not rebuild producer state from the tail; idempotent appends "
                    + "answer KAFKA_STORAGE_ERROR (retriable) until it can: " + ApiFamily.cause(e));
            return false;
        }
    }

    /** One stored batch of the tail, in offset order. */
    private void replay(MutableRecordBatch kb) {
        if (kb.producerId() < 0) {
            return;
        }
        Entry e = producers.get(kb.producerId());
        if (kb.isControlBatch()) {
            // A marker at a bumped epoch (a coordinator's abort on timeout) fences older epochs.
            if (e != null && kb.producerEpoch() > e.epoch) {
                producers.put(kb.producerId(), new Entry(kb.producerEpoch()));
            }
            return;
        }
        if (e == null || kb.producerEpoch() > e.epoch) {
            e = new Entry(kb.producerEpoch());
            producers.put(kb.producerId(), e);
        } else if (kb.producerEpoch() < e.epoch) {
            return;
        }
        e.remember(new BatchMeta(kb.baseSequence(), kb.lastSequence(), kb.baseOffset(), DURABLE));
    }

    /**
     * Checks an idempotent batch ({@code batch.producerId() >= 0}) against its producer's state: true when it may be
     * appended; otherwise {@code result} is or will be completed with the answer (a retried duplicate gets its
     * original's offset once that is durable; a stale epoch, a gap or an unknown producer an error). Changes nothing.
     */
    boolean admit(MutableRecordBatch batch, CompletableFuture<AppendOutcome> result) {
        long producerId = batch.producerId();
        Entry entry = producers.get(producerId);
        if (entry == null) {
            if (batch.baseSequence() == 0) {
                return true; // a producer first seen at sequence 0 starts here
            }
            // Unknown here, and not at its first batch: its earlier batches are older than the recovered tail, or
            // still on their way (during a move, an earlier batch went to the old leader and was refused there while
            // this one came here). Accepting this one would leave that earlier batch out of order forever (the client
            // retries it, the log refuses it: a stuck producer), so the producer is told its state is unknown: it
            // bumps its epoch and resends its batches from sequence 0 (KIP-360).
            LOG.log(System.Logger.Level.INFO, () -> name + ": batch of unknown producer " + producerId + " epoch "
                    + batch.producerEpoch() + " at sequence " + batch.baseSequence()
                    + ", not 0: answered UNKNOWN_PRODUCER_ID so that it restarts its sequences");
            result.complete(new AppendOutcome(Errors.UNKNOWN_PRODUCER_ID, -1, -1));
            return false;
        }
        short epoch = batch.producerEpoch();
        if (epoch < entry.epoch) {
            result.complete(new AppendOutcome(Errors.INVALID_PRODUCER_EPOCH, -1, -1));
            return false;
        }
        if (epoch > entry.epoch) {
            if (batch.baseSequence() == 0) {
                return true;
            }
            outOfOrder(batch, "a new epoch starts at sequence 0", entry);
            result.complete(new AppendOutcome(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1));
            return false;
        }
        for (BatchMeta m : entry.recent) {
            if (m.firstSeq == batch.baseSequence() && m.lastSeq == batch.lastSequence()) {
                LOG.log(System.Logger.Level.INFO, () -> name + ": duplicate batch of producer " + producerId
                        + " (sequences " + m.firstSeq + ".." + m.lastSeq + ") answered with its offset " + m.baseOffset);
                // A retried duplicate gets the original's outcome, once the original is durable: acking it earlier
                // would acknowledge a batch whose append may still fail.
                m.outcome.whenComplete((o, e) -> result.complete(e != null || o.error() != Errors.NONE
                        ? new AppendOutcome(Errors.KAFKA_STORAGE_ERROR, -1, -1)
                        : new AppendOutcome(Errors.NONE, m.baseOffset, -1)));
                return false;
            }
        }
        int expected = entry.lastSeq() == Integer.MAX_VALUE ? 0 : entry.lastSeq() + 1;
        if (batch.baseSequence() != expected) {
            outOfOrder(batch, "expected sequence " + expected, entry);
            result.complete(new AppendOutcome(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1));
            return false;
        }
        return true;
    }

    /**
     * Records an admitted batch passed to the stream at {@code baseOffset}; {@code outcome} completes when it is
     * durable (or failed), and answers its retried duplicates.
     */
    void onAppended(MutableRecordBatch batch, long baseOffset, CompletableFuture<AppendOutcome> outcome) {
        Entry entry = producers.get(batch.producerId());
        if (entry == null || entry.epoch != batch.producerEpoch()) {
            entry = new Entry(batch.producerEpoch());
            producers.put(batch.producerId(), entry);
        }
        entry.remember(new BatchMeta(batch.baseSequence(), batch.lastSequence(), baseOffset, outcome));
    }

    /**
     * For a transaction marker of {@code producerId} at {@code epoch}: false when the epoch is older than the one
     * known (a newer marker was written already); a newer epoch fences the older one from here on. Call after
     * {@link #recover}.
     */
    boolean acceptMarker(long producerId, short epoch) {
        Entry entry = producers.get(producerId);
        if (entry != null && epoch < entry.epoch) {
            return false;
        }
        if (entry != null && epoch > entry.epoch) {
            producers.put(producerId, new Entry(epoch));
        }
        return true;
    }

    /** The producers known, as DescribeProducers shows them; {@code openSince} gives a producer's open transaction. */
    List<ProducerState> describe(LongUnaryOperator openSince) {
        List<ProducerState> out = new ArrayList<>(producers.size());
        producers.forEach((pid, e) -> out.add(new ProducerState(pid, e.epoch, e.lastSeq(), openSince.applyAsLong(pid))));
        return out;
    }

    /** Says why a batch was refused as out of order: the producer retries it, so this explains a stuck producer. */
    private void outOfOrder(MutableRecordBatch batch, String why, Entry entry) {
        LOG.log(System.Logger.Level.INFO, () -> name + ": out-of-order batch of producer " + batch.producerId()
                + " epoch " + batch.producerEpoch() + ", sequences " + batch.baseSequence() + ".." + batch.lastSequence()
                + " (" + why + "); known: epoch " + entry.epoch + ", recent " + entry.recent.stream()
                .map(m -> m.firstSeq + ".." + m.lastSeq + "@" + m.baseOffset + (m.outcome == DURABLE ? " (from the tail)" : ""))
                .toList());
    }

    /** A recent batch of one producer; {@code outcome} completes when its append is durable (or failed). */
    private record BatchMeta(int firstSeq, int lastSeq, long baseOffset, CompletableFuture<AppendOutcome> outcome) {
    }

    private static final class Entry {
        final short epoch;
        final ArrayDeque<BatchMeta> recent = new ArrayDeque<>(BATCH_CACHE + 1);

        Entry(short epoch) {
            this.epoch = epoch;
        }

        void remember(BatchMeta batch) {
            recent.addLast(batch);
            if (recent.size() > BATCH_CACHE) {
                recent.removeFirst();
            }
        }

        int lastSeq() {
            return recent.isEmpty() ? -1 : recent.getLast().lastSeq;
        }
    }
}
