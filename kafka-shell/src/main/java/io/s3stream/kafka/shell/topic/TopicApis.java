package io.s3stream.kafka.shell.topic;

import io.s3stream.kafka.shell.acl.Authorization;
import io.s3stream.kafka.shell.config.ShellConfig;
import io.s3stream.kafka.shell.log.PartitionLog;
import io.s3stream.kafka.shell.log.Retention;
import io.s3stream.kafka.shell.group.GroupConfigs;
import io.s3stream.kafka.shell.network.ApiFamily;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreatePartitionsResponseData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.DeleteRecordsResponseData;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.DescribeConfigsRequestData;
import org.apache.kafka.common.message.DescribeConfigsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.CreatePartitionsRequest;
import org.apache.kafka.common.requests.CreatePartitionsResponse;
import org.apache.kafka.common.requests.CreateTopicsRequest;
import org.apache.kafka.common.requests.CreateTopicsResponse;
import org.apache.kafka.common.requests.DeleteRecordsRequest;
import org.apache.kafka.common.requests.DeleteRecordsResponse;
import org.apache.kafka.common.requests.DeleteTopicsRequest;
import org.apache.kafka.common.requests.DeleteTopicsResponse;
import org.apache.kafka.common.requests.DescribeConfigsRequest;
import org.apache.kafka.common.requests.DescribeConfigsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The topic and configuration admin APIs (CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
 * IncrementalAlterConfigs, AlterPartitionReassignments, ListPartitionReassignments, DescribeLogDirs, DeleteRecords)
 * over the {@link TopicRegistry}. Those that read or write the manifest run on the blocking executor.
 */
public final class TopicApis implements ApiFamily {
    private final Authorization auth;
    private final ShellConfig config;
    private final TopicRegistry topics;
    private final Consumer<String> onTopicDeleted;
    private final Executor blocking;
    private final Supplier<SortedMap<Integer, String[]>> brokers;

    /**
     * @param onTopicDeleted told the name of each deleted topic (its committed offsets go with it)
     * @param brokers registered shells by node id, as host and port
     */
    public TopicApis(ShellConfig config, TopicRegistry topics, Consumer<String> onTopicDeleted, Executor blocking,
                     Supplier<SortedMap<Integer, String[]>> brokers, Authorization auth) {
        this.config = config;
        this.topics = topics;
        this.onTopicDeleted = onTopicDeleted;
        this.blocking = blocking;
        this.brokers = brokers;
        this.auth = auth;
    }

    @Override
    public Map<ApiKeys, short[]> versions() {
        return ApiFamily.versions(ApiKeys.CREATE_TOPICS, 2, 7, ApiKeys.DELETE_TOPICS, 1, 6, ApiKeys.CREATE_PARTITIONS, 0, 3,
                ApiKeys.DESCRIBE_CONFIGS, 1, 4, ApiKeys.INCREMENTAL_ALTER_CONFIGS, 0, 1,
                ApiKeys.ALTER_PARTITION_REASSIGNMENTS, 0, 1, ApiKeys.LIST_PARTITION_REASSIGNMENTS, 0, 0,
                ApiKeys.DESCRIBE_LOG_DIRS, 1, 4, ApiKeys.DELETE_RECORDS, 0, 2);
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext ctx, AbstractRequest request) {
        ApiKeys key = ctx.header.apiKey();
        short version = ctx.header.apiVersion();
        return switch (key) {
            case CREATE_TOPICS -> createTopics(ctx, (CreateTopicsRequest) request);
            case DELETE_TOPICS -> deleteTopics(ctx, (DeleteTopicsRequest) request, version);
            case CREATE_PARTITIONS -> createPartitions(ctx, (CreatePartitionsRequest) request);
            case DESCRIBE_CONFIGS -> CompletableFuture.supplyAsync( // a GROUP resource reads the key-value space
                    () -> describeConfigs(ctx, (DescribeConfigsRequest) request), blocking);
            case ALTER_PARTITION_REASSIGNMENTS -> CompletableFuture.supplyAsync(
                    () -> alterReassignments((org.apache.kafka.common.requests.AlterPartitionReassignmentsRequest) request), blocking);
            case INCREMENTAL_ALTER_CONFIGS -> CompletableFuture.supplyAsync(
                    () -> incrementalAlterConfigs(ctx, (org.apache.kafka.common.requests.IncrementalAlterConfigsRequest) request), blocking);
            case DESCRIBE_LOG_DIRS -> CompletableFuture.supplyAsync(
                    () -> describeLogDirs((org.apache.kafka.common.requests.DescribeLogDirsRequest) request), blocking);
            case LIST_PARTITION_REASSIGNMENTS -> CompletableFuture.completedFuture(listReassignments(
                    (org.apache.kafka.common.requests.ListPartitionReassignmentsRequest) request));
            case DELETE_RECORDS -> deleteRecords(ctx, (DeleteRecordsRequest) request);
            default -> throw new IllegalArgumentException(key + " is not a topic API");
        };
    }

    /** DeleteRecords: each partition's log start offset moves up to the offset asked (its leader trims its stream). */
    private CompletableFuture<AbstractResponse> deleteRecords(RequestContext ctx, DeleteRecordsRequest request) {
        DeleteRecordsResponseData out = new DeleteRecordsResponseData();
        List<CompletableFuture<?>> all = new ArrayList<>();
        for (var rt : request.data().topics()) {
            var topicResult = new DeleteRecordsResponseData.DeleteRecordsTopicResult()
                    .setName(rt.name());
            out.topics().add(topicResult);
            TopicRegistry.Topic t = topics.get(rt.name());
            boolean allowed = auth.allowed(ctx, AclOperation.DELETE, ResourceType.TOPIC, rt.name());
            for (var rp : rt.partitions()) {
                var pr = new DeleteRecordsResponseData.DeleteRecordsPartitionResult()
                        .setPartitionIndex(rp.partitionIndex()).setLowWatermark(-1);
                topicResult.partitions().add(pr);
                PartitionLog log = t == null ? null : t.partition(rp.partitionIndex());
                if (!allowed) {
                    pr.setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code());
                    continue;
                }
                if (log == null) {
                    pr.setErrorCode(TopicRegistry.missing(t, rp.partitionIndex()).code());
                    continue;
                }
                all.add(log.deleteRecordsBefore(rp.offset()).handle((low, e) -> {
                    if (e != null) {
                        Errors error = Errors.forException(ApiFamily.cause(e));
                        pr.setErrorCode((error == Errors.UNKNOWN_SERVER_ERROR ? Errors.KAFKA_STORAGE_ERROR : error).code());
                    } else {
                        pr.setLowWatermark(low);
                    }
                    return null;
                }));
            }
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
                .thenApply(v -> new DeleteRecordsResponse(out));
    }

    private CompletableFuture<AbstractResponse> createTopics(RequestContext ctx, CreateTopicsRequest request) {
        CreateTopicsRequestData data = request.data();
        boolean createAny = auth.visible(ctx, AclOperation.CREATE, ResourceType.CLUSTER, Authorization.CLUSTER_NAME);
        List<CompletableFuture<CreateTopicsResponseData.CreatableTopicResult>> futures = new ArrayList<>();
        for (CreateTopicsRequestData.CreatableTopic ct : data.topics()) {
            CreateTopicsResponseData.CreatableTopicResult r = new CreateTopicsResponseData.CreatableTopicResult()
                    .setName(ct.name());
            int partitions = ct.numPartitions() == -1 ? config.numPartitions() : ct.numPartitions();
            Map<String, String> configs = new TreeMap<>();
            ct.configs().forEach(c -> configs.put(c.name(), c.value()));
            String problem = null;
            Errors error = Errors.NONE;
            if (!createAny && !auth.allowed(ctx, AclOperation.CREATE, ResourceType.TOPIC, ct.name())) {
                error = Errors.TOPIC_AUTHORIZATION_FAILED;
                problem = "Authorization failed.";
            } else if (!ct.assignments().isEmpty()) {
                error = Errors.INVALID_REQUEST;
                problem = "manual replica assignments are not supported";
            } else if (ct.replicationFactor() != -1 && ct.replicationFactor() != 1) {
                error = Errors.INVALID_REPLICATION_FACTOR;
                problem = "replication factor must be 1 (or -1): durability comes from the WAL and object storage";
            } else if (partitions < 1) {
                error = Errors.INVALID_PARTITIONS;
                problem = "number of partitions must be at least 1";
            } else if (topics.get(ct.name()) != null) {
                error = Errors.TOPIC_ALREADY_EXISTS;
                problem = "Topic '" + ct.name() + "' already exists.";
            } else {
                try {
                    TopicMap.validateName(ct.name());
                    TopicConfigs.validate(configs);
                } catch (RuntimeException e) {
                    error = Errors.forException(e);
                    problem = e.getMessage();
                }
            }
            if (error != Errors.NONE) {
                futures.add(CompletableFuture.completedFuture(r.setErrorCode(error.code()).setErrorMessage(problem)));
            } else if (data.validateOnly()) {
                futures.add(CompletableFuture.completedFuture(r.setNumPartitions(partitions).setReplicationFactor((short) 1)));
            } else {
                futures.add(topics.create(ct.name(), partitions, configs).handle((t, e) -> {
                    if (e != null) {
                        Throwable c = ApiFamily.cause(e);
                        return r.setErrorCode(Errors.forException(c).code()).setErrorMessage(c.getMessage());
                    }
                    if (!auth.visible(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, ct.name())) {
                        // As Kafka: created, but its configs are not shown to who may not describe them.
                        return r.setTopicId(t.id()).setNumPartitions(partitions).setReplicationFactor((short) 1)
                                .setTopicConfigErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code());
                    }
                    List<CreateTopicsResponseData.CreatableTopicConfigs> cfgs = new ArrayList<>();
                    TopicConfigs.effective(config, t.configs()).forEach((k, v) -> cfgs.add(
                            new CreateTopicsResponseData.CreatableTopicConfigs().setName(k).setValue(v)
                                    .setConfigSource((byte) (t.configs().containsKey(k) ? 1 : 5))));
                    return r.setTopicId(t.id()).setNumPartitions(partitions).setReplicationFactor((short) 1).setConfigs(cfgs);
                }));
            }
        }
        return CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).thenApply(v -> {
            CreateTopicsResponseData.CreatableTopicResultCollection results = new CreateTopicsResponseData.CreatableTopicResultCollection();
            futures.forEach(f -> results.add(f.join()));
            return new CreateTopicsResponse(new CreateTopicsResponseData().setTopics(results));
        });
    }

    private CompletableFuture<AbstractResponse> createPartitions(RequestContext ctx, CreatePartitionsRequest request) {
        CreatePartitionsRequestData data = request.data();
        List<CompletableFuture<CreatePartitionsResponseData.CreatePartitionsTopicResult>> futures = new ArrayList<>();
        for (CreatePartitionsRequestData.CreatePartitionsTopic ct : data.topics()) {
            CreatePartitionsResponseData.CreatePartitionsTopicResult r =
                    new CreatePartitionsResponseData.CreatePartitionsTopicResult().setName(ct.name());
            TopicRegistry.Topic t = topics.get(ct.name());
            if (!auth.allowed(ctx, AclOperation.ALTER, ResourceType.TOPIC, ct.name())) {
                futures.add(CompletableFuture.completedFuture(r.setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code())
                        .setErrorMessage("Authorization failed.")));
            } else if (t == null) {
                futures.add(CompletableFuture.completedFuture(r.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code())
                        .setErrorMessage("Topic '" + ct.name() + "' does not exist.")));
            } else if (ct.assignments() != null && !ct.assignments().isEmpty()) {
                futures.add(CompletableFuture.completedFuture(r.setErrorCode(Errors.INVALID_REQUEST.code())
                        .setErrorMessage("manual replica assignments are not supported")));
            } else if (ct.count() <= t.partitionCount()) {
                futures.add(CompletableFuture.completedFuture(r.setErrorCode(Errors.INVALID_PARTITIONS.code())
                        .setErrorMessage("Topic currently has " + t.partitionCount() + " partitions, which is higher than or equal to the requested " + ct.count() + ".")));
            } else if (data.validateOnly()) {
                futures.add(CompletableFuture.completedFuture(r));
            } else {
                futures.add(CompletableFuture.supplyAsync(() -> topics.addPartitions(ct.name(), ct.count()), blocking)
                        .thenCompose(f -> f).handle((grown, e) -> {
                            if (e != null) {
                                Throwable c = ApiFamily.cause(e);
                                return r.setErrorCode(Errors.forException(c).code()).setErrorMessage(c.getMessage());
                            }
                            return r;
                        }));
            }
        }
        return CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).thenApply(v -> {
            List<CreatePartitionsResponseData.CreatePartitionsTopicResult> results = new ArrayList<>();
            futures.forEach(f -> results.add(f.join()));
            return new CreatePartitionsResponse(new CreatePartitionsResponseData().setResults(results));
        });
    }

    /**
     * Moves partitions between shells: {@code replicas} must be exactly one registered broker, the new leader (there
     * is one replica: the data is in the object store). Answered once the move is recorded; the old leader hands the
     * partition over at its next reconcile (closing its stream uploads the WAL data) and the target opens it at a
     * higher epoch at its next one. {@code replicas = null} cancels a move not yet started.
     */
    private AbstractResponse alterReassignments(org.apache.kafka.common.requests.AlterPartitionReassignmentsRequest request) {
        var out = new org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData();
        topics.brokersNow(); // a shell that registered since the last reconcile is a valid target
        java.util.SortedMap<Integer, String[]> live = brokers.get();
        for (var rt : request.data().topics()) {
            var topicOut = new org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData.ReassignableTopicResponse()
                    .setName(rt.name());
            TopicRegistry.Topic t = topics.get(rt.name());
            for (var rp : rt.partitions()) {
                var po = new org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData.ReassignablePartitionResponse()
                        .setPartitionIndex(rp.partitionIndex()).setErrorMessage(null);
                topicOut.partitions().add(po);
                if (t == null || t.slot(rp.partitionIndex()) == null) {
                    po.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
                    continue;
                }
                List<Integer> replicas = rp.replicas();
                if (replicas != null && (replicas.size() != 1 || !live.containsKey(replicas.getFirst()))) {
                    po.setErrorCode(Errors.INVALID_REPLICA_ASSIGNMENT.code()).setErrorMessage(
                            "replicas must be exactly one registered broker (of " + live.keySet() + "), was " + replicas);
                    continue;
                }
                try {
                    topics.reassign(rt.name(), rp.partitionIndex(), replicas == null ? -1 : replicas.getFirst());
                } catch (RuntimeException e) {
                    Throwable c = ApiFamily.cause(e);
                    po.setErrorCode(Errors.forException(c).code()).setErrorMessage(c.getMessage());
                }
            }
            out.responses().add(topicOut);
        }
        return new org.apache.kafka.common.requests.AlterPartitionReassignmentsResponse(out);
    }

    /**
     * Topic configs: SET and DELETE (APPEND/SUBTRACT get INVALID_REQUEST), validated as at creation. Broker configs
     * are read-only, except that the replication throttles Kafka's reassignment tool sets and clears are accepted
     * and ignored (there is no replication to throttle).
     */
    private AbstractResponse incrementalAlterConfigs(RequestContext ctx,
                                                     org.apache.kafka.common.requests.IncrementalAlterConfigsRequest request) {
        var out = new org.apache.kafka.common.message.IncrementalAlterConfigsResponseData();
        for (var res : request.data().resources()) {
            var r = new org.apache.kafka.common.message.IncrementalAlterConfigsResponseData.AlterConfigsResourceResponse()
                    .setResourceType(res.resourceType()).setResourceName(res.resourceName());
            out.responses().add(r);
            Errors denied = configsDenied(ctx, AclOperation.ALTER_CONFIGS, res.resourceType(), res.resourceName());
            if (denied != Errors.NONE) {
                r.setErrorCode(denied.code()).setErrorMessage(denied.message());
                continue;
            }
            try {
                if (res.resourceType() == 4) { // BROKER
                    for (var c : res.configs()) {
                        if (!c.name().endsWith(".throttled.rate") && !c.name().endsWith(".throttled.replicas")
                                && !c.name().equals("replica.alter.log.dirs.io.max.bytes.per.second")) {
                            throw new org.apache.kafka.common.errors.InvalidRequestException(
                                    "broker config " + c.name() + " is read-only in kafka-shell (set it in server.properties)");
                        }
                    }
                    continue;
                }
                if (res.resourceType() == 32) { // GROUP
                    GroupConfigs.alter(config, topics.kv(), res.resourceName(), setsAndDeletes(res),
                            request.data().validateOnly()).join();
                    continue;
                }
                if (res.resourceType() != 2) {
                    throw new org.apache.kafka.common.errors.InvalidRequestException("unsupported resource type " + res.resourceType());
                }
                if (topics.get(res.resourceName()) == null) {
                    throw new org.apache.kafka.common.errors.UnknownTopicOrPartitionException(
                            "Topic '" + res.resourceName() + "' does not exist.");
                }
                Map<String, String> changes = setsAndDeletes(res);
                Map<String, String> toValidate = new TreeMap<>();
                changes.forEach((k, v) -> {
                    if (v != null) {
                        toValidate.put(k, v);
                    }
                });
                TopicConfigs.validate(toValidate);
                if (!request.data().validateOnly()) {
                    topics.alterConfigs(res.resourceName(), changes);
                }
            } catch (RuntimeException e) {
                Throwable c = ApiFamily.cause(e);
                r.setErrorCode(Errors.forException(c).code()).setErrorMessage(c.getMessage());
            }
        }
        return new org.apache.kafka.common.requests.IncrementalAlterConfigsResponse(out);
    }

    /**
     * Whether the principal may describe or alter a config resource (DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic,
     * the group, or the cluster for a broker), as the error Kafka answers; NONE when it may, and for a type it does not
     * know (the handler refuses that).
     */
    private Errors configsDenied(RequestContext ctx, AclOperation op, byte resourceType, String name) {
        return switch (resourceType) {
            case 2 -> auth.allowed(ctx, op, ResourceType.TOPIC, name) ? Errors.NONE : Errors.TOPIC_AUTHORIZATION_FAILED;
            case 32 -> auth.allowed(ctx, op, ResourceType.GROUP, name) ? Errors.NONE : Errors.GROUP_AUTHORIZATION_FAILED;
            case 4, 8 -> auth.cluster(ctx, op) ? Errors.NONE : Errors.CLUSTER_AUTHORIZATION_FAILED;
            default -> Errors.NONE;
        };
    }

    /** A resource's changes: SET (a value) and DELETE (null); APPEND and SUBTRACT get INVALID_REQUEST. */
    private static Map<String, String> setsAndDeletes(
            org.apache.kafka.common.message.IncrementalAlterConfigsRequestData.AlterConfigsResource res) {
        Map<String, String> changes = new LinkedHashMap<>();
        for (var c : res.configs()) {
            switch (c.configOperation()) {
                case 0 -> changes.put(c.name(), c.value());
                case 1 -> changes.put(c.name(), null);
                default -> throw new org.apache.kafka.common.errors.InvalidRequestException(
                        "only SET and DELETE are supported, not operation " + c.configOperation() + " on " + c.name());
            }
        }
        return changes;
    }

    /**
     * One "log dir" per shell, {@code s3stream:<object store>}, holding the partitions this shell leads; sizes are
     * estimated as for retention.bytes. Kafka's reassignment tool reads it.
     */
    private AbstractResponse describeLogDirs(org.apache.kafka.common.requests.DescribeLogDirsRequest request) {
        var result = new org.apache.kafka.common.message.DescribeLogDirsResponseData.DescribeLogDirsResult()
                .setLogDir("s3stream:" + config.dataDir().toAbsolutePath()).setTotalBytes(-1).setUsableBytes(-1);
        Map<String, List<Integer>> wanted = null;
        if (request.data().topics() != null) {
            wanted = new HashMap<>();
            for (var t : request.data().topics()) {
                wanted.put(t.topic(), t.partitions());
            }
        }
        for (TopicRegistry.Topic t : topics.all()) {
            if (wanted != null && !wanted.containsKey(t.name())) {
                continue;
            }
            var dt = new org.apache.kafka.common.message.DescribeLogDirsResponseData.DescribeLogDirsTopic().setName(t.name());
            for (PartitionLog log : t.ledHere()) {
                if (wanted == null || wanted.get(t.name()).contains(log.partition())) {
                    dt.partitions().add(new org.apache.kafka.common.message.DescribeLogDirsResponseData.DescribeLogDirsPartition()
                            .setPartitionIndex(log.partition()).setPartitionSize(Retention.estimateBytes(log.stream()))
                            .setOffsetLag(0).setIsFutureKey(false));
                }
            }
            if (!dt.partitions().isEmpty()) {
                result.topics().add(dt);
            }
        }
        return new org.apache.kafka.common.requests.DescribeLogDirsResponse(
                new org.apache.kafka.common.message.DescribeLogDirsResponseData().setResults(List.of(result)));
    }

    private AbstractResponse listReassignments(org.apache.kafka.common.requests.ListPartitionReassignmentsRequest request) {
        var out = new org.apache.kafka.common.message.ListPartitionReassignmentsResponseData();
        Map<String, List<Integer>> wanted = null;
        if (request.data().topics() != null) {
            wanted = new HashMap<>();
            for (var t : request.data().topics()) {
                wanted.put(t.name(), t.partitionIndexes());
            }
        }
        for (TopicRegistry.Topic t : topics.all()) {
            if (wanted != null && !wanted.containsKey(t.name())) {
                continue;
            }
            var ot = new org.apache.kafka.common.message.ListPartitionReassignmentsResponseData.OngoingTopicReassignment()
                    .setName(t.name());
            for (TopicRegistry.Slot s : t.slots()) {
                int target = s.target;
                int leader = s.leader;
                if (target >= 0 && target != leader && (wanted == null || wanted.get(t.name()).contains(s.index))) {
                    ot.partitions().add(new org.apache.kafka.common.message.ListPartitionReassignmentsResponseData.OngoingPartitionReassignment()
                            .setPartitionIndex(s.index).setReplicas(List.of(target, leader))
                            .setAddingReplicas(List.of(target)).setRemovingReplicas(List.of(leader)));
                }
            }
            if (!ot.partitions().isEmpty()) {
                out.topics().add(ot);
            }
        }
        return new org.apache.kafka.common.requests.ListPartitionReassignmentsResponse(out);
    }

    private CompletableFuture<AbstractResponse> deleteTopics(RequestContext ctx, DeleteTopicsRequest request, short version) {
        DeleteTopicsRequestData data = request.data();
        List<String> names = new ArrayList<>();
        List<Uuid> ids = new ArrayList<>();
        if (version >= 6) {
            for (DeleteTopicsRequestData.DeleteTopicState s : data.topics()) {
                names.add(s.name());
                ids.add(s.topicId());
            }
        } else {
            for (String n : data.topicNames()) {
                names.add(n);
                ids.add(Uuid.ZERO_UUID);
            }
        }
        List<CompletableFuture<DeleteTopicsResponseData.DeletableTopicResult>> futures = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            Uuid id = ids.get(i);
            TopicRegistry.Topic t = name != null ? topics.get(name) : topics.byId(id);
            DeleteTopicsResponseData.DeletableTopicResult r = new DeleteTopicsResponseData.DeletableTopicResult()
                    .setName(name).setTopicId(id == null ? Uuid.ZERO_UUID : id);
            if (t == null) {
                // As Kafka: who may not describe a topic is not told whether it exists.
                Errors e = name == null ? Errors.UNKNOWN_TOPIC_ID
                        : auth.allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
                        ? Errors.UNKNOWN_TOPIC_OR_PARTITION : Errors.TOPIC_AUTHORIZATION_FAILED;
                futures.add(CompletableFuture.completedFuture(r.setErrorCode(e.code())));
                continue;
            }
            if (!auth.allowed(ctx, AclOperation.DELETE, ResourceType.TOPIC, t.name())) {
                futures.add(CompletableFuture.completedFuture(r.setName(t.name()).setTopicId(t.id())
                        .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code())));
                continue;
            }
            r.setName(t.name()).setTopicId(t.id());
            futures.add(topics.delete(t.name()).handle((v, e) -> {
                if (e != null) {
                    Throwable c = ApiFamily.cause(e);
                    return r.setErrorCode(Errors.forException(c).code()).setErrorMessage(c.getMessage());
                }
                onTopicDeleted.accept(t.name());
                return r;
            }));
        }
        return CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).thenApply(v -> {
            DeleteTopicsResponseData.DeletableTopicResultCollection results = new DeleteTopicsResponseData.DeletableTopicResultCollection();
            futures.forEach(f -> results.add(f.join()));
            return new DeleteTopicsResponse(new DeleteTopicsResponseData().setResponses(results));
        });
    }

    private AbstractResponse describeConfigs(RequestContext ctx, DescribeConfigsRequest request) {
        DescribeConfigsResponseData out = new DescribeConfigsResponseData();
        for (DescribeConfigsRequestData.DescribeConfigsResource res : request.data().resources()) {
            DescribeConfigsResponseData.DescribeConfigsResult r = new DescribeConfigsResponseData.DescribeConfigsResult()
                    .setResourceType(res.resourceType()).setResourceName(res.resourceName());
            Errors denied = configsDenied(ctx, AclOperation.DESCRIBE_CONFIGS, res.resourceType(), res.resourceName());
            if (denied != Errors.NONE) {
                out.results().add(r.setErrorCode(denied.code()).setErrorMessage(denied.message()));
                continue;
            }
            Map<String, String> values;
            Map<String, String> overrides;
            if (res.resourceType() == 2) { // TOPIC
                TopicRegistry.Topic t = topics.get(res.resourceName());
                if (t == null) {
                    out.results().add(r.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code())
                            .setErrorMessage("Topic '" + res.resourceName() + "' does not exist."));
                    continue;
                }
                overrides = t.configs();
                values = TopicConfigs.effective(config, overrides);
            } else if (res.resourceType() == 4 || res.resourceType() == 8) { // BROKER, BROKER_LOGGER
                overrides = config.raw();
                values = TopicConfigs.broker(config);
            } else if (res.resourceType() == 32) { // GROUP: any group id, as in Kafka
                overrides = GroupConfigs.overrides(topics.kv(), res.resourceName()).join();
                values = GroupConfigs.effective(config, overrides);
            } else {
                out.results().add(r.setErrorCode(Errors.INVALID_REQUEST.code())
                        .setErrorMessage("unsupported resource type " + res.resourceType()));
                continue;
            }
            List<DescribeConfigsResponseData.DescribeConfigsResourceResult> configs = new ArrayList<>();
            values.forEach((k, v) -> {
                if (res.configurationKeys() == null || res.configurationKeys().contains(k)) {
                    // TOPIC_CONFIG (1), STATIC_BROKER_CONFIG (4), GROUP_CONFIG (8), DEFAULT_CONFIG (5)
                    byte source = !overrides.containsKey(k) ? (byte) 5
                            : (byte) (res.resourceType() == 2 ? 1 : res.resourceType() == 32 ? 8 : 4);
                    // Secrets are never answered: sensitive keys without a value, credentials in URIs masked.
                    boolean sensitive = SensitiveConfigs.sensitiveKey(k);
                    String shown = sensitive ? null : SensitiveConfigs.masked(v);
                    configs.add(new DescribeConfigsResponseData.DescribeConfigsResourceResult().setName(k)
                            .setValue(shown).setReadOnly(res.resourceType() != 2 && res.resourceType() != 32)
                            .setConfigSource(source)
                            .setIsSensitive(sensitive || !java.util.Objects.equals(shown, v)));
                }
            });
            out.results().add(r.setConfigs(configs));
        }
        return new DescribeConfigsResponse(out);
    }
}
