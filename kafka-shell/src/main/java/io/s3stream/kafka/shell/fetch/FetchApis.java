package io.s3stream.kafka.shell.fetch;

import io.s3stream.kafka.shell.acl.Authorization;
import io.s3stream.kafka.shell.log.PartitionLog;
import io.s3stream.kafka.shell.log.PartitionTxns;
import io.s3stream.kafka.shell.log.ReadRecords;
import io.s3stream.kafka.shell.metrics.ShellMetrics;
import io.s3stream.kafka.shell.network.ApiFamily;
import io.s3stream.kafka.shell.network.HeldRecords;
import io.s3stream.kafka.shell.topic.TopicRegistry;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.ListOffsetsRequest;
import org.apache.kafka.common.requests.ListOffsetsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Fetch (with its long poll) and ListOffsets, in both isolation levels: read_committed reads stop at the last stable
 * offset and carry the aborted transactions among the records returned, as Kafka's do. Fetches may be incremental
 * (KIP-227): {@link FetchSessions} keeps each client's partitions, so an idle partition costs nothing on the wire. A
 * fetch reads about what its response can carry: each partition with records reserves, in order, what it will likely
 * return out of {@code max.bytes} ({@link PartitionLog#bytesAfter}), and one left unread for the budget answers the
 * fetch at once.
 */
public final class FetchApis implements ApiFamily {
    /** The least a partition with records reserves of a response's budget, whatever its estimate. */
    static final long MIN_RESERVATION = 16 * 1024;

    private final Authorization auth;
    private final TopicRegistry topics;
    private final ScheduledExecutorService timer;

    private final ShellMetrics metrics;
    private final FetchSessions sessions;

    /**
     * @param timer wakes long polls at their deadline
     * @param sessions the incremental fetch sessions this shell keeps
     */
    public FetchApis(TopicRegistry topics, ScheduledExecutorService timer, ShellMetrics metrics, Authorization auth,
            FetchSessions sessions) {
        this.topics = topics;
        this.timer = timer;
        this.metrics = metrics;
        this.auth = auth;
        this.sessions = sessions;
    }

    @Override
    public Map<ApiKeys, short[]> versions() {
        return ApiFamily.versions(ApiKeys.FETCH, 4, 12, ApiKeys.LIST_OFFSETS, 1, 11);
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext ctx, AbstractRequest request) {
        return switch (ctx.header.apiKey()) {
            case FETCH -> fetch(ctx, (FetchRequest) request);
            case LIST_OFFSETS -> listOffsets(ctx, (ListOffsetsRequest) request, ctx.header.apiVersion());
            default -> throw new IllegalArgumentException(ctx.header.apiKey() + " is not a fetch API");
        };
    }

    private CompletableFuture<AbstractResponse> fetch(RequestContext ctx, FetchRequest request) {
        FetchRequestData data = request.data();
        FetchSessions.Context session = sessions.open(data);
        if (session.error() != Errors.NONE) {
            return ApiFamily.done(FetchResponse.of(session.respond(List.of())));
        }
        Set<String> denied = new HashSet<>();
        Set<String> allowed = new HashSet<>();
        for (FetchSessions.Wanted w : session.partitions()) {
            if (!allowed.contains(w.topic()) && !denied.contains(w.topic())) {
                (auth.allowed(ctx, AclOperation.READ, ResourceType.TOPIC, w.topic()) ? allowed : denied).add(w.topic());
            }
        }
        FetchOperation op = new FetchOperation(data, session, denied);
        op.attempt();
        return op.result;
    }

    /**
     * One fetch request: reads every partition of the request or of its session; while fewer than {@code min.bytes}
     * are there and {@code max.wait.ms} has not passed, it waits for an append to one of them and reads again.
     *
     * <p>Concurrency: wakes (appends, the deadline) may come from several threads; attempts run one at a time, and a
     * wake during an attempt makes it run once more. Each partition holds at most one waiter of this operation.
     */
    private final class FetchOperation {
        final FetchRequestData data;
        final FetchSessions.Context session;
        /** Topics the principal may not read: answered TOPIC_AUTHORIZATION_FAILED, never read. */
        final Set<String> denied;
        final CompletableFuture<AbstractResponse> result = new CompletableFuture<>();
        final long deadlineNanos;
        final AtomicBoolean running = new AtomicBoolean(true);
        final AtomicBoolean dirty = new AtomicBoolean();
        /** The waiter this operation registered on each log and that has not run; cancelled once it answers. */
        final Map<PartitionLog, Runnable> waitingOn = new ConcurrentHashMap<>();
        volatile boolean timedOut;
        boolean timerSet;

        FetchOperation(FetchRequestData data, FetchSessions.Context session, Set<String> denied) {
            this.data = data;
            this.session = session;
            this.denied = denied;
            this.deadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(0, data.maxWaitMs()));
        }

        void wake() {
            if (result.isDone()) {
                return;
            }
            dirty.set(true);
            if (running.compareAndSet(false, true)) {
                dirty.set(false);
                attempt();
            }
        }

        void attempt() {
            attempt(true);
        }

        /** @param reserve whether partitions with records reserve their share of the byte budget (see the class) */
        private void attempt(boolean reserve) {
            boolean last = timedOut || System.nanoTime() - deadlineNanos >= 0;
            List<FetchSessions.Wanted> wanted = session.partitions();
            List<PartitionLog> logs = new ArrayList<>(wanted.size());
            List<CompletableFuture<PartitionLog.ReadResult>> reads = new ArrayList<>(wanted.size());
            boolean readCommitted = data.isolationLevel() == IsolationLevel.READ_COMMITTED.id();
            long budget = Math.max(data.maxBytes(), 1);
            long unreserved = budget;
            boolean cut = false; // a partition with records left unread for the budget: answer now
            for (FetchSessions.Wanted w : wanted) {
                TopicRegistry.Topic t = topics.get(w.topic());
                PartitionLog log = t == null ? null : t.partition(w.partition());
                logs.add(log);
                if (denied.contains(w.topic()) || log == null) {
                    Errors error = denied.contains(w.topic()) ? Errors.TOPIC_AUTHORIZATION_FAILED
                            : TopicRegistry.missing(t, w.partition()); // a denied topic's existence is not told
                    reads.add(CompletableFuture.completedFuture(new PartitionLog.ReadResult(error, null, -1, -1)));
                    continue;
                }
                long limit = Math.min(w.maxBytes(), budget);
                long pending = log.bytesAfter(w.fetchOffset());
                if (reserve && pending != 0) {
                    // Each partition with records reserves what it will likely return out of the response's budget,
                    // in order: a fetch over many partitions with a backlog reads about what it can send, instead of
                    // partition.max.bytes of each (1,000 partitions: 1 GiB read and held for a 50-MiB response).
                    long share = pending < 0 ? limit : Math.min(limit, Math.max(2 * pending, MIN_RESERVATION));
                    limit = Math.min(share, unreserved);
                    unreserved -= limit;
                    cut |= limit == 0 && share > 0;
                }
                reads.add(log.read(w.fetchOffset(), (int) limit, readCommitted));
            }
            boolean budgetSpent = cut;
            CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
                long bytes = 0;
                boolean error = false;
                for (var f : reads) {
                    PartitionLog.ReadResult r = f.join();
                    error |= r.error() != Errors.NONE;
                    bytes += r.records() == null ? 0 : r.records().sizeInBytes();
                }
                // Nothing where the reservations pointed (read_committed behind open transactions): read once more
                // without them rather than wait with records unread.
                boolean readAgain = budgetSpent && bytes == 0 && !error;
                if (!readAgain && (last || error || budgetSpent || bytes >= Math.max(1, data.minBytes())
                        || data.maxWaitMs() <= 0)) {
                    AbstractResponse response = respond(reads);
                    if (!result.complete(response)) {
                        HeldRecords.releaseAll(response); // answered already (cannot happen: one attempt at a time)
                    }
                    // The logs that did not wake this fetch would otherwise keep its waiter, and with it this whole
                    // operation, until their next append: forever for an idle partition.
                    waitingOn.forEach(PartitionLog::cancelAwait);
                    waitingOn.clear();
                    return;
                }
                // Too little to answer yet: give these reads' buffers back and read again when data arrives.
                for (var f : reads) {
                    ReadRecords records = f.join().records();
                    if (records != null) {
                        records.release();
                    }
                }
                if (readAgain) {
                    attempt(false);
                    return;
                }
                if (!timerSet) {
                    timerSet = true;
                    timer.schedule(() -> {
                        timedOut = true;
                        wake();
                    }, Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
                }
                for (int i = 0; i < logs.size(); i++) {
                    PartitionLog log = logs.get(i);
                    long seen = reads.get(i).join().highWatermark();
                    Runnable waiter = () -> {
                        waitingOn.remove(log);
                        wake();
                    };
                    if (log != null && waitingOn.putIfAbsent(log, waiter) == null) {
                        log.awaitData(seen, waiter);
                    }
                }
                running.set(false);
                if (dirty.get() && running.compareAndSet(false, true)) {
                    dirty.set(false);
                    attempt();
                }
            });
        }

        private AbstractResponse respond(List<CompletableFuture<PartitionLog.ReadResult>> reads) {
            long budget = Math.max(data.maxBytes(), 1);
            boolean first = true;
            List<FetchSessions.Wanted> wanted = session.partitions();
            List<FetchResponseData.PartitionData> parts = new ArrayList<>(wanted.size());
            for (int i = 0; i < wanted.size(); i++) {
                PartitionLog.ReadResult r = reads.get(i).join();
                FetchResponseData.PartitionData pd = new FetchResponseData.PartitionData()
                        .setPartitionIndex(wanted.get(i).partition()).setErrorCode(r.error().code())
                        .setHighWatermark(r.highWatermark()).setLastStableOffset(r.lastStableOffset())
                        .setLogStartOffset(r.logStartOffset()).setPreferredReadReplica(-1);
                if (r.abortedTransactions() != null) {
                    List<FetchResponseData.AbortedTransaction> aborted = new ArrayList<>();
                    for (PartitionTxns.Aborted a : r.abortedTransactions()) {
                        aborted.add(new FetchResponseData.AbortedTransaction().setProducerId(a.producerId())
                                .setFirstOffset(a.firstOffset()));
                    }
                    pd.setAbortedTransactions(aborted);
                }
                // The batches go out in the library's buffers; the connection releases them once written.
                ReadRecords records = r.records();
                if (records != null && records.sizeInBytes() > 0 && (first || records.sizeInBytes() <= budget)) {
                    budget -= records.sizeInBytes();
                    first = false;
                    metrics.fetched(wanted.get(i).topic(), records.sizeInBytes());
                    pd.setRecords(records);
                } else {
                    if (records != null) {
                        records.release(); // nothing read, or over the response's byte budget
                    }
                    pd.setRecords(MemoryRecords.EMPTY);
                }
                parts.add(pd);
            }
            return FetchResponse.of(session.respond(parts));
        }
    }

    /** The first ListOffsets version that knows the special timestamp {@code ts}, as Kafka checks it. */
    private static int minVersion(long ts) {
        if (ts == ListOffsetsRequest.MAX_TIMESTAMP) {
            return 7;
        } else if (ts == ListOffsetsRequest.EARLIEST_LOCAL_TIMESTAMP) {
            return 8;
        } else if (ts == ListOffsetsRequest.LATEST_TIERED_TIMESTAMP) {
            return 9;
        } else if (ts == ListOffsetsRequest.EARLIEST_PENDING_UPLOAD_TIMESTAMP) {
            return 11;
        }
        return 0;
    }

    private CompletableFuture<AbstractResponse> listOffsets(RequestContext ctx, ListOffsetsRequest request, short version) {
        List<ListOffsetsResponseData.ListOffsetsTopicResponse> out = new ArrayList<>();
        List<CompletableFuture<?>> all = new ArrayList<>();
        boolean readCommitted = request.data().isolationLevel() == IsolationLevel.READ_COMMITTED.id();
        for (ListOffsetsRequestData.ListOffsetsTopic lt : request.data().topics()) {
            TopicRegistry.Topic t = topics.get(lt.name());
            List<ListOffsetsResponseData.ListOffsetsPartitionResponse> parts = new ArrayList<>();
            boolean allowed = auth.allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, lt.name());
            for (ListOffsetsRequestData.ListOffsetsPartition lp : lt.partitions()) {
                ListOffsetsResponseData.ListOffsetsPartitionResponse r = new ListOffsetsResponseData.ListOffsetsPartitionResponse()
                        .setPartitionIndex(lp.partitionIndex()).setTimestamp(-1).setOffset(-1).setLeaderEpoch(version >= 4 ? 0 : -1);
                parts.add(r);
                PartitionLog log = t == null ? null : t.partition(lp.partitionIndex());
                if (!allowed) {
                    r.setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code());
                    continue;
                }
                if (log == null) {
                    r.setErrorCode(TopicRegistry.missing(t, lp.partitionIndex()).code());
                    continue;
                }
                long ts = lp.timestamp();
                if (version < minVersion(ts)) {
                    r.setErrorCode(Errors.UNSUPPORTED_VERSION.code());
                } else if (ts == ListOffsetsRequest.EARLIEST_TIMESTAMP || ts == ListOffsetsRequest.EARLIEST_LOCAL_TIMESTAMP) {
                    r.setOffset(log.logStartOffset());
                } else if (ts == ListOffsetsRequest.LATEST_TIMESTAMP) {
                    if (readCommitted) {
                        all.add(log.lastStableOffset().handle((lso, e) -> e == null ? r.setOffset(lso)
                                : r.setErrorCode(Errors.KAFKA_STORAGE_ERROR.code())));
                    } else {
                        r.setOffset(log.highWatermark());
                    }
                } else if (ts == ListOffsetsRequest.LATEST_TIERED_TIMESTAMP
                        || ts == ListOffsetsRequest.EARLIEST_PENDING_UPLOAD_TIMESTAMP) {
                    r.setOffset(-1); // as Kafka answers for a topic without tiered storage
                } else if (ts == ListOffsetsRequest.MAX_TIMESTAMP || ts >= 0) {
                    all.add(TimestampIndex.search(log, ts).thenCombine(readCommitted ? log.lastStableOffset()
                            : CompletableFuture.completedFuture(Long.MAX_VALUE), (found, lso) -> {
                        // As Kafka: read_committed finds nothing at or beyond the last stable offset.
                        return found[0] >= lso ? r.setOffset(-1).setTimestamp(-1) : r.setOffset(found[0]).setTimestamp(found[1]);
                    }));
                } else {
                    r.setErrorCode(Errors.INVALID_REQUEST.code());
                }
            }
            out.add(new ListOffsetsResponseData.ListOffsetsTopicResponse().setName(lt.name()).setPartitions(parts));
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
                .thenApply(v -> new ListOffsetsResponse(new ListOffsetsResponseData().setTopics(out)));
    }
}
