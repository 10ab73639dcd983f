package io.s3stream.kafka.shell.txn;

import io.s3stream.KeyValues;
import io.s3stream.kafka.shell.group.TxnOffsets;
import io.s3stream.kafka.shell.network.InterShellSecurity;
import io.s3stream.kafka.shell.log.PartitionLog;
import io.s3stream.kafka.shell.topic.TopicRegistry;
import io.s3stream.kafka.shell.txn.TxnMetadata.Status;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Kafka's transaction coordinator (transaction protocol v1: explicit AddPartitionsToTxn) on the shared key-value
 * space: InitProducerId for a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, timeouts.
 *
 * <h2>Placement and failover</h2>
 * A transactional id is coordinated by the live shell that rendezvous hashing picks, as groups are. Its state
 * ({@link TxnMetadata}) is in the key-value space, changed by compare-and-set, so a shell that takes over reads it
 * as the dead one left it. The {@link #sweep sweeper} of the coordinator finishes every transaction left in
 * PrepareCommit or PrepareAbort (markers written to some partitions and not others) and aborts those past their
 * timeout.
 *
 * <h2>Ending a transaction</h2>
 * EndTxn first records PrepareCommit or PrepareAbort (the decision, durable before any marker is written), then writes
 * a marker into every partition of the transaction (through the partition's {@link PartitionLog} when this shell
 * leads it, else WriteTxnMarkers to the shell that does, retried until written), makes staged offsets committed
 * ({@link TxnOffsets}), records CompleteCommit or CompleteAbort and answers. Until then, requests for the id get
 * CONCURRENT_TRANSACTIONS and retry, as with Kafka.
 *
 * <h2>Concurrency</h2>
 * One thread owns the decisions: every state change runs on it, reading the key-value space and writing it by
 * compare-and-set; markers are written asynchronously and their completion comes back to it.
 */
public final class TransactionCoordinator implements AutoCloseable {
    static final String PREFIX = "kafka/txn/";
    private static final System.Logger LOG = System.getLogger(TransactionCoordinator.class.getName());
    private static final long RETRY_MS = 100;
    private static final long MAX_RETRY_MS = 2_000;

    private final KeyValues kv;
    private final TopicRegistry topics;
    private final Predicate<String> coordinatesId;
    private final Supplier<Map<Integer, String>> brokers;
    private final ProducerIds producerIds;
    private final int maxTimeoutMs;
    private final long idExpirationMs;
    private final MarkerSender sender;
    private final ScheduledExecutorService exec = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "kafka-shell-txn-coordinator");
        t.setDaemon(true);
        return t;
    });
    /** Transactional ids whose markers this shell is writing now (owned by {@link #exec}). */
    private final Map<String, CompletableFuture<Errors>> completing = new HashMap<>();
    private volatile boolean closed;

    /**
     * @param coordinatesId whether this shell coordinates a transactional id now
     * @param brokers       registered shells: node id → host:port
     * @param interShell    the TLS and SASL with which markers are written to other shells
     * @param maxTimeoutMs  the longest {@code transaction.timeout.ms} a producer may ask for ({@code transaction.max.timeout.ms})
     * @param idExpirationMs how long an idle transactional id is kept ({@code transactional.id.expiration.ms})
     */
    public TransactionCoordinator(KeyValues kv, TopicRegistry topics, Predicate<String> coordinatesId,
                                  Supplier<Map<Integer, String>> brokers, InterShellSecurity interShell,
                                  int maxTimeoutMs, long idExpirationMs) {
        this.sender = new MarkerSender(interShell);
        this.maxTimeoutMs = maxTimeoutMs;
        this.idExpirationMs = idExpirationMs;
        this.kv = kv;
        this.topics = topics;
        this.coordinatesId = coordinatesId;
        this.brokers = brokers;
        this.producerIds = new ProducerIds(kv);
    }

    /** Starts the sweeper: timeouts and transactions left half ended, every {@code intervalMs}. */
    public void start(long intervalMs) {
        exec.scheduleWithFixedDelay(this::sweep, intervalMs, intervalMs, TimeUnit.MILLISECONDS);
    }

    public boolean coordinates(String transactionalId) {
        return coordinatesId.test(transactionalId);
    }

    /** A producer id for an idempotent producer (no transactional id). */
    public CompletableFuture<Long> nextProducerId() {
        return CompletableFuture.supplyAsync(producerIds::next, exec);
    }

    /** The answer to InitProducerId. */
    public record InitResult(Errors error, long producerId, short epoch) {
        static InitResult error(Errors e) {
            return new InitResult(e, -1, (short) -1);
        }
    }

    /**
     * InitProducerId with a transactional id: the id's producer id with a bumped epoch, which fences every older
     * producer instance. An ongoing transaction is aborted first (the caller retries on CONCURRENT_TRANSACTIONS). With
     * {@code producerId >= 0} (KIP-360) only the producer at the current or the previous epoch may bump.
     */
    public CompletableFuture<InitResult> initProducerId(String id, int timeoutMs, long producerId, short epoch) {
        return call(() -> {
            if (timeoutMs <= 0 || timeoutMs > maxTimeoutMs) {
                return InitResult.error(Errors.INVALID_TRANSACTION_TIMEOUT);
            }
            Stored s = load(id);
            long now = System.currentTimeMillis();
            if (s == null) {
                if (producerId >= 0) {
                    return InitResult.error(Errors.INVALID_PRODUCER_ID_MAPPING);
                }
                TxnMetadata m = new TxnMetadata(producerIds.next(), (short) 0, (short) -1, timeoutMs, Status.EMPTY, -1,
                        now, TxnMetadata.partitionSet(), new TreeSet<>());
                return save(id, null, m) ? new InitResult(Errors.NONE, m.producerId(), m.epoch())
                        : InitResult.error(Errors.CONCURRENT_TRANSACTIONS);
            }
            TxnMetadata m = s.meta;
            if (producerId >= 0 && (producerId != m.producerId() || epoch != m.epoch() && epoch != m.lastEpoch())) {
                return InitResult.error(Errors.PRODUCER_FENCED);
            }
            if (m.status().preparing()) {
                complete(id, s);
                return InitResult.error(Errors.CONCURRENT_TRANSACTIONS);
            }
            if (m.status() == Status.ONGOING) {
                abortWithBump(id, s, "a new producer instance initialised the transactional id");
                return InitResult.error(Errors.CONCURRENT_TRANSACTIONS);
            }
            TxnMetadata next = m.epoch() >= Short.MAX_VALUE - 1
                    ? new TxnMetadata(producerIds.next(), (short) 0, (short) -1, timeoutMs, Status.EMPTY, -1, now,
                    TxnMetadata.partitionSet(), new TreeSet<>())
                    : new TxnMetadata(m.producerId(), (short) (m.epoch() + 1), m.epoch(), timeoutMs, Status.EMPTY, -1,
                    now, TxnMetadata.partitionSet(), new TreeSet<>());
            return save(id, s.bytes, next) ? new InitResult(Errors.NONE, next.producerId(), next.epoch())
                    : InitResult.error(Errors.CONCURRENT_TRANSACTIONS);
        });
    }

    /** AddPartitionsToTxn (client versions): adds partitions to the ongoing transaction, starting one if none is. */
    public CompletableFuture<Map<TopicPartition, Errors>> addPartitions(String id, long producerId, short epoch,
                                                                       List<TopicPartition> partitions) {
        return call(() -> {
            Stored s = load(id);
            Errors e = checkProducer(s, producerId, epoch);
            Map<TopicPartition, Errors> out = new LinkedHashMap<>();
            if (e == Errors.NONE) {
                for (TopicPartition tp : partitions) {
                    TopicRegistry.Topic t = topics.get(tp.topic());
                    if (t == null || t.slot(tp.partition()) == null) {
                        out.put(tp, Errors.UNKNOWN_TOPIC_OR_PARTITION);
                    }
                }
                if (!out.isEmpty()) {
                    partitions.forEach(tp -> out.putIfAbsent(tp, Errors.OPERATION_NOT_ATTEMPTED));
                    return out;
                }
                TxnMetadata m = s.meta;
                if (m.status() != Status.ONGOING || !m.partitions().containsAll(partitions)) {
                    TxnMetadata next = begin(m);
                    next.partitions().addAll(partitions);
                    if (!save(id, s.bytes, next)) {
                        e = Errors.CONCURRENT_TRANSACTIONS;
                    }
                }
            }
            Errors error = e;
            partitions.forEach(tp -> out.put(tp, error));
            return out;
        });
    }

    /** AddOffsetsToTxn: the transaction will commit offsets of {@code groupId}. */
    public CompletableFuture<Errors> addOffsets(String id, long producerId, short epoch, String groupId) {
        return call(() -> {
            Stored s = load(id);
            Errors e = checkProducer(s, producerId, epoch);
            if (e != Errors.NONE) {
                return e;
            }
            TxnMetadata m = s.meta;
            if (m.status() == Status.ONGOING && m.groups().contains(groupId)) {
                return Errors.NONE;
            }
            TxnMetadata next = begin(m);
            next.groups().add(groupId);
            return save(id, s.bytes, next) ? Errors.NONE : Errors.CONCURRENT_TRANSACTIONS;
        });
    }

    /** EndTxn: commits or aborts the ongoing transaction; answers once every marker is written. */
    public CompletableFuture<Errors> endTxn(String id, long producerId, short epoch, boolean commit) {
        return call(() -> {
            Stored s = load(id);
            if (s == null || s.meta.producerId() != producerId) {
                return CompletableFuture.completedFuture(Errors.INVALID_PRODUCER_ID_MAPPING);
            }
            TxnMetadata m = s.meta;
            if (epoch != m.epoch()) {
                return CompletableFuture.completedFuture(Errors.PRODUCER_FENCED);
            }
            Status prepare = commit ? Status.PREPARE_COMMIT : Status.PREPARE_ABORT;
            Status done = commit ? Status.COMPLETE_COMMIT : Status.COMPLETE_ABORT;
            switch (m.status()) {
                case ONGOING -> {
                    Stored prepared = saveAndGet(id, s.bytes, m.with(prepare, System.currentTimeMillis()));
                    return prepared == null ? CompletableFuture.completedFuture(Errors.CONCURRENT_TRANSACTIONS)
                            : complete(id, prepared);
                }
                case PREPARE_COMMIT, PREPARE_ABORT -> {
                    if (m.status() != prepare) {
                        return CompletableFuture.completedFuture(Errors.INVALID_TXN_STATE);
                    }
                    return complete(id, s); // a retry: wait for the markers being written
                }
                default -> {
                    return CompletableFuture.completedFuture(m.status() == done ? Errors.NONE : Errors.INVALID_TXN_STATE);
                }
            }
        }).thenCompose(f -> f);
    }

    /** One transactional id as DescribeTransactions and ListTransactions show it; null state when unknown. */
    public record Description(String transactionalId, Errors error, String state, int timeoutMs, long startMs,
                              long producerId, short epoch, Set<TopicPartition> partitions) {
    }

    public CompletableFuture<List<Description>> describe(List<String> ids) {
        return call(() -> {
            List<Description> out = new ArrayList<>();
            for (String id : ids) {
                if (!coordinates(id)) {
                    out.add(new Description(id, Errors.NOT_COORDINATOR, "", -1, -1, -1, (short) -1, Set.of()));
                    continue;
                }
                Stored s = load(id);
                out.add(s == null ? new Description(id, Errors.TRANSACTIONAL_ID_NOT_FOUND, "", -1, -1, -1, (short) -1, Set.of())
                        : describe(id, s.meta));
            }
            return out;
        });
    }

    /** Every transactional id this shell coordinates. */
    public CompletableFuture<List<Description>> list() {
        return call(() -> {
            List<Description> out = new ArrayList<>();
            kv.list(PREFIX).join().forEach((key, value) -> {
                String id = URLDecoder.decode(key.substring(PREFIX.length()), StandardCharsets.UTF_8);
                if (coordinates(id)) {
                    out.add(describe(id, TxnMetadata.decode(value)));
                }
            });
            return out;
        });
    }

    private static Description describe(String id, TxnMetadata m) {
        return new Description(id, Errors.NONE, m.status().kafkaName, m.timeoutMs(), m.startMs(), m.producerId(),
                m.epoch(), m.partitions());
    }

    // ---------------------------------------------------------------- internals (on exec)

    private record Stored(TxnMetadata meta, byte[] bytes) {
    }

    private static String key(String id) {
        return PREFIX + URLEncoder.encode(id, StandardCharsets.UTF_8);
    }

    private Stored load(String id) {
        Optional<byte[]> bytes = kv.get(key(id)).join();
        return bytes.map(b -> new Stored(TxnMetadata.decode(b), b)).orElse(null);
    }

    private boolean save(String id, byte[] expected, TxnMetadata next) {
        return saveAndGet(id, expected, next) != null;
    }

    private Stored saveAndGet(String id, byte[] expected, TxnMetadata next) {
        byte[] bytes = next.encode();
        return kv.compareAndSet(key(id), expected, bytes).join() ? new Stored(next, bytes) : null;
    }

    private static Errors checkProducer(Stored s, long producerId, short epoch) {
        if (s == null || s.meta.producerId() != producerId) {
            return Errors.INVALID_PRODUCER_ID_MAPPING;
        }
        if (epoch != s.meta.epoch()) {
            return Errors.PRODUCER_FENCED;
        }
        return s.meta.status().preparing() ? Errors.CONCURRENT_TRANSACTIONS : Errors.NONE;
    }

    /** The metadata of {@code m}'s ongoing transaction, or of a new one when it has none (mutable sets). */
    private static TxnMetadata begin(TxnMetadata m) {
        long now = System.currentTimeMillis();
        boolean ongoing = m.status() == Status.ONGOING;
        Set<TopicPartition> partitions = TxnMetadata.partitionSet();
        Set<String> groups = new TreeSet<>();
        if (ongoing) {
            partitions.addAll(m.partitions());
            groups.addAll(m.groups());
        }
        return new TxnMetadata(m.producerId(), m.epoch(), m.lastEpoch(), m.timeoutMs(), Status.ONGOING,
                ongoing ? m.startMs() : now, now, partitions, groups);
    }

    /**
     * Aborts {@code s}'s ongoing transaction at a bumped epoch, so the producer that ran it is fenced: a timeout, or a
     * new instance of the producer.
     */
    private void abortWithBump(String id, Stored s, String why) {
        TxnMetadata m = s.meta;
        TxnMetadata aborting = new TxnMetadata(m.producerId(), (short) (m.epoch() + 1), m.epoch(), m.timeoutMs(),
                Status.PREPARE_ABORT, m.startMs(), System.currentTimeMillis(), m.partitions(), m.groups());
        Stored saved = saveAndGet(id, s.bytes, aborting);
        if (saved != null) {
            LOG.log(System.Logger.Level.INFO, () -> "transaction of '" + id + "' (producer " + m.producerId()
                    + ", epoch " + m.epoch() + ") aborted: " + why);
            complete(id, saved);
        }
    }

    /**
     * Writes the markers of {@code s} (in PrepareCommit or PrepareAbort) and then records the transaction complete.
     * Joins the completion already running for the id, if any. Completes with NONE once done, or NOT_COORDINATOR
     * when this shell stopped coordinating the id meanwhile (the new coordinator finishes it).
     */
    private CompletableFuture<Errors> complete(String id, Stored s) {
        CompletableFuture<Errors> running = completing.get(id);
        if (running != null) {
            return running;
        }
        CompletableFuture<Errors> result = new CompletableFuture<>();
        completing.put(id, result);
        TxnMetadata m = s.meta;
        boolean commit = m.status() == Status.PREPARE_COMMIT;
        writeMarkers(id, m, commit).whenCompleteAsync((v, e) -> {
            completing.remove(id);
            if (e != null) {
                result.complete(closed ? Errors.COORDINATOR_NOT_AVAILABLE : Errors.NOT_COORDINATOR);
                return;
            }
            Stored now = load(id);
            if (now == null || !now.meta.equals(m)) {
                result.complete(Errors.NONE); // another coordinator finished it meanwhile
                return;
            }
            TxnMetadata done = new TxnMetadata(m.producerId(), m.epoch(), m.lastEpoch(), m.timeoutMs(),
                    commit ? Status.COMPLETE_COMMIT : Status.COMPLETE_ABORT, -1, System.currentTimeMillis(),
                    TxnMetadata.partitionSet(), new TreeSet<>());
            save(id, now.bytes, done);
            result.complete(Errors.NONE);
        }, exec);
        return result;
    }

    /** Every marker of the transaction and its staged offsets; fails only when this shell stops coordinating {@code id}. */
    private CompletableFuture<Void> writeMarkers(String id, TxnMetadata m, boolean commit) {
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (TopicPartition tp : m.partitions()) {
            all.add(markPartition(id, tp, m, commit, RETRY_MS));
        }
        for (String group : m.groups()) {
            all.add(retry(id, () -> TxnOffsets.complete(kv, group, m.producerId(), commit), "offsets of group " + group,
                    RETRY_MS));
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new));
    }

    private CompletableFuture<Void> markPartition(String id, TopicPartition tp, TxnMetadata m, boolean commit, long backoffMs) {
        TopicRegistry.Topic t = topics.get(tp.topic());
        TopicRegistry.Slot slot = t == null ? null : t.slot(tp.partition());
        if (slot == null) {
            return CompletableFuture.completedFuture(null); // deleted with its data: nothing to mark
        }
        CompletableFuture<Errors> written;
        PartitionLog log = t.partition(tp.partition());
        if (log != null) {
            written = log.writeMarker(m.producerId(), m.epoch(), commit, 0);
        } else {
            String address = brokers.get().get(slot.leader());
            written = address == null ? CompletableFuture.completedFuture(Errors.NOT_LEADER_OR_FOLLOWER)
                    : sender.send(address, m.producerId(), m.epoch(), commit, 0, List.of(tp))
                    .thenApply(errors -> errors.getOrDefault(tp, Errors.UNKNOWN_SERVER_ERROR));
        }
        return written.handle((answer, e) -> {
            // A failure to reach the other shell (refused login, untrusted certificate) keeps its reason for the log.
            Throwable cause = e instanceof java.util.concurrent.CompletionException && e.getCause() != null
                    ? e.getCause() : e;
            Errors error = cause == null ? answer : Errors.forException(cause);
            // INVALID_PRODUCER_EPOCH: a marker at a newer epoch is there already; this transaction ended before it.
            if (error == Errors.NONE || error == Errors.INVALID_PRODUCER_EPOCH || error == Errors.UNKNOWN_TOPIC_OR_PARTITION) {
                return CompletableFuture.<Void>completedFuture(null);
            }
            String why = cause == null ? error.name() : error + " (" + cause.getMessage() + ")";
            return later(id, "marker for " + tp + ": " + why, backoffMs)
                    .thenCompose(v -> markPartition(id, tp, m, commit, Math.min(MAX_RETRY_MS, backoffMs * 2)));
        }).thenCompose(f -> f);
    }

    private CompletableFuture<Void> retry(String id, Supplier<CompletableFuture<Void>> action, String what, long backoffMs) {
        return action.get().handle((v, e) -> e == null ? CompletableFuture.<Void>completedFuture(null)
                : later(id, what + ": " + e, backoffMs).thenCompose(x -> retry(id, action, what,
                Math.min(MAX_RETRY_MS, backoffMs * 2)))).thenCompose(f -> f);
    }

    /** Completes after {@code delayMs}, or fails if this shell no longer coordinates {@code id} (or is closing). */
    private CompletableFuture<Void> later(String id, String why, long delayMs) {
        if (closed || !coordinates(id)) {
            return CompletableFuture.failedFuture(new IllegalStateException("no longer the coordinator of '" + id + "'"));
        }
        if (delayMs >= MAX_RETRY_MS) {
            LOG.log(System.Logger.Level.INFO, () -> "transaction of '" + id + "': retrying " + why);
        }
        return CompletableFuture.runAsync(() -> { }, CompletableFuture.delayedExecutor(delayMs, TimeUnit.MILLISECONDS, exec));
    }

    /**
     * Aborts the ongoing transactions past their timeout and finishes those left in PrepareCommit or PrepareAbort (by
     * a shell that died, or by this one before a restart), for the ids this shell coordinates. Forgets the ids with no
     * transaction in progress that have not changed for {@code transactional.id.expiration.ms}, as Kafka does, by
     * compare-and-set: an id that changed since it was read is not touched. A producer that comes back with a
     * forgotten id gets a new producer id from InitProducerId.
     */
    void sweep() {
        if (closed) {
            return;
        }
        try {
            long now = System.currentTimeMillis();
            int[] expired = {0};
            kv.list(PREFIX).join().forEach((key, value) -> {
                String id = URLDecoder.decode(key.substring(PREFIX.length()), StandardCharsets.UTF_8);
                if (!coordinates(id) || completing.containsKey(id)) {
                    return;
                }
                Stored s = new Stored(TxnMetadata.decode(value), value);
                if (s.meta.status().preparing()) {
                    LOG.log(System.Logger.Level.INFO, () -> "finishing the transaction of '" + id + "' left in "
                            + s.meta.status().kafkaName);
                    complete(id, s);
                } else if (s.meta.status() == Status.ONGOING && now - s.meta.startMs() > s.meta.timeoutMs()) {
                    abortWithBump(id, s, "it ran past its timeout of " + s.meta.timeoutMs() + " ms");
                } else if (s.meta.status() != Status.ONGOING && now - s.meta.updateMs() >= idExpirationMs
                        && kv.compareAndSet(key(id), value, null).join()) {
                    expired[0]++;
                }
            });
            if (expired[0] > 0) {
                LOG.log(System.Logger.Level.INFO, "forgot " + expired[0] + " transactional ids unused for "
                        + idExpirationMs + " ms (transactional.id.expiration.ms)");
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "transaction sweep failed", e);
        }
    }

    private <T> CompletableFuture<T> call(Supplier<T> task) {
        return CompletableFuture.supplyAsync(task, exec);
    }

    @Override
    public void close() {
        closed = true;
        exec.shutdownNow();
        sender.close();
    }
}
