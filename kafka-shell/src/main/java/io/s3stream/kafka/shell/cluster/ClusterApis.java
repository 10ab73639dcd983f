package io.s3stream.kafka.shell.cluster;

import io.s3stream.kafka.shell.acl.Authorization;
import io.s3stream.kafka.shell.config.ShellConfig;
import io.s3stream.kafka.shell.network.ApiFamily;
import io.s3stream.kafka.shell.topic.TopicRegistry;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.DescribeClusterResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.DescribeClusterRequest;
import org.apache.kafka.common.requests.DescribeClusterResponse;
import org.apache.kafka.common.requests.MetadataRequest;
import org.apache.kafka.common.requests.MetadataResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * Metadata and DescribeCluster: the registered shells, which of them are live (by cluster lease), the controller, and
 * each topic's partitions with their leaders; topics named in Metadata are created on the way when auto-creation is on.
 */
public final class ClusterApis implements ApiFamily {
    private final Authorization auth;
    private final ShellConfig config;
    private final TopicRegistry topics;
    /** This shell's advertised endpoints, listener name → host:port, in the order of {@code listeners}. */
    private volatile java.util.SequencedMap<String, String> endpoints = new java.util.LinkedHashMap<>();

    public ClusterApis(ShellConfig config, TopicRegistry topics, Authorization auth) {
        this.config = config;
        this.topics = topics;
        this.auth = auth;
    }

    /** This shell's advertised endpoints (listener name → host:port, ports resolved once bound). */
    public void endpoints(java.util.SequencedMap<String, String> advertised) {
        this.endpoints = advertised;
    }

    @Override
    public Map<ApiKeys, short[]> versions() {
        return ApiFamily.versions(ApiKeys.METADATA, 0, 12, ApiKeys.DESCRIBE_CLUSTER, 0, 1);
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext ctx, AbstractRequest request) {
        return switch (ctx.header.apiKey()) {
            case METADATA -> metadata(ctx, (MetadataRequest) request, ctx.header.apiVersion());
            case DESCRIBE_CLUSTER -> ApiFamily.done(describeCluster(ctx,
                    ((DescribeClusterRequest) request).data().includeClusterAuthorizedOperations()));
            default -> throw new IllegalArgumentException(ctx.header.apiKey() + " is not a cluster API");
        };
    }

    /** Registered shells (this one always included) on the first listener: node id → {host, port}. */
    public SortedMap<Integer, String[]> brokers() {
        return brokers(config.listenerName());
    }

    /**
     * Registered shells (this one always included) as a client of listener {@code listener} reaches them: node id →
     * {host, port}, on a shell's first listener when it has none of that name.
     */
    public SortedMap<Integer, String[]> brokers(String listener) {
        SortedMap<Integer, String[]> out = new TreeMap<>();
        topics.brokersOn(listener).forEach((id, hp) -> out.put(id, hostAndPort(hp)));
        java.util.SequencedMap<String, String> own = endpoints;
        String mine = own.getOrDefault(listener, own.isEmpty() ? null : own.firstEntry().getValue());
        out.put(config.nodeId(), mine != null ? hostAndPort(mine)
                : new String[] {config.advertisedHost(), Integer.toString(config.advertisedPort())});
        return out;
    }

    private static String[] hostAndPort(String hp) {
        int colon = hp.lastIndexOf(':');
        return new String[] {hp.substring(0, colon), hp.substring(colon + 1)};
    }

    private volatile Supplier<SortedMap<Integer, Long>> liveShells = TreeMap::new;

    /** Where the live shells (by cluster lease) come from; until set, every registered shell counts as live. */
    public void liveShells(Supplier<SortedMap<Integer, Long>> source) {
        this.liveShells = source;
    }

    /**
     * The lowest registered node id whose lease is live, named controller in Metadata and DescribeCluster (it also runs
     * the self-balancer).
     */
    private int controller() {
        return liveIds().first();
    }

    /** Registered shells whose lease is live as seen here (every registered one until the first lease round). */
    public SortedSet<Integer> liveIds() {
        SortedMap<Integer, String[]> all = brokers();
        SortedMap<Integer, Long> live = liveShells.get();
        SortedSet<Integer> ids = new TreeSet<>();
        for (Integer id : all.keySet()) {
            if (live.isEmpty() || live.containsKey(id)) {
                ids.add(id);
            }
        }
        return ids.isEmpty() ? new TreeSet<>(all.keySet()) : ids;
    }

    private AbstractResponse describeCluster(RequestContext ctx, boolean withOperations) {
        DescribeClusterResponseData.DescribeClusterBrokerCollection brokers = new DescribeClusterResponseData.DescribeClusterBrokerCollection();
        brokers(ctx.listenerName()).forEach((id, hp) -> brokers.add(new DescribeClusterResponseData.DescribeClusterBroker().setBrokerId(id)
                .setHost(hp[0]).setPort(Integer.parseInt(hp[1]))));
        DescribeClusterResponseData out = new DescribeClusterResponseData().setClusterId(config.clusterId())
                .setControllerId(controller()).setBrokers(brokers);
        if (withOperations) {
            out.setClusterAuthorizedOperations(auth.operations(ctx, ResourceType.CLUSTER, Authorization.CLUSTER_NAME));
        }
        return new DescribeClusterResponse(out);
    }

    /**
     * Metadata, with Kafka's authorization: a listing of every topic shows those the principal may DESCRIBE; a topic
     * asked for by name that it may not DESCRIBE, or not CREATE when auto-creation would create it, answers
     * TOPIC_AUTHORIZATION_FAILED (a topic asked for by id: without its name).
     */
    private CompletableFuture<AbstractResponse> metadata(RequestContext ctx, MetadataRequest request, short version) {
        MetadataRequestData data = request.data();
        boolean all = data.topics() == null || (version == 0 && data.topics().isEmpty());
        boolean withOperations = version >= 8 && data.includeTopicAuthorizedOperations();
        List<CompletableFuture<MetadataResponseData.MetadataResponseTopic>> futures = new ArrayList<>();
        if (all) {
            for (TopicRegistry.Topic t : topics.all()) {
                if (auth.visible(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name())) {
                    futures.add(CompletableFuture.completedFuture(describeTopic(ctx, t, withOperations)));
                }
            }
        } else {
            boolean autoCreate = config.autoCreateTopics() && (version < 4 || data.allowAutoTopicCreation());
            for (MetadataRequestData.MetadataRequestTopic rt : data.topics()) {
                // A topic asked for by id has a null name, or the empty one (the field's default: the Java client's
                // consumer asks so for the topics of a KIP-848 assignment it has no name for).
                boolean byId = (rt.name() == null || rt.name().isEmpty()) && rt.topicId() != null
                        && !Uuid.ZERO_UUID.equals(rt.topicId());
                TopicRegistry.Topic t = byId ? topics.byId(rt.topicId()) : rt.name() != null ? topics.get(rt.name())
                        : null;
                String name = t != null ? t.name() : byId ? null : rt.name();
                if (name != null && !auth.allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name)) {
                    futures.add(CompletableFuture.completedFuture(new MetadataResponseData.MetadataResponseTopic()
                            .setName(rt.name()).setTopicId(rt.topicId() == null ? Uuid.ZERO_UUID : rt.topicId())
                            .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code())));
                } else if (t != null) {
                    futures.add(CompletableFuture.completedFuture(describeTopic(ctx, t, withOperations)));
                } else if (name != null && autoCreate
                        && !auth.visible(ctx, AclOperation.CREATE, ResourceType.CLUSTER, Authorization.CLUSTER_NAME)
                        && !auth.allowed(ctx, AclOperation.CREATE, ResourceType.TOPIC, rt.name())) {
                    futures.add(CompletableFuture.completedFuture(new MetadataResponseData.MetadataResponseTopic()
                            .setName(rt.name()).setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code())));
                } else if (name != null && autoCreate) {
                    futures.add(topics.create(name, config.numPartitions(), Map.of())
                            .handle((created, e) -> {
                                TopicRegistry.Topic now = topics.get(name);
                                if (now != null) {
                                    return describeTopic(ctx, now, withOperations);
                                }
                                Errors err = Errors.forException(ApiFamily.cause(e));
                                return new MetadataResponseData.MetadataResponseTopic().setName(name)
                                        .setErrorCode(err == Errors.TOPIC_ALREADY_EXISTS ? Errors.LEADER_NOT_AVAILABLE.code() : err.code());
                            }));
                } else {
                    Errors unknown = byId ? Errors.UNKNOWN_TOPIC_ID : Errors.UNKNOWN_TOPIC_OR_PARTITION;
                    futures.add(CompletableFuture.completedFuture(new MetadataResponseData.MetadataResponseTopic()
                            .setName(rt.name()).setTopicId(rt.topicId() == null ? Uuid.ZERO_UUID : rt.topicId())
                            .setErrorCode(unknown.code())));
                }
            }
        }
        return CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).thenApply(v -> {
            MetadataResponseData.MetadataResponseBrokerCollection brokers = new MetadataResponseData.MetadataResponseBrokerCollection();
            brokers(ctx.listenerName()).forEach((id, hp) -> brokers.add(new MetadataResponseData.MetadataResponseBroker().setNodeId(id)
                    .setHost(hp[0]).setPort(Integer.parseInt(hp[1]))));
            MetadataResponseData.MetadataResponseTopicCollection list = new MetadataResponseData.MetadataResponseTopicCollection();
            for (var f : futures) {
                list.add(f.join());
            }
            MetadataResponseData out = new MetadataResponseData().setBrokers(brokers).setClusterId(config.clusterId())
                    .setControllerId(controller()).setTopics(list);
            if (version >= 8 && version <= 10 && data.includeClusterAuthorizedOperations()) {
                out.setClusterAuthorizedOperations(auth.operations(ctx, ResourceType.CLUSTER, Authorization.CLUSTER_NAME));
            }
            return new MetadataResponse(out, version);
        });
    }

    private MetadataResponseData.MetadataResponseTopic describeTopic(RequestContext ctx, TopicRegistry.Topic t,
                                                                    boolean withOperations) {
        List<MetadataResponseData.MetadataResponsePartition> partitions = new ArrayList<>();
        for (TopicRegistry.Slot s : t.slots()) {
            int leader = s.leader();
            MetadataResponseData.MetadataResponsePartition mp = new MetadataResponseData.MetadataResponsePartition()
                    .setPartitionIndex(s.index()).setOfflineReplicas(List.of());
            if (leader < 0) {
                mp.setErrorCode(Errors.LEADER_NOT_AVAILABLE.code()).setLeaderId(-1).setLeaderEpoch(-1)
                        .setReplicaNodes(List.of()).setIsrNodes(List.of());
            } else {
                mp.setLeaderId(leader).setLeaderEpoch((int) s.epoch()).setReplicaNodes(List.of(leader)).setIsrNodes(List.of(leader));
            }
            partitions.add(mp);
        }
        MetadataResponseData.MetadataResponseTopic out = new MetadataResponseData.MetadataResponseTopic()
                .setName(t.name()).setTopicId(t.id()).setIsInternal(false).setPartitions(partitions);
        if (withOperations) {
            out.setTopicAuthorizedOperations(auth.operations(ctx, ResourceType.TOPIC, t.name()));
        }
        return out;
    }
}
