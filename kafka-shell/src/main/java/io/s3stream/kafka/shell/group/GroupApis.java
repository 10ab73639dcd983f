package io.s3stream.kafka.shell.group;

import io.s3stream.kafka.shell.acl.Authorization;
import io.s3stream.kafka.shell.network.ApiFamily;
import io.s3stream.kafka.shell.topic.TopicRegistry;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.ConsumerGroupDescribeResponseData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.message.DeleteGroupsResponseData;
import org.apache.kafka.common.message.DescribeGroupsResponseData;
import org.apache.kafka.common.message.FindCoordinatorResponseData;
import org.apache.kafka.common.message.HeartbeatResponseData;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.LeaveGroupRequestData;
import org.apache.kafka.common.message.LeaveGroupResponseData;
import org.apache.kafka.common.message.ListGroupsRequestData;
import org.apache.kafka.common.message.ListGroupsResponseData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetCommitResponseData;
import org.apache.kafka.common.message.OffsetDeleteRequestData;
import org.apache.kafka.common.message.OffsetDeleteResponseData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.OffsetFetchResponseData;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ConsumerGroupDescribeRequest;
import org.apache.kafka.common.requests.ConsumerGroupDescribeResponse;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatRequest;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatResponse;
import org.apache.kafka.common.requests.DeleteGroupsRequest;
import org.apache.kafka.common.requests.DeleteGroupsResponse;
import org.apache.kafka.common.requests.DescribeGroupsRequest;
import org.apache.kafka.common.requests.DescribeGroupsResponse;
import org.apache.kafka.common.requests.FindCoordinatorRequest;
import org.apache.kafka.common.requests.FindCoordinatorResponse;
import org.apache.kafka.common.requests.HeartbeatRequest;
import org.apache.kafka.common.requests.HeartbeatResponse;
import org.apache.kafka.common.requests.JoinGroupRequest;
import org.apache.kafka.common.requests.JoinGroupResponse;
import org.apache.kafka.common.requests.LeaveGroupRequest;
import org.apache.kafka.common.requests.LeaveGroupResponse;
import org.apache.kafka.common.requests.ListGroupsRequest;
import org.apache.kafka.common.requests.ListGroupsResponse;
import org.apache.kafka.common.requests.OffsetCommitRequest;
import org.apache.kafka.common.requests.OffsetCommitResponse;
import org.apache.kafka.common.requests.OffsetDeleteRequest;
import org.apache.kafka.common.requests.OffsetDeleteResponse;
import org.apache.kafka.common.requests.OffsetFetchRequest;
import org.apache.kafka.common.requests.OffsetFetchResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.SyncGroupRequest;
import org.apache.kafka.common.requests.SyncGroupResponse;
import org.apache.kafka.common.requests.TxnOffsetCommitRequest;
import org.apache.kafka.common.requests.TxnOffsetCommitResponse;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The consumer-group APIs (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
 * ListGroups, DescribeGroups, DeleteGroups, and KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe) over the
 * {@link GroupCoordinator}, with coordinators spread over the live
 * shells by group id: a request for a group another shell coordinates gets NOT_COORDINATOR.
 */
public final class GroupApis implements ApiFamily {
    private final Authorization auth;
    private final int nodeId;
    private final TopicRegistry topics;
    private final GroupCoordinator groups;
    private final java.util.function.Function<String, SortedMap<Integer, String[]>> brokers;
    private final Supplier<SortedSet<Integer>> liveIds;

    /**
     * @param brokers registered shells by node id, as host and port, on the listener named
     * @param liveIds the registered shells whose lease is live, as this shell sees them
     */
    public GroupApis(int nodeId, TopicRegistry topics, GroupCoordinator groups,
                     java.util.function.Function<String, SortedMap<Integer, String[]>> brokers,
              Supplier<SortedSet<Integer>> liveIds, Authorization auth) {
        this.nodeId = nodeId;
        this.topics = topics;
        this.groups = groups;
        this.brokers = brokers;
        this.liveIds = liveIds;
        this.auth = auth;
        groups.topics(topicsView());
    }

    @Override
    public Map<ApiKeys, short[]> versions() {
        return ApiFamily.versions(ApiKeys.FIND_COORDINATOR, 0, 5, ApiKeys.JOIN_GROUP, 0, 9, ApiKeys.SYNC_GROUP, 0, 5,
                ApiKeys.HEARTBEAT, 0, 4, ApiKeys.LEAVE_GROUP, 0, 5, ApiKeys.OFFSET_COMMIT, 2, 9, ApiKeys.OFFSET_FETCH, 1, 9,
                ApiKeys.LIST_GROUPS, 0, 5, ApiKeys.DESCRIBE_GROUPS, 0, 5, ApiKeys.DELETE_GROUPS, 0, 2,
                // v5 belongs to transaction protocol v2 (KIP-890), which this shell does not advertise.
                ApiKeys.TXN_OFFSET_COMMIT, 0, 4, ApiKeys.OFFSET_DELETE, 0, 0,
                ApiKeys.CONSUMER_GROUP_HEARTBEAT, 0, 1, ApiKeys.CONSUMER_GROUP_DESCRIBE, 0, 1);
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext ctx, AbstractRequest request) {
        ApiKeys key = ctx.header.apiKey();
        short version = ctx.header.apiVersion();
        String clientId = ctx.clientId();
        String clientHost = ctx.clientAddress == null ? "" : ctx.clientAddress.toString();
        return switch (key) {
            case FIND_COORDINATOR -> ApiFamily.done(findCoordinator(ctx, (FindCoordinatorRequest) request, version));
            case JOIN_GROUP -> !coordinates(((JoinGroupRequest) request).data().groupId()) ? notCoordinator(request)
                    : groups.join(((JoinGroupRequest) request).data(), version, clientId, clientHost)
                    .thenApply(d -> joinResponse(d, version));
            case SYNC_GROUP -> !coordinates(((SyncGroupRequest) request).data().groupId()) ? notCoordinator(request)
                    : groups.sync(((SyncGroupRequest) request).data()).thenApply(SyncGroupResponse::new);
            case HEARTBEAT -> {
                var d = ((HeartbeatRequest) request).data();
                yield !coordinates(d.groupId()) ? notCoordinator(request)
                        : groups.heartbeat(d.groupId(), d.memberId(), d.generationId())
                        .thenApply(e -> new HeartbeatResponse(new HeartbeatResponseData().setErrorCode(e.code())));
            }
            case LEAVE_GROUP -> !coordinates(((LeaveGroupRequest) request).data().groupId()) ? notCoordinator(request)
                    : leaveGroup((LeaveGroupRequest) request, version);
            case OFFSET_COMMIT -> !coordinates(((OffsetCommitRequest) request).data().groupId()) ? notCoordinator(request)
                    : offsetCommit(ctx, (OffsetCommitRequest) request);
            case OFFSET_FETCH -> offsetFetch(ctx, (OffsetFetchRequest) request, version);
            case OFFSET_DELETE -> !coordinates(((OffsetDeleteRequest) request).data().groupId()) ? notCoordinator(request)
                    : offsetDelete(ctx, (OffsetDeleteRequest) request);
            case TXN_OFFSET_COMMIT -> !coordinates(((TxnOffsetCommitRequest) request).data().groupId())
                    ? notCoordinator(request) : txnOffsetCommit(ctx, (TxnOffsetCommitRequest) request);
            case CONSUMER_GROUP_HEARTBEAT -> {
                var d = ((ConsumerGroupHeartbeatRequest) request).data();
                yield !coordinates(d.groupId()) ? notCoordinator(request)
                        : consumerGroupHeartbeat(ctx, d, clientId, clientHost);
            }
            case CONSUMER_GROUP_DESCRIBE -> consumerGroupDescribe(ctx, (ConsumerGroupDescribeRequest) request);
            case LIST_GROUPS -> listGroups(ctx, ((ListGroupsRequest) request).data());
            case DESCRIBE_GROUPS -> describeGroups(ctx, (DescribeGroupsRequest) request);
            case DELETE_GROUPS -> deleteGroups(ctx, (DeleteGroupsRequest) request);
            default -> throw new IllegalArgumentException(key + " is not a group API");
        };
    }

    /**
     * The coordinator of group {@code groupId}: of the live shells, the one that {@link #rendezvous} picks, so groups
     * spread over shells as Kafka spreads them over the partitions of {@code __consumer_offsets}, and a shell that
     * dies or joins moves only its own share of groups. Group state is soft (members rejoin a new coordinator) and
     * committed offsets live in the shared key-value space, so a new coordinator answers them at once.
     */
    int coordinatorOf(String groupId) {
        return rendezvous(groupId, liveIds.get());
    }

    /** Whether this shell coordinates {@code groupId} now; requests for a group it does not get NOT_COORDINATOR. */
    public boolean coordinates(String groupId) {
        return coordinatorOf(groupId) == nodeId;
    }

    /**
     * Rendezvous (highest random weight) hashing: the id scoring highest for {@code key}. Deterministic across JVMs
     * ({@link String#hashCode} is specified), and removing or adding an id moves only the keys that score highest on it.
     */
    public static int rendezvous(String key, java.util.Collection<Integer> ids) {
        long h = mix64(key.hashCode() * 0x9E3779B97F4A7C15L);
        int best = -1;
        long bestScore = 0;
        for (int id : ids) {
            long score = mix64(h ^ (id * 0xD6E8FEB86659FD93L));
            if (best < 0 || score > bestScore || score == bestScore && id < best) {
                best = id;
                bestScore = score;
            }
        }
        return best;
    }

    /** SplitMix64's finalizer: every input bit affects every output bit. */
    private static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static CompletableFuture<AbstractResponse> notCoordinator(AbstractRequest request) {
        return ApiFamily.done(request.getErrorResponse(0, Errors.NOT_COORDINATOR.exception()));
    }

    private CompletableFuture<AbstractResponse> deleteGroups(RequestContext ctx, DeleteGroupsRequest request) {
        List<String> ids = request.data().groupsNames();
        List<CompletableFuture<Errors>> futures = new ArrayList<>();
        ids.forEach(g -> futures.add(
                !auth.allowed(ctx, AclOperation.DELETE, ResourceType.GROUP, g)
                        ? CompletableFuture.completedFuture(Errors.GROUP_AUTHORIZATION_FAILED)
                        : coordinates(g) ? groups.delete(g) : CompletableFuture.completedFuture(Errors.NOT_COORDINATOR)));
        return CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).thenApply(v -> {
            DeleteGroupsResponseData.DeletableGroupResultCollection results = new DeleteGroupsResponseData.DeletableGroupResultCollection();
            for (int i = 0; i < ids.size(); i++) {
                results.add(new DeleteGroupsResponseData.DeletableGroupResult().setGroupId(ids.get(i))
                        .setErrorCode(futures.get(i).join().code()));
            }
            return new DeleteGroupsResponse(new DeleteGroupsResponseData().setResults(results));
        });
    }

    private static final byte GROUP_KEY = 0;
    private static final byte TRANSACTION_KEY = 1;

    /**
     * Group and transaction coordinators are both placed by {@link #coordinatorOf}; other kinds (share groups) are not
     * available here.
     */
    private static boolean coordinated(byte keyType) {
        return keyType == GROUP_KEY || keyType == TRANSACTION_KEY;
    }

    /**
     * Who may not describe the group (DESCRIBE on GROUP) or the transactional id (DESCRIBE on TRANSACTIONAL_ID) is
     * not told its coordinator, as in Kafka.
     */
    private Errors coordinatorDenied(RequestContext ctx, byte keyType, String key) {
        if (keyType == GROUP_KEY && !auth.allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key)) {
            return Errors.GROUP_AUTHORIZATION_FAILED;
        }
        if (keyType == TRANSACTION_KEY && !auth.allowed(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key)) {
            return Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
        }
        return Errors.NONE;
    }

    private AbstractResponse findCoordinator(RequestContext ctx, FindCoordinatorRequest request, short version) {
        var d = request.data();
        FindCoordinatorResponseData out = new FindCoordinatorResponseData();
        if (version < 4) {
            Errors denied = coordinatorDenied(ctx, d.keyType(), d.key());
            if (denied != Errors.NONE) {
                return new FindCoordinatorResponse(out.setErrorCode(denied.code()).setErrorMessage(denied.message())
                        .setNodeId(-1).setHost("").setPort(-1));
            }
            if (!coordinated(d.keyType())) {
                return new FindCoordinatorResponse(out.setErrorCode(Errors.COORDINATOR_NOT_AVAILABLE.code())
                        .setErrorMessage("kafka-shell has group and transaction coordinators only").setNodeId(-1)
                        .setHost("").setPort(-1));
            }
            int coordinator = coordinatorOf(d.key());
            String[] hp = brokers.apply(ctx.listenerName()).get(coordinator);
            return new FindCoordinatorResponse(out.setNodeId(coordinator).setHost(hp[0]).setPort(Integer.parseInt(hp[1])));
        }
        for (String key : d.coordinatorKeys()) {
            FindCoordinatorResponseData.Coordinator c = new FindCoordinatorResponseData.Coordinator().setKey(key);
            Errors denied = coordinatorDenied(ctx, d.keyType(), key);
            if (denied != Errors.NONE) {
                c.setErrorCode(denied.code()).setErrorMessage(denied.message()).setNodeId(-1).setHost("").setPort(-1);
            } else if (!coordinated(d.keyType())) {
                c.setErrorCode(Errors.COORDINATOR_NOT_AVAILABLE.code())
                        .setErrorMessage("kafka-shell has group and transaction coordinators only")
                        .setNodeId(-1).setHost("").setPort(-1);
            } else {
                int coordinator = coordinatorOf(key);
                String[] hp = brokers.apply(ctx.listenerName()).get(coordinator);
                c.setNodeId(coordinator).setHost(hp[0]).setPort(Integer.parseInt(hp[1]));
            }
            out.coordinators().add(c);
        }
        return new FindCoordinatorResponse(out);
    }

    private static AbstractResponse joinResponse(JoinGroupResponseData d, short version) {
        if (version < 7 && d.protocolName() == null) {
            d.setProtocolName("");
        }
        return new JoinGroupResponse(d, version);
    }

    private CompletableFuture<AbstractResponse> leaveGroup(LeaveGroupRequest request, short version) {
        LeaveGroupRequestData d = request.data();
        List<String> ids = new ArrayList<>();
        if (version < 3) {
            ids.add(d.memberId());
        } else {
            d.members().forEach(m -> ids.add(m.memberId()));
        }
        return groups.leave(d.groupId(), ids).thenApply(errors -> {
            List<LeaveGroupResponseData.MemberResponse> members = new ArrayList<>();
            if (version < 3) {
                members.add(new LeaveGroupResponseData.MemberResponse().setMemberId(d.memberId())
                        .setErrorCode(errors.get(d.memberId()).code()));
            } else {
                for (var m : d.members()) {
                    members.add(new LeaveGroupResponseData.MemberResponse().setMemberId(m.memberId())
                            .setGroupInstanceId(m.groupInstanceId()).setErrorCode(errors.get(m.memberId()).code()));
                }
            }
            return new LeaveGroupResponse(members, Errors.NONE, 0, version);
        });
    }

    private CompletableFuture<AbstractResponse> offsetCommit(RequestContext ctx, OffsetCommitRequest request) {
        OffsetCommitRequestData d = request.data();
        return groups.validateCommit(d.groupId(), d.memberId(), d.generationIdOrMemberEpoch()).thenCompose(check -> {
            OffsetCommitResponseData out = new OffsetCommitResponseData();
            Map<TopicPartition, GroupCoordinator.Committed> commits = new HashMap<>();
            for (OffsetCommitRequestData.OffsetCommitRequestTopic t : d.topics()) {
                OffsetCommitResponseData.OffsetCommitResponseTopic rt = new OffsetCommitResponseData.OffsetCommitResponseTopic().setName(t.name());
                TopicRegistry.Topic topic = topics.get(t.name());
                boolean allowed = auth.allowed(ctx, AclOperation.READ, ResourceType.TOPIC, t.name());
                for (OffsetCommitRequestData.OffsetCommitRequestPartition p : t.partitions()) {
                    Errors e = allowed ? check : Errors.TOPIC_AUTHORIZATION_FAILED;
                    if (e == Errors.NONE && (topic == null || topic.slot(p.partitionIndex()) == null)) {
                        e = Errors.UNKNOWN_TOPIC_OR_PARTITION;
                    }
                    if (e == Errors.NONE) {
                        commits.put(new TopicPartition(t.name(), p.partitionIndex()),
                                new GroupCoordinator.Committed(p.committedOffset(), p.committedLeaderEpoch(), p.committedMetadata()));
                    }
                    rt.partitions().add(new OffsetCommitResponseData.OffsetCommitResponsePartition()
                            .setPartitionIndex(p.partitionIndex()).setErrorCode(e.code()));
                }
                out.topics().add(rt);
            }
            return groups.commit(d.groupId(), commits).handle((v, error) -> {
                if (error != null && !fenced(error)) {
                    throw error instanceof java.util.concurrent.CompletionException c ? c
                            : new java.util.concurrent.CompletionException(error);
                }
                if (error != null) {
                    // This shell was fenced (a survivor took over its WAL, and with it the group): nothing was
                    // written; the client finds the new coordinator and commits there.
                    out.topics().forEach(t -> t.partitions().forEach(p -> {
                        if (p.errorCode() == Errors.NONE.code()) {
                            p.setErrorCode(Errors.NOT_COORDINATOR.code());
                        }
                    }));
                }
                return (AbstractResponse) new OffsetCommitResponse(out);
            });
        });
    }

    private static boolean fenced(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof io.s3stream.NodeFencedException) {
                return true;
            }
        }
        return false;
    }

    /**
     * Offsets committed inside a transaction: staged ({@link TxnOffsets}) until the transaction coordinator ends the
     * transaction. A request with a generation (v3+, a consumer-group member) is checked like OffsetCommit; one
     * without is taken as Kafka takes it.
     */
    private CompletableFuture<AbstractResponse> txnOffsetCommit(RequestContext ctx, TxnOffsetCommitRequest request) {
        TxnOffsetCommitRequestData d = request.data();
        CompletableFuture<Errors> check = d.generationId() < 0 ? CompletableFuture.completedFuture(Errors.NONE)
                : groups.validateCommit(d.groupId(), d.memberId(), d.generationId());
        return check.thenCompose(error -> {
            Map<TopicPartition, Errors> results = new HashMap<>();
            Map<TopicPartition, GroupCoordinator.Committed> staged = new HashMap<>();
            for (TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic t : d.topics()) {
                TopicRegistry.Topic topic = topics.get(t.name());
                boolean allowed = auth.allowed(ctx, AclOperation.READ, ResourceType.TOPIC, t.name());
                for (TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition p : t.partitions()) {
                    TopicPartition tp = new TopicPartition(t.name(), p.partitionIndex());
                    Errors e = allowed ? error : Errors.TOPIC_AUTHORIZATION_FAILED;
                    if (e == Errors.NONE && (topic == null || topic.slot(p.partitionIndex()) == null)) {
                        e = Errors.UNKNOWN_TOPIC_OR_PARTITION;
                    }
                    if (e == Errors.NONE) {
                        staged.put(tp, new GroupCoordinator.Committed(p.committedOffset(), p.committedLeaderEpoch(),
                                p.committedMetadata()));
                    }
                    results.put(tp, e);
                }
            }
            return TxnOffsets.stage(groups.kv(), d.groupId(), d.producerId(), staged)
                    .thenApply(v -> (AbstractResponse) new TxnOffsetCommitResponse(0, results));
        });
    }

    private CompletableFuture<AbstractResponse> offsetDelete(RequestContext ctx, OffsetDeleteRequest request) {
        OffsetDeleteRequestData d = request.data();
        List<TopicPartition> partitions = new ArrayList<>();
        Set<String> denied = new java.util.HashSet<>();
        d.topics().forEach(t -> {
            if (!auth.allowed(ctx, AclOperation.READ, ResourceType.TOPIC, t.name())) {
                denied.add(t.name()); // answered TOPIC_AUTHORIZATION_FAILED, its offsets kept
            } else {
                t.partitions().forEach(p -> partitions.add(new TopicPartition(t.name(), p.partitionIndex())));
            }
        });
        return groups.deleteOffsets(d.groupId(), partitions).thenApply(result -> {
            OffsetDeleteResponseData out = new OffsetDeleteResponseData().setErrorCode(result.groupError().code());
            if (result.groupError() == Errors.NONE) {
                for (OffsetDeleteRequestData.OffsetDeleteRequestTopic t : d.topics()) {
                    OffsetDeleteResponseData.OffsetDeleteResponseTopic rt =
                            new OffsetDeleteResponseData.OffsetDeleteResponseTopic().setName(t.name());
                    t.partitions().forEach(p -> rt.partitions().add(new OffsetDeleteResponseData.OffsetDeleteResponsePartition()
                            .setPartitionIndex(p.partitionIndex())
                            .setErrorCode(denied.contains(t.name()) ? Errors.TOPIC_AUTHORIZATION_FAILED.code()
                                    : result.partitions().get(new TopicPartition(t.name(), p.partitionIndex())).code())));
                    out.topics().add(rt);
                }
            }
            return (AbstractResponse) new OffsetDeleteResponse(out);
        });
    }

    /**
     * OffsetFetch, with Kafka's authorization: a group the principal may not DESCRIBE answers
     * GROUP_AUTHORIZATION_FAILED; a topic asked for that it may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED, and
     * "all topics" leaves such topics out.
     */
    private CompletableFuture<AbstractResponse> offsetFetch(RequestContext ctx, OffsetFetchRequest request, short version) {
        OffsetFetchRequestData d = request.data();
        List<String> groupIds = new ArrayList<>();
        List<Map<String, List<Integer>>> wanted = new ArrayList<>(); // null entry: all topics
        if (version >= 8) {
            for (OffsetFetchRequestData.OffsetFetchRequestGroup g : d.groups()) {
                groupIds.add(g.groupId());
                if (g.topics() == null) {
                    wanted.add(null);
                } else {
                    Map<String, List<Integer>> m = new LinkedHashMap<>();
                    g.topics().forEach(t -> m.put(t.name(), t.partitionIndexes()));
                    wanted.add(m);
                }
            }
        } else {
            groupIds.add(d.groupId());
            if (d.topics() == null) {
                wanted.add(null);
            } else {
                Map<String, List<Integer>> m = new LinkedHashMap<>();
                d.topics().forEach(t -> m.put(t.name(), t.partitionIndexes()));
                wanted.add(m);
            }
        }
        if (version < 8 && !auth.allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, d.groupId())) {
            return ApiFamily.done(request.getErrorResponse(0, Errors.GROUP_AUTHORIZATION_FAILED.exception()));
        }
        if (version < 8 && !coordinates(d.groupId())) {
            return notCoordinator(request);
        }
        Set<String> deniedGroups = new java.util.HashSet<>();
        groupIds.forEach(g -> {
            if (!auth.allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g)) {
                deniedGroups.add(g);
            }
        });
        Map<String, Boolean> topicAllowed = new HashMap<>();
        java.util.function.Predicate<String> describable = topic -> topicAllowed.computeIfAbsent(topic,
                t -> auth.visible(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t));
        List<CompletableFuture<Map<TopicPartition, GroupCoordinator.Committed>>> futures = new ArrayList<>();
        groupIds.forEach(g -> futures.add(coordinates(g) && !deniedGroups.contains(g) ? groups.committed(g) : null));
        // KIP-447: a consumer that asks for stable offsets is told to retry while a transaction has offsets staged.
        boolean requireStable = version >= 7 && d.requireStable();
        List<CompletableFuture<Set<TopicPartition>>> staged = new ArrayList<>();
        groupIds.forEach(g -> staged.add(requireStable && coordinates(g) ? TxnOffsets.pending(groups.kv(), g)
                : CompletableFuture.completedFuture(Set.of())));
        List<CompletableFuture<?>> waits = new ArrayList<>(staged);
        futures.stream().filter(java.util.Objects::nonNull).forEach(waits::add);
        return CompletableFuture.allOf(waits.toArray(CompletableFuture[]::new)).thenApply(v -> {
            OffsetFetchResponseData out = new OffsetFetchResponseData();
            for (int i = 0; i < groupIds.size(); i++) {
                if (futures.get(i) == null) {
                    Errors e = deniedGroups.contains(groupIds.get(i)) ? Errors.GROUP_AUTHORIZATION_FAILED
                            : Errors.NOT_COORDINATOR;
                    out.groups().add(new OffsetFetchResponseData.OffsetFetchResponseGroup().setGroupId(groupIds.get(i))
                            .setErrorCode(e.code()));
                    continue;
                }
                Map<TopicPartition, GroupCoordinator.Committed> committed = futures.get(i).join();
                Set<TopicPartition> unstable = staged.get(i).join();
                Map<String, List<Integer>> want = wanted.get(i);
                if (want == null) {
                    want = new LinkedHashMap<>();
                    for (TopicPartition tp : committed.keySet()) {
                        if (describable.test(tp.topic())) {
                            want.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp.partition());
                        }
                    }
                }
                List<OffsetFetchResponseData.OffsetFetchResponseTopics> groupTopics = new ArrayList<>();
                for (Map.Entry<String, List<Integer>> e : want.entrySet()) {
                    OffsetFetchResponseData.OffsetFetchResponseTopics rt = new OffsetFetchResponseData.OffsetFetchResponseTopics().setName(e.getKey());
                    boolean allowed = describable.test(e.getKey());
                    for (int p : e.getValue()) {
                        TopicPartition tp = new TopicPartition(e.getKey(), p);
                        GroupCoordinator.Committed c = allowed ? committed.get(tp) : null;
                        rt.partitions().add(new OffsetFetchResponseData.OffsetFetchResponsePartitions().setPartitionIndex(p)
                                .setErrorCode(!allowed ? Errors.TOPIC_AUTHORIZATION_FAILED.code()
                                        : unstable.contains(tp) ? Errors.UNSTABLE_OFFSET_COMMIT.code() : Errors.NONE.code())
                                .setCommittedOffset(c == null ? -1 : c.offset())
                                .setCommittedLeaderEpoch(c == null ? -1 : c.leaderEpoch())
                                .setMetadata(c == null ? "" : c.metadata()));
                    }
                    groupTopics.add(rt);
                }
                if (version >= 8) {
                    out.groups().add(new OffsetFetchResponseData.OffsetFetchResponseGroup().setGroupId(groupIds.get(i)).setTopics(groupTopics));
                } else {
                    for (var gt : groupTopics) {
                        OffsetFetchResponseData.OffsetFetchResponseTopic t = new OffsetFetchResponseData.OffsetFetchResponseTopic().setName(gt.name());
                        for (var p : gt.partitions()) {
                            t.partitions().add(new OffsetFetchResponseData.OffsetFetchResponsePartition().setPartitionIndex(p.partitionIndex())
                                    .setErrorCode(p.errorCode())
                                    .setCommittedOffset(p.committedOffset()).setCommittedLeaderEpoch(p.committedLeaderEpoch())
                                    .setMetadata(p.metadata()));
                        }
                        out.topics().add(t);
                    }
                }
            }
            return new OffsetFetchResponse(out, version);
        });
    }

    /** ListGroups, with the state (v4+) and type (v5+) filters compared case-insensitively, as Kafka does. */
    private CompletableFuture<AbstractResponse> listGroups(RequestContext ctx, ListGroupsRequestData request) {
        // As Kafka: DESCRIBE on the cluster lists every group, else those the principal may DESCRIBE.
        boolean everyGroup = auth.visible(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, Authorization.CLUSTER_NAME);
        Set<String> states = new java.util.HashSet<>();
        request.statesFilter().forEach(st -> states.add(st.toLowerCase(java.util.Locale.ROOT)));
        Set<String> types = new java.util.HashSet<>();
        request.typesFilter().forEach(t -> types.add(t.toLowerCase(java.util.Locale.ROOT)));
        // Groups known only by their committed offsets (assign and commit, or members gone since this shell started)
        // are listed too, as Kafka lists them: Empty, no protocol type.
        CompletableFuture<Set<String>> withOffsets = groups.kv().list(OffsetKeys.OFFSET_PREFIX).thenApply(stored ->
                stored.keySet().stream().map(OffsetKeys::groupOf).collect(java.util.stream.Collectors.toSet()));
        return withOffsets.thenCompose(offsetGroups -> groups.snapshot().thenCombine(groups.consumerGroupStates(),
                (all, consumerGroups) -> {
            ListGroupsResponseData out = new ListGroupsResponseData();
            java.util.function.BiConsumer<ListGroupsResponseData.ListedGroup, String> add = (g, type) -> {
                if ((states.isEmpty() || states.contains(g.groupState().toLowerCase(java.util.Locale.ROOT)))
                        && (types.isEmpty() || types.contains(type))
                        && (everyGroup || auth.visible(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.groupId()))) {
                    out.groups().add(g.setGroupType(type));
                }
            };
            all.forEach((id, g) -> {
                if (coordinates(id)) { // each shell lists the groups it coordinates
                    add.accept(new ListGroupsResponseData.ListedGroup().setGroupId(id)
                            .setProtocolType(g.protocolType == null ? "" : g.protocolType)
                            .setGroupState(stateName(g.state)), "classic");
                }
            });
            consumerGroups.forEach((id, state) -> {
                if (coordinates(id)) {
                    add.accept(new ListGroupsResponseData.ListedGroup().setGroupId(id).setProtocolType("consumer")
                            .setGroupState(state), "consumer");
                }
            });
            offsetGroups.forEach(id -> {
                if (!all.containsKey(id) && !consumerGroups.containsKey(id) && coordinates(id)) {
                    add.accept(new ListGroupsResponseData.ListedGroup().setGroupId(id).setProtocolType("")
                            .setGroupState("Empty"), "classic");
                }
            });
            return new ListGroupsResponse(out);
        }));
    }

    // ---------------------------------------------------------------- consumer group protocol (KIP-848)

    /** The cluster's topics as a consumer group's subscriptions see them. */
    private ConsumerGroup.Topics topicsView() {
        return new ConsumerGroup.Topics() {
            @Override
            public int partitions(String topic) {
                TopicRegistry.Topic t = topics.get(topic);
                return t == null ? -1 : t.slots().size();
            }

            @Override
            public Set<String> names() {
                return topics.names().names();
            }

            @Override
            public long layoutVersion() {
                return topics.names().version();
            }
        };
    }

    private CompletableFuture<AbstractResponse> consumerGroupHeartbeat(RequestContext ctx,
                                                                       ConsumerGroupHeartbeatRequestData d,
                                                                       String clientId, String clientHost) {
        Set<TopicPartition> owned = null;
        if (d.topicPartitions() != null) {
            owned = new java.util.TreeSet<>(ServerAssignors.ORDER);
            for (ConsumerGroupHeartbeatRequestData.TopicPartitions tps : d.topicPartitions()) {
                TopicRegistry.Topic t = topics.byId(tps.topicId());
                if (t != null) {
                    for (int p : tps.partitions()) {
                        owned.add(new TopicPartition(t.name(), p));
                    }
                }
            }
        }
        Set<TopicPartition> ownedNow = owned;
        // The group's own session timeout and heartbeat interval (kafka-configs --entity-type groups), else the broker's.
        return GroupConfigs.overrides(groups.kv(), d.groupId()).thenCompose(overrides -> {
            Map<String, String> cfg = GroupConfigs.effective(groups.config(), overrides);
            int sessionTimeoutMs = Integer.parseInt(cfg.get(GroupConfigs.SESSION_TIMEOUT));
            int heartbeatMs = Integer.parseInt(cfg.get(GroupConfigs.HEARTBEAT_INTERVAL));
            var hb = new ConsumerGroup.Heartbeat(d.memberId(), d.memberEpoch(), d.instanceId(), d.rackId(),
                    d.rebalanceTimeoutMs(), d.subscribedTopicNames(), d.subscribedTopicRegex(), d.serverAssignor(),
                    ownedNow, clientId, clientHost, sessionTimeoutMs, auth.authorizer() == null ? null
                    : topic -> auth.visible(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic));
            return groups.consumerHeartbeat(d.groupId(), hb, topicsView()).thenApply(r -> heartbeatResponse(r, heartbeatMs));
        });
    }

    private AbstractResponse heartbeatResponse(ConsumerGroup.Reply r, int heartbeatMs) {
        ConsumerGroupHeartbeatResponseData out = new ConsumerGroupHeartbeatResponseData()
                .setErrorCode(r.error().code()).setErrorMessage(r.message()).setMemberId(r.memberId())
                .setMemberEpoch(r.memberEpoch())
                .setHeartbeatIntervalMs(heartbeatMs);
        if (r.assignment() != null) {
            var assignment = new ConsumerGroupHeartbeatResponseData.Assignment();
            byTopic(r.assignment()).forEach((topic, partitions) -> {
                TopicRegistry.Topic t = topics.get(topic);
                if (t != null) {
                    assignment.topicPartitions().add(new ConsumerGroupHeartbeatResponseData.TopicPartitions()
                            .setTopicId(t.id()).setPartitions(partitions));
                }
            });
            out.setAssignment(assignment);
        }
        return new ConsumerGroupHeartbeatResponse(out);
    }

    private static Map<String, List<Integer>> byTopic(Set<TopicPartition> partitions) {
        Map<String, List<Integer>> out = new java.util.TreeMap<>();
        partitions.forEach(tp -> out.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp.partition()));
        out.values().forEach(l -> l.sort(null));
        return out;
    }

    private ConsumerGroupDescribeResponseData.Assignment describedAssignment(Set<TopicPartition> partitions) {
        var a = new ConsumerGroupDescribeResponseData.Assignment();
        byTopic(partitions).forEach((topic, ps) -> {
            TopicRegistry.Topic t = topics.get(topic);
            if (t != null) {
                a.topicPartitions().add(new ConsumerGroupDescribeResponseData.TopicPartitions().setTopicId(t.id())
                        .setTopicName(topic).setPartitions(ps));
            }
        });
        return a;
    }

    private CompletableFuture<AbstractResponse> consumerGroupDescribe(RequestContext ctx,
                                                                      ConsumerGroupDescribeRequest request) {
        List<CompletableFuture<ConsumerGroupDescribeResponseData.DescribedGroup>> described = new ArrayList<>();
        boolean withOperations = request.data().includeAuthorizedOperations();
        for (String id : request.data().groupIds()) {
            if (!auth.allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, id)) {
                described.add(CompletableFuture.completedFuture(new ConsumerGroupDescribeResponseData.DescribedGroup()
                        .setGroupId(id).setErrorCode(Errors.GROUP_AUTHORIZATION_FAILED.code())));
                continue;
            }
            if (!coordinates(id)) {
                described.add(CompletableFuture.completedFuture(new ConsumerGroupDescribeResponseData.DescribedGroup()
                        .setGroupId(id).setErrorCode(Errors.NOT_COORDINATOR.code())));
                continue;
            }
            described.add(groups.readConsumerGroup(id, cg -> {
                var dg = new ConsumerGroupDescribeResponseData.DescribedGroup().setGroupId(id);
                if (cg == null) {
                    return dg.setErrorCode(Errors.GROUP_ID_NOT_FOUND.code())
                            .setErrorMessage("group " + id + " is not a consumer-protocol group");
                }
                dg.setGroupState(cg.state()).setGroupEpoch(cg.groupEpoch).setAssignmentEpoch(cg.assignmentEpoch)
                        .setAssignorName(cg.assignor);
                if (withOperations) {
                    dg.setAuthorizedOperations(auth.operations(ctx, ResourceType.GROUP, id));
                }
                for (ConsumerGroup.Member m : cg.members.values()) {
                    dg.members().add(new ConsumerGroupDescribeResponseData.Member().setMemberId(m.memberId)
                            .setInstanceId(m.instanceId).setRackId(m.rackId).setMemberEpoch(m.epoch)
                            .setClientId(m.clientId == null ? "" : m.clientId)
                            .setClientHost(m.clientHost == null ? "" : m.clientHost)
                            .setSubscribedTopicNames(m.subscribedTopicNames).setSubscribedTopicRegex(m.subscribedTopicRegex)
                            .setAssignment(describedAssignment(m.assigned))
                            .setTargetAssignment(describedAssignment(cg.targetOf(m.memberId)))
                            .setMemberType((byte) (m.classicProtocol == null ? 1 : 0)));
                }
                return dg;
            }));
        }
        return CompletableFuture.allOf(described.toArray(CompletableFuture[]::new)).thenApply(v -> {
            ConsumerGroupDescribeResponseData out = new ConsumerGroupDescribeResponseData();
            described.forEach(f -> out.groups().add(hideUndescribableTopics(ctx, f.join())));
            return new ConsumerGroupDescribeResponse(out);
        });
    }

    /**
     * As Kafka: a group whose members' assignments or target assignments name a topic the caller may not describe is
     * answered TOPIC_AUTHORIZATION_FAILED, without its members, so that the description shows no such topic.
     */
    private ConsumerGroupDescribeResponseData.DescribedGroup hideUndescribableTopics(
            RequestContext ctx, ConsumerGroupDescribeResponseData.DescribedGroup group) {
        Set<String> named = new HashSet<>();
        for (ConsumerGroupDescribeResponseData.Member m : group.members()) {
            m.assignment().topicPartitions().forEach(tp -> named.add(tp.topicName()));
            m.targetAssignment().topicPartitions().forEach(tp -> named.add(tp.topicName()));
        }
        for (String topic : named) {
            if (!auth.visible(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)) {
                return new ConsumerGroupDescribeResponseData.DescribedGroup().setGroupId(group.groupId())
                        .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code())
                        .setErrorMessage("The group has described topic(s) that the client is not authorized to "
                                + "describe.");
            }
        }
        return group;
    }

    private CompletableFuture<AbstractResponse> describeGroups(RequestContext ctx, DescribeGroupsRequest request) {
        List<String> ids = request.data().groups();
        boolean withOperations = request.data().includeAuthorizedOperations();
        return groups.call(() -> {
            DescribeGroupsResponseData out = new DescribeGroupsResponseData();
            // Read on the coordinator thread: members are mutable state it owns.
            return out;
        }).thenCompose(out -> groups.snapshot().thenCompose(all -> groups.call(() -> {
            for (String id : ids) {
                GroupCoordinator.Group g = all.get(id);
                DescribeGroupsResponseData.DescribedGroup dg = new DescribeGroupsResponseData.DescribedGroup().setGroupId(id);
                if (!auth.allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, id)) {
                    dg.setErrorCode(Errors.GROUP_AUTHORIZATION_FAILED.code()).setGroupState("").setProtocolType("")
                            .setProtocolData("");
                    out.groups().add(dg);
                    continue;
                }
                if (withOperations) {
                    dg.setAuthorizedOperations(auth.operations(ctx, ResourceType.GROUP, id));
                }
                if (!coordinates(id)) {
                    dg.setErrorCode(Errors.NOT_COORDINATOR.code()).setGroupState("").setProtocolType("")
                            .setProtocolData("");
                } else if (g == null) {
                    dg.setGroupState("Dead").setProtocolType("").setProtocolData("");
                } else {
                    dg.setGroupState(stateName(g.state)).setProtocolType(g.protocolType == null ? "" : g.protocolType)
                            .setProtocolData(g.state == GroupCoordinator.State.STABLE ? g.protocolName : "");
                    for (GroupCoordinator.Member m : g.members.values()) {
                        dg.members().add(new DescribeGroupsResponseData.DescribedGroupMember().setMemberId(m.memberId)
                                .setGroupInstanceId(m.groupInstanceId).setClientId(m.clientId).setClientHost(m.clientHost)
                                .setMemberMetadata(g.protocolName == null ? new byte[0] : m.protocols.getOrDefault(g.protocolName, new byte[0]))
                                .setMemberAssignment(m.assignment));
                    }
                }
                out.groups().add(dg);
            }
            return (AbstractResponse) new DescribeGroupsResponse(out);
        })));
    }

    private static String stateName(GroupCoordinator.State s) {
        return switch (s) {
            case EMPTY -> "Empty";
            case PREPARING_REBALANCE -> "PreparingRebalance";
            case COMPLETING_REBALANCE -> "CompletingRebalance";
            case STABLE -> "Stable";
        };
    }
}
