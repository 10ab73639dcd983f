package io.s3stream.kafka.shell;

import io.s3stream.KeyValues;
import io.s3stream.kafka.shell.internal.ProduceValidator;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.DescribeClusterResponseData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.ApiVersionsResponse;
import org.apache.kafka.common.requests.DescribeClusterResponse;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.InitProducerIdRequest;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.apache.kafka.common.requests.ListOffsetsRequest;
import org.apache.kafka.common.requests.ListOffsetsResponse;
import org.apache.kafka.common.requests.MetadataRequest;
import org.apache.kafka.common.requests.MetadataResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The broker logic: one method per Kafka API, each turning a parsed request into a future response. Requests and
 * responses are kafka-clients' own classes; what the broker does with them is here.
 *
 * <p>{@link #SUPPORTED} is the single source of what ApiVersions advertises and what {@link #handle} accepts; a
 * version outside it gets UNSUPPORTED_VERSION.
 */
final class KafkaApis {
    /** Advertised API versions: [min, max] per key. Versions that address topics by id only are left out. */
    static final Map<ApiKeys, short[]> SUPPORTED = new EnumMap<>(ApiKeys.class);

    static {
        SUPPORTED.put(ApiKeys.PRODUCE, new short[] {3, 12});
        SUPPORTED.put(ApiKeys.FETCH, new short[] {4, 12});
        SUPPORTED.put(ApiKeys.LIST_OFFSETS, new short[] {1, 8});
        SUPPORTED.put(ApiKeys.METADATA, new short[] {0, 12});
        SUPPORTED.put(ApiKeys.OFFSET_COMMIT, new short[] {2, 9});
        SUPPORTED.put(ApiKeys.OFFSET_FETCH, new short[] {1, 9});
        SUPPORTED.put(ApiKeys.FIND_COORDINATOR, new short[] {0, 5});
        SUPPORTED.put(ApiKeys.JOIN_GROUP, new short[] {0, 9});
        SUPPORTED.put(ApiKeys.HEARTBEAT, new short[] {0, 4});
        SUPPORTED.put(ApiKeys.LEAVE_GROUP, new short[] {0, 5});
        SUPPORTED.put(ApiKeys.SYNC_GROUP, new short[] {0, 5});
        SUPPORTED.put(ApiKeys.DESCRIBE_GROUPS, new short[] {0, 5});
        SUPPORTED.put(ApiKeys.LIST_GROUPS, new short[] {0, 4});
        SUPPORTED.put(ApiKeys.API_VERSIONS, new short[] {0, 4});
        SUPPORTED.put(ApiKeys.CREATE_TOPICS, new short[] {2, 7});
        SUPPORTED.put(ApiKeys.DELETE_TOPICS, new short[] {1, 6});
        SUPPORTED.put(ApiKeys.INIT_PRODUCER_ID, new short[] {0, 5});
        SUPPORTED.put(ApiKeys.DESCRIBE_CONFIGS, new short[] {1, 4});
        SUPPORTED.put(ApiKeys.DESCRIBE_CLUSTER, new short[] {0, 1});
        SUPPORTED.put(ApiKeys.CREATE_PARTITIONS, new short[] {0, 3});
        SUPPORTED.put(ApiKeys.DELETE_GROUPS, new short[] {0, 2});
        SUPPORTED.put(ApiKeys.ALTER_PARTITION_REASSIGNMENTS, new short[] {0, 1});
        SUPPORTED.put(ApiKeys.LIST_PARTITION_REASSIGNMENTS, new short[] {0, 0});
        SUPPORTED.put(ApiKeys.DESCRIBE_LOG_DIRS, new short[] {1, 4});
        SUPPORTED.put(ApiKeys.INCREMENTAL_ALTER_CONFIGS, new short[] {0, 1});
    }

    static boolean supports(ApiKeys key, short version) {
        short[] range = SUPPORTED.get(key);
        return range != null && version >= range[0] && version <= range[1];
    }

    private final ShellConfig config;
    private final TopicRegistry topics;
    private final GroupApis groupApis;
    private final TopicApis topicApis;
    private final ProducerIds producerIds;
    private final ScheduledExecutorService timer;
    private volatile int advertisedPort;

    KafkaApis(ShellConfig config, TopicRegistry topics, GroupCoordinator groups, KeyValues kv, ScheduledExecutorService timer,
              java.util.concurrent.Executor blocking) {
        this.config = config;
        this.topics = topics;
        this.producerIds = new ProducerIds(kv);
        this.groupApis = new GroupApis(config.nodeId(), topics, groups, this::brokers, this::liveIds);
        this.topicApis = new TopicApis(config, topics, groups, blocking, this::brokers);
        this.timer = timer;
        this.advertisedPort = config.advertisedPort();
    }

    void boundPort(int port) {
        if (advertisedPort == 0) {
            advertisedPort = port;
        }
    }

    /** Handles one request; the future's value is null when no response is sent (produce with acks=0). */
    CompletableFuture<AbstractResponse> handle(RequestContext ctx, AbstractRequest request) {
        ApiKeys key = ctx.header.apiKey();
        short version = ctx.header.apiVersion();
        if (key != ApiKeys.API_VERSIONS && !supports(key, version)) {
            return CompletableFuture.completedFuture(request.getErrorResponse(0, Errors.UNSUPPORTED_VERSION.exception()));
        }
        CompletableFuture<AbstractResponse> response;
        try {
            response = switch (key) {
                case API_VERSIONS -> done(apiVersions((ApiVersionsRequest) request));
                case METADATA -> metadata((MetadataRequest) request, version);
                case PRODUCE -> produce((ProduceRequest) request);
                case FETCH -> fetch((FetchRequest) request);
                case LIST_OFFSETS -> listOffsets((ListOffsetsRequest) request, version);
                case INIT_PRODUCER_ID -> initProducerId((InitProducerIdRequest) request);
                case FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP, OFFSET_COMMIT, OFFSET_FETCH,
                     LIST_GROUPS, DESCRIBE_GROUPS, DELETE_GROUPS -> groupApis.handle(key, request, version, ctx.clientId(),
                        ctx.clientAddress == null ? "" : ctx.clientAddress.toString());
                case DESCRIBE_CLUSTER -> done(describeCluster());
                case CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS,
                     ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS, DESCRIBE_LOG_DIRS ->
                        topicApis.handle(key, request, version);
                default -> done(request.getErrorResponse(0, Errors.UNSUPPORTED_VERSION.exception()));
            };
        } catch (RuntimeException e) {
            response = CompletableFuture.failedFuture(e);
        }
        return response.exceptionally(e -> {
            Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
            System.getLogger(KafkaApis.class.getName()).log(System.Logger.Level.WARNING,
                    () -> key + " v" + version + " failed", cause);
            return request.getErrorResponse(0, cause);
        });
    }

    /** Why partition {@code p} of {@code t} has no log here: no such partition, or another shell leads it. */
    static Errors missing(TopicRegistry.Topic t, int p) {
        return t == null || t.slot(p) == null ? Errors.UNKNOWN_TOPIC_OR_PARTITION : Errors.NOT_LEADER_OR_FOLLOWER;
    }

    private static CompletableFuture<AbstractResponse> done(AbstractResponse r) {
        return CompletableFuture.completedFuture(r);
    }

    // ---------------------------------------------------------------- ApiVersions, cluster, metadata

    static ApiVersionsResponse apiVersions(ApiVersionsRequest request) {
        ApiVersionsResponseData.ApiVersionCollection keys = new ApiVersionsResponseData.ApiVersionCollection();
        SUPPORTED.forEach((k, v) -> keys.add(new ApiVersionsResponseData.ApiVersion()
                .setApiKey(k.id).setMinVersion(v[0]).setMaxVersion(v[1])));
        Errors error = request.hasUnsupportedRequestVersion() ? Errors.UNSUPPORTED_VERSION
                : request.isValid() ? Errors.NONE : Errors.INVALID_REQUEST;
        return new ApiVersionsResponse(new ApiVersionsResponseData().setErrorCode(error.code()).setApiKeys(keys));
    }

    /** Registered shells (this one always included): node id → {host, port}. */
    private java.util.SortedMap<Integer, String[]> brokers() {
        java.util.SortedMap<Integer, String[]> out = new TreeMap<>();
        topics.brokers().forEach((id, hp) -> {
            int colon = hp.lastIndexOf(':');
            out.put(id, new String[] {hp.substring(0, colon), hp.substring(colon + 1)});
        });
        out.put(config.nodeId(), new String[] {config.advertisedHost(), Integer.toString(advertisedPort)});
        return out;
    }

    private volatile java.util.function.Supplier<java.util.SortedMap<Integer, Long>> liveShells = TreeMap::new;

    /** Where the live shells (by cluster lease) come from; until set, every registered shell counts as live. */
    void liveShells(java.util.function.Supplier<java.util.SortedMap<Integer, Long>> source) {
        this.liveShells = source;
    }

    /** Whether this shell coordinates {@code groupId} now (see {@link GroupApis#coordinatorOf}). */
    boolean coordinates(String groupId) {
        return groupApis.coordinates(groupId);
    }

    /**
     * The lowest registered node id whose lease is live, named controller in Metadata and DescribeCluster (it also runs
     * the self-balancer).
     */
    private int controller() {
        return liveIds().first();
    }

    /** Registered shells whose lease is live as seen here (every registered one until the first lease round). */
    private java.util.SortedSet<Integer> liveIds() {
        java.util.SortedMap<Integer, String[]> all = brokers();
        java.util.SortedMap<Integer, Long> live = liveShells.get();
        java.util.SortedSet<Integer> ids = new java.util.TreeSet<>();
        for (Integer id : all.keySet()) {
            if (live.isEmpty() || live.containsKey(id)) {
                ids.add(id);
            }
        }
        return ids.isEmpty() ? new java.util.TreeSet<>(all.keySet()) : ids;
    }

    private AbstractResponse describeCluster() {
        DescribeClusterResponseData.DescribeClusterBrokerCollection brokers = new DescribeClusterResponseData.DescribeClusterBrokerCollection();
        brokers().forEach((id, hp) -> brokers.add(new DescribeClusterResponseData.DescribeClusterBroker().setBrokerId(id)
                .setHost(hp[0]).setPort(Integer.parseInt(hp[1]))));
        return new DescribeClusterResponse(new DescribeClusterResponseData().setClusterId(config.clusterId())
                .setControllerId(controller()).setBrokers(brokers));
    }

    private CompletableFuture<AbstractResponse> metadata(MetadataRequest request, short version) {
        MetadataRequestData data = request.data();
        boolean all = data.topics() == null || (version == 0 && data.topics().isEmpty());
        List<CompletableFuture<MetadataResponseData.MetadataResponseTopic>> futures = new ArrayList<>();
        if (all) {
            for (TopicRegistry.Topic t : topics.all()) {
                futures.add(CompletableFuture.completedFuture(describeTopic(t)));
            }
        } else {
            boolean autoCreate = config.autoCreateTopics() && (version < 4 || data.allowAutoTopicCreation());
            for (MetadataRequestData.MetadataRequestTopic rt : data.topics()) {
                TopicRegistry.Topic t = rt.name() != null ? topics.get(rt.name())
                        : rt.topicId() != null ? topics.byId(rt.topicId()) : null;
                if (t != null) {
                    futures.add(CompletableFuture.completedFuture(describeTopic(t)));
                } else if (rt.name() != null && autoCreate) {
                    String name = rt.name();
                    futures.add(topics.create(name, config.numPartitions(), Map.of())
                            .handle((created, e) -> {
                                TopicRegistry.Topic now = topics.get(name);
                                if (now != null) {
                                    return describeTopic(now);
                                }
                                Errors err = Errors.forException(e instanceof CompletionException ? e.getCause() : e);
                                return new MetadataResponseData.MetadataResponseTopic().setName(name)
                                        .setErrorCode(err == Errors.TOPIC_ALREADY_EXISTS ? Errors.LEADER_NOT_AVAILABLE.code() : err.code());
                            }));
                } else {
                    futures.add(CompletableFuture.completedFuture(new MetadataResponseData.MetadataResponseTopic()
                            .setName(rt.name()).setTopicId(rt.topicId() == null ? Uuid.ZERO_UUID : rt.topicId())
                            .setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code())));
                }
            }
        }
        return CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).thenApply(v -> {
            MetadataResponseData.MetadataResponseBrokerCollection brokers = new MetadataResponseData.MetadataResponseBrokerCollection();
            brokers().forEach((id, hp) -> brokers.add(new MetadataResponseData.MetadataResponseBroker().setNodeId(id)
                    .setHost(hp[0]).setPort(Integer.parseInt(hp[1]))));
            MetadataResponseData.MetadataResponseTopicCollection list = new MetadataResponseData.MetadataResponseTopicCollection();
            for (var f : futures) {
                list.add(f.join());
            }
            return new MetadataResponse(new MetadataResponseData().setBrokers(brokers).setClusterId(config.clusterId())
                    .setControllerId(controller()).setTopics(list), version);
        });
    }

    private MetadataResponseData.MetadataResponseTopic describeTopic(TopicRegistry.Topic t) {
        List<MetadataResponseData.MetadataResponsePartition> partitions = new ArrayList<>();
        for (TopicRegistry.Slot s : t.slots()) {
            int leader = s.leader;
            MetadataResponseData.MetadataResponsePartition mp = new MetadataResponseData.MetadataResponsePartition()
                    .setPartitionIndex(s.index).setOfflineReplicas(List.of());
            if (leader < 0) {
                mp.setErrorCode(Errors.LEADER_NOT_AVAILABLE.code()).setLeaderId(-1).setLeaderEpoch(-1)
                        .setReplicaNodes(List.of()).setIsrNodes(List.of());
            } else {
                mp.setLeaderId(leader).setLeaderEpoch((int) s.epoch).setReplicaNodes(List.of(leader)).setIsrNodes(List.of(leader));
            }
            partitions.add(mp);
        }
        return new MetadataResponseData.MetadataResponseTopic().setName(t.name()).setTopicId(t.id())
                .setIsInternal(false).setPartitions(partitions);
    }

    // ---------------------------------------------------------------- produce

    private CompletableFuture<AbstractResponse> produce(ProduceRequest request) {
        ProduceRequestData data = request.data();
        if (data.transactionalId() != null) {
            return done(request.getErrorResponse(0, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.exception(
                    "transactions are not supported by kafka-shell")));
        }
        Map<String, List<CompletableFuture<ProduceResponseData.PartitionProduceResponse>>> results = new LinkedHashMap<>();
        for (ProduceRequestData.TopicProduceData td : data.topicData()) {
            TopicRegistry.Topic t = topics.get(td.name());
            List<CompletableFuture<ProduceResponseData.PartitionProduceResponse>> list =
                    results.computeIfAbsent(td.name(), n -> new ArrayList<>());
            for (ProduceRequestData.PartitionProduceData pd : td.partitionData()) {
                PartitionLog log = t == null ? null : t.partition(pd.index());
                if (log == null) {
                    list.add(CompletableFuture.completedFuture(partitionError(pd.index(), missing(t, pd.index()), null)));
                    continue;
                }
                list.add(appendPartition(t, log, pd));
            }
        }
        List<CompletableFuture<?>> all = new ArrayList<>();
        results.values().forEach(all::addAll);
        if (data.acks() == 0) {
            // No response, but the request (whose frame holds the batches) is done only once they are appended.
            return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).thenApply(v -> null);
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).thenApply(v -> {
            ProduceResponseData.TopicProduceResponseCollection responses = new ProduceResponseData.TopicProduceResponseCollection();
            results.forEach((name, list) -> {
                List<ProduceResponseData.PartitionProduceResponse> parts = new ArrayList<>();
                list.forEach(f -> parts.add(f.join()));
                responses.add(new ProduceResponseData.TopicProduceResponse().setName(name).setPartitionResponses(parts));
            });
            return new ProduceResponse(new ProduceResponseData().setResponses(responses));
        });
    }

    private static ProduceResponseData.PartitionProduceResponse partitionError(int index, Errors error, String message) {
        return new ProduceResponseData.PartitionProduceResponse().setIndex(index).setErrorCode(error.code())
                .setBaseOffset(-1).setLogAppendTimeMs(-1).setLogStartOffset(-1).setErrorMessage(message);
    }

    /** Validates the partition's records as Kafka does, then appends the single batch. */
    private CompletableFuture<ProduceResponseData.PartitionProduceResponse> appendPartition(
            TopicRegistry.Topic topic, PartitionLog log, ProduceRequestData.PartitionProduceData pd) {
        int index = pd.index();
        if (!(pd.records() instanceof MemoryRecords records) || records.sizeInBytes() == 0) {
            return CompletableFuture.completedFuture(partitionError(index, Errors.CORRUPT_MESSAGE, "no records"));
        }
        Map<String, String> cfg = TopicConfigs.effective(config, topic.configs());
        boolean logAppendTime = "LogAppendTime".equals(cfg.get("message.timestamp.type"));
        ProduceValidator.Result check = ProduceValidator.validate(records,
                Integer.parseInt(cfg.get("max.message.bytes")), logAppendTime,
                Long.parseLong(cfg.get("message.timestamp.after.max.ms")),
                Long.parseLong(cfg.get("message.timestamp.before.max.ms")), System.currentTimeMillis());
        if (!check.valid()) {
            return CompletableFuture.completedFuture(partitionError(index, check.error(), check.message()));
        }
        // The batch is a view of the request frame, owned by this request until it is answered; the append rewrites
        // its base offset in place and the library copies it into the log cache.
        return log.append(records.buffer().duplicate(), logAppendTime).thenApply(o -> new ProduceResponseData.PartitionProduceResponse()
                .setIndex(index).setErrorCode(o.error().code()).setBaseOffset(o.baseOffset())
                .setLogAppendTimeMs(o.logAppendTimeMs()).setLogStartOffset(log.logStartOffset()));
    }

    // ---------------------------------------------------------------- fetch

    private CompletableFuture<AbstractResponse> fetch(FetchRequest request) {
        FetchRequestData data = request.data();
        if (data.sessionId() != 0 || (data.sessionEpoch() != 0 && data.sessionEpoch() != -1)) {
            return done(FetchResponse.of(new FetchResponseData().setErrorCode(Errors.FETCH_SESSION_ID_NOT_FOUND.code())));
        }
        FetchOperation op = new FetchOperation(data);
        op.attempt(false);
        return op.result;
    }

    /**
     * One fetch request: reads every partition; while fewer than {@code min.bytes} are there and {@code max.wait.ms}
     * has not passed, it waits for an append to one of its partitions and reads again.
     *
     * <p>Concurrency: wakes (appends, the deadline) may come from several threads; attempts run one at a time, and a
     * wake during an attempt makes it run once more. Each partition holds at most one waiter of this operation.
     */
    private final class FetchOperation {
        final FetchRequestData data;
        final CompletableFuture<AbstractResponse> result = new CompletableFuture<>();
        final long deadlineNanos;
        final AtomicBoolean running = new AtomicBoolean(true);
        final AtomicBoolean dirty = new AtomicBoolean();
        final java.util.Set<PartitionLog> waitingOn = java.util.concurrent.ConcurrentHashMap.newKeySet();
        volatile boolean timedOut;
        boolean timerSet;

        FetchOperation(FetchRequestData data) {
            this.data = data;
            this.deadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(0, data.maxWaitMs()));
        }

        void wake() {
            if (result.isDone()) {
                return;
            }
            dirty.set(true);
            if (running.compareAndSet(false, true)) {
                dirty.set(false);
                attempt(false);
            }
        }

        void attempt(boolean ignored) {
            boolean last = timedOut || System.nanoTime() - deadlineNanos >= 0;
            List<FetchRequestData.FetchTopic> req = data.topics();
            List<List<CompletableFuture<PartitionLog.ReadResult>>> reads = new ArrayList<>();
            List<CompletableFuture<?>> all = new ArrayList<>();
            for (FetchRequestData.FetchTopic ft : req) {
                TopicRegistry.Topic t = topics.get(ft.topic());
                List<CompletableFuture<PartitionLog.ReadResult>> list = new ArrayList<>();
                for (FetchRequestData.FetchPartition fp : ft.partitions()) {
                    PartitionLog log = t == null ? null : t.partition(fp.partition());
                    CompletableFuture<PartitionLog.ReadResult> f = log == null
                            ? CompletableFuture.completedFuture(new PartitionLog.ReadResult(missing(t, fp.partition()), null, -1, -1))
                            : log.read(fp.fetchOffset(), Math.min(fp.partitionMaxBytes(), Math.max(data.maxBytes(), 1)));
                    list.add(f);
                    all.add(f);
                }
                reads.add(list);
            }
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
                long bytes = 0;
                boolean error = false;
                for (var list : reads) {
                    for (var f : list) {
                        PartitionLog.ReadResult r = f.join();
                        error |= r.error() != Errors.NONE;
                        bytes += r.records() == null ? 0 : r.records().remaining();
                    }
                }
                if (last || error || bytes >= Math.max(1, data.minBytes()) || data.maxWaitMs() <= 0) {
                    result.complete(respond(reads));
                    return;
                }
                if (!timerSet) {
                    timerSet = true;
                    timer.schedule(() -> {
                        timedOut = true;
                        wake();
                    }, Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
                }
                for (int i = 0; i < req.size(); i++) {
                    FetchRequestData.FetchTopic ft = req.get(i);
                    TopicRegistry.Topic t = topics.get(ft.topic());
                    for (int j = 0; j < ft.partitions().size(); j++) {
                        FetchRequestData.FetchPartition fp = ft.partitions().get(j);
                        PartitionLog log = t == null ? null : t.partition(fp.partition());
                        long seen = reads.get(i).get(j).join().highWatermark();
                        if (log != null && waitingOn.add(log)) {
                            log.awaitData(seen, () -> {
                                waitingOn.remove(log);
                                wake();
                            });
                        }
                    }
                }
                running.set(false);
                if (dirty.get() && running.compareAndSet(false, true)) {
                    dirty.set(false);
                    attempt(false);
                }
            });
        }

        private AbstractResponse respond(List<List<CompletableFuture<PartitionLog.ReadResult>>> reads) {
            long budget = Math.max(data.maxBytes(), 1);
            boolean first = true;
            List<FetchResponseData.FetchableTopicResponse> out = new ArrayList<>();
            for (int i = 0; i < data.topics().size(); i++) {
                FetchRequestData.FetchTopic ft = data.topics().get(i);
                List<FetchResponseData.PartitionData> parts = new ArrayList<>();
                for (int j = 0; j < ft.partitions().size(); j++) {
                    PartitionLog.ReadResult r = reads.get(i).get(j).join();
                    FetchResponseData.PartitionData pd = new FetchResponseData.PartitionData()
                            .setPartitionIndex(ft.partitions().get(j).partition()).setErrorCode(r.error().code())
                            .setHighWatermark(r.highWatermark()).setLastStableOffset(r.highWatermark())
                            .setLogStartOffset(r.logStartOffset()).setPreferredReadReplica(-1);
                    if (data.isolationLevel() == IsolationLevel.READ_COMMITTED.id()) {
                        pd.setAbortedTransactions(List.of());
                    }
                    ByteBuffer records = r.records();
                    if (records != null && records.remaining() > 0) {
                        if (first || records.remaining() <= budget) {
                            budget -= records.remaining();
                            first = false;
                            pd.setRecords(MemoryRecords.readableRecords(records));
                        } else {
                            pd.setRecords(MemoryRecords.EMPTY);
                        }
                    } else {
                        pd.setRecords(MemoryRecords.EMPTY);
                    }
                    parts.add(pd);
                }
                out.add(new FetchResponseData.FetchableTopicResponse().setTopic(ft.topic()).setTopicId(ft.topicId())
                        .setPartitions(parts));
            }
            return FetchResponse.of(new FetchResponseData().setErrorCode(Errors.NONE.code()).setSessionId(0)
                    .setResponses(out));
        }
    }

    // ---------------------------------------------------------------- list offsets

    private CompletableFuture<AbstractResponse> listOffsets(ListOffsetsRequest request, short version) {
        List<ListOffsetsResponseData.ListOffsetsTopicResponse> out = new ArrayList<>();
        List<CompletableFuture<?>> all = new ArrayList<>();
        for (ListOffsetsRequestData.ListOffsetsTopic lt : request.data().topics()) {
            TopicRegistry.Topic t = topics.get(lt.name());
            List<ListOffsetsResponseData.ListOffsetsPartitionResponse> parts = new ArrayList<>();
            for (ListOffsetsRequestData.ListOffsetsPartition lp : lt.partitions()) {
                ListOffsetsResponseData.ListOffsetsPartitionResponse r = new ListOffsetsResponseData.ListOffsetsPartitionResponse()
                        .setPartitionIndex(lp.partitionIndex()).setTimestamp(-1).setOffset(-1).setLeaderEpoch(version >= 4 ? 0 : -1);
                parts.add(r);
                PartitionLog log = t == null ? null : t.partition(lp.partitionIndex());
                if (log == null) {
                    r.setErrorCode(missing(t, lp.partitionIndex()).code());
                    continue;
                }
                long ts = lp.timestamp();
                if (ts == ListOffsetsRequest.EARLIEST_TIMESTAMP || ts == ListOffsetsRequest.EARLIEST_LOCAL_TIMESTAMP) {
                    r.setOffset(log.logStartOffset());
                } else if (ts == ListOffsetsRequest.LATEST_TIMESTAMP) {
                    r.setOffset(log.highWatermark());
                } else if (ts == ListOffsetsRequest.LATEST_TIERED_TIMESTAMP) {
                    r.setOffset(-1);
                } else if (ts == ListOffsetsRequest.MAX_TIMESTAMP || ts >= 0) {
                    all.add(TimestampIndex.search(log, ts).thenAccept(found -> r.setOffset(found[0]).setTimestamp(found[1])));
                } else {
                    r.setErrorCode(Errors.INVALID_REQUEST.code());
                }
            }
            out.add(new ListOffsetsResponseData.ListOffsetsTopicResponse().setName(lt.name()).setPartitions(parts));
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
                .thenApply(v -> new ListOffsetsResponse(new ListOffsetsResponseData().setTopics(out)));
    }

    // ---------------------------------------------------------------- producers and coordinators

    private CompletableFuture<AbstractResponse> initProducerId(InitProducerIdRequest request) {
        InitProducerIdRequestData d = request.data();
        if (d.transactionalId() != null) {
            return done(new InitProducerIdResponse(new InitProducerIdResponseData()
                    .setErrorCode(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code()).setProducerId(-1).setProducerEpoch((short) -1)));
        }
        if (d.producerId() >= 0 && d.producerEpoch() >= 0 && d.producerEpoch() < Short.MAX_VALUE - 1) {
            // KIP-360: an idempotent producer bumps its epoch to reset its sequences.
            return done(new InitProducerIdResponse(new InitProducerIdResponseData()
                    .setProducerId(d.producerId()).setProducerEpoch((short) (d.producerEpoch() + 1))));
        }
        return producerIds.next().thenApply(id -> new InitProducerIdResponse(new InitProducerIdResponseData()
                .setProducerId(id).setProducerEpoch((short) 0)));
    }

    /** Unique producer ids across restarts and shells: blocks of 1,000 reserved by compare-and-set. */
    static final class ProducerIds {
        private static final String KEY = "kafka/producer-id-block";
        private static final int BLOCK = 1000;
        private final KeyValues kv;
        private long next;
        private long end;

        ProducerIds(KeyValues kv) {
            this.kv = kv;
        }

        synchronized CompletableFuture<Long> next() {
            if (next < end) {
                return CompletableFuture.completedFuture(next++);
            }
            while (true) {
                byte[] current = kv.get(KEY).join().orElse(null);
                long start = current == null ? 0 : Long.parseLong(new String(current, StandardCharsets.UTF_8));
                byte[] updated = Long.toString(start + BLOCK).getBytes(StandardCharsets.UTF_8);
                if (kv.compareAndSet(KEY, current, updated).join()) {
                    next = start;
                    end = start + BLOCK;
                    return CompletableFuture.completedFuture(next++);
                }
            }
        }
    }

    /** Finds the first offset whose record timestamp is at least {@code ts} by scanning batches (no index yet). */
    static final class TimestampIndex {
        private TimestampIndex() {
        }

        /** Returns {offset, timestamp}, or {-1, -1}. {@code ts == -3}: the record with the largest timestamp. */
        static CompletableFuture<long[]> search(PartitionLog log, long ts) {
            long[] best = {-1, -1};
            return scan(log, log.logStartOffset(), log.highWatermark(), ts, best);
        }

        private static CompletableFuture<long[]> scan(PartitionLog log, long from, long end, long ts, long[] best) {
            if (from >= end) {
                return CompletableFuture.completedFuture(best);
            }
            return log.read(from, 1 << 20).thenCompose(r -> {
                if (r.error() != Errors.NONE || r.records() == null || !r.records().hasRemaining()) {
                    return CompletableFuture.completedFuture(best);
                }
                long next = from;
                for (MutableRecordBatch b : MemoryRecords.readableRecords(r.records()).batches()) {
                    next = b.lastOffset() + 1;
                    if (ts == ListOffsetsRequest.MAX_TIMESTAMP) {
                        if (b.maxTimestamp() > best[1]) {
                            for (Record rec : b) {
                                if (rec.timestamp() >= b.maxTimestamp() || b.timestampType() == TimestampType.LOG_APPEND_TIME) {
                                    best[0] = rec.offset();
                                    best[1] = b.maxTimestamp();
                                    break;
                                }
                            }
                        }
                        continue;
                    }
                    if (b.maxTimestamp() >= ts) {
                        for (Record rec : b) {
                            long recTs = b.timestampType() == TimestampType.LOG_APPEND_TIME ? b.maxTimestamp() : rec.timestamp();
                            if (rec.offset() >= from && recTs >= ts) {
                                best[0] = rec.offset();
                                best[1] = recTs;
                                return CompletableFuture.completedFuture(best);
                            }
                        }
                    }
                }
                return next <= from ? CompletableFuture.completedFuture(best) : scan(log, next, end, ts, best);
            });
        }
    }
}
