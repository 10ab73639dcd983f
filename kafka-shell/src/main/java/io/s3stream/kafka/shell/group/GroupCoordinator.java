package io.s3stream.kafka.shell.group;

import io.s3stream.KeyValues;
import io.s3stream.kafka.shell.config.ShellConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.message.SyncGroupResponseData;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The classic consumer-group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and committed offsets.
 *
 * <h2>Concurrency</h2>
 * One thread owns every group: request handlers hand it commands ({@link #call}) and get futures back; rebalance and
 * session timers run on the same thread, so group state needs no locks.
 *
 * <h2>Durability</h2>
 * Committed offsets are written to the manifest's key-value space ({@code kafka/offset/<group>/<topic>/<partition>})
 * before the commit is acknowledged, and read back at startup; those of an empty group expire
 * ({@link OffsetRetention}). Group membership is soft state: after a restart members rejoin, as they do after a Kafka
 * coordinator moves.
 */
public final class GroupCoordinator implements AutoCloseable {
    enum State { EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE }

    record Committed(long offset, int leaderEpoch, String metadata) {
    }

    static final class Member {
        final String memberId;
        String groupInstanceId;
        String clientId;
        String clientHost;
        int sessionTimeoutMs;
        int rebalanceTimeoutMs;
        LinkedHashMap<String, byte[]> protocols = new LinkedHashMap<>();
        CompletableFuture<JoinGroupResponseData> joining;
        CompletableFuture<SyncGroupResponseData> syncing;
        byte[] assignment = new byte[0];
        long lastHeartbeatMs;

        Member(String memberId) {
            this.memberId = memberId;
        }
    }

    static final class Group {
        final String groupId;
        State state = State.EMPTY;
        int generation;
        String protocolType;
        String protocolName;
        String leader;
        final LinkedHashMap<String, Member> members = new LinkedHashMap<>();
        final Set<String> pending = new HashSet<>();
        ScheduledFuture<?> rebalanceTimer;
        boolean initialDelay;

        Group(String groupId) {
            this.groupId = groupId;
        }
    }

    private final ShellConfig config;
    private final KeyValues kv;
    private final OffsetWriter offsetWriter;
    private final ScheduledExecutorService exec = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "kafka-shell-group-coordinator");
        t.setDaemon(true);
        return t;
    });
    private final Map<String, Group> groups = new HashMap<>();
    /** Groups of the consumer group protocol (KIP-848); a group id is in at most one of the two maps with members. */
    private final Map<String, ConsumerGroup> consumerGroups = new HashMap<>();
    /** The cluster's topics as subscriptions see them (set by the group APIs). */
    private volatile ConsumerGroup.Topics topics = new ConsumerGroup.Topics() {
        @Override
        public int partitions(String topic) {
            return -1;
        }

        @Override
        public Set<String> names() {
            return Set.of();
        }

        @Override
        public long layoutVersion() {
            return 0;
        }
    };
    private final Map<String, Map<TopicPartition, Committed>> offsets = new HashMap<>();
    private final OffsetRetention retention;

    public GroupCoordinator(ShellConfig config, KeyValues kv) {
        this.config = config;
        this.kv = kv;
        this.offsetWriter = new OffsetWriter(kv, task -> {
            try {
                exec.execute(task);
            } catch (java.util.concurrent.RejectedExecutionException closing) {
                task.run(); // closing: still complete the commits in flight
            }
        }, exec, config.offsetsCommitLingerMs());
        exec.scheduleWithFixedDelay(this::expireSessions, 200, 200, TimeUnit.MILLISECONDS);
        this.retention = new OffsetRetention(kv, config.offsetsRetentionMs(), System::currentTimeMillis,
                this::hasMembers, this::forgetExpired);
        long every = config.offsetsRetentionCheckIntervalMs();
        exec.scheduleWithFixedDelay(() -> retention.sweep(exec), every, every, TimeUnit.MILLISECONDS);
    }

    /** Whether a group has members, or joins pending (coordinator thread). */
    private boolean hasMembers(String groupId) {
        Group g = groups.get(groupId);
        ConsumerGroup cg = consumerGroups.get(groupId);
        return (g != null && (!g.members.isEmpty() || !g.pending.isEmpty())) || (cg != null && !cg.members.isEmpty());
    }

    /** Drops a group whose offsets expired, as Kafka then removes the group (coordinator thread). */
    private void forgetExpired(String groupId) {
        groups.remove(groupId);
        consumerGroups.remove(groupId);
        offsets.remove(groupId);
    }

    ShellConfig config() {
        return config;
    }

    void topics(ConsumerGroup.Topics view) {
        this.topics = view;
    }

    /** The key-value space that holds committed and staged offsets. */
    KeyValues kv() {
        return kv;
    }

    /** Reads committed offsets from the key-value space (startup). */
    public void load() {
        call(() -> {
            for (Map.Entry<String, byte[]> e : kv.list(OffsetKeys.OFFSET_PREFIX).join().entrySet()) {
                offsets.computeIfAbsent(OffsetKeys.groupOf(e.getKey()), g -> new HashMap<>())
                        .put(OffsetKeys.partitionOf(e.getKey()), OffsetKeys.decode(e.getValue()));
            }
            return null;
        }).join();
    }

    /** Runs {@code task} on the coordinator thread. */
    <T> CompletableFuture<T> call(Supplier<T> task) {
        return CompletableFuture.supplyAsync(task, exec);
    }

    // ---------------------------------------------------------------- join

    CompletableFuture<JoinGroupResponseData> join(JoinGroupRequestData req, short version, String clientId, String clientHost) {
        return call(() -> {
            CompletableFuture<JoinGroupResponseData> f = new CompletableFuture<>();
            doJoin(req, version, clientId, clientHost, f);
            return f;
        }).thenCompose(f -> f);
    }

    private static JoinGroupResponseData joinError(Errors e, String memberId) {
        return new JoinGroupResponseData().setErrorCode(e.code()).setMemberId(memberId).setGenerationId(-1)
                .setProtocolName(null).setLeader("");
    }

    private void doJoin(JoinGroupRequestData req, short version, String clientId, String clientHost,
                        CompletableFuture<JoinGroupResponseData> f) {
        String groupId = req.groupId();
        if (groupId == null || groupId.isEmpty()) {
            f.complete(joinError(Errors.INVALID_GROUP_ID, req.memberId()));
            return;
        }
        if (req.sessionTimeoutMs() < config.groupMinSessionTimeoutMs()
                || req.sessionTimeoutMs() > config.groupMaxSessionTimeoutMs()) {
            f.complete(joinError(Errors.INVALID_SESSION_TIMEOUT, req.memberId()));
            return;
        }
        ConsumerGroup cg = consumerGroups.get(groupId);
        if (cg != null && !cg.members.isEmpty()) {
            // A classic consumer joining a consumer-protocol group: a classic member of a mixed group.
            if (!"consumer".equals(req.protocolType()) || req.protocols().isEmpty()) {
                f.complete(joinError(Errors.INCONSISTENT_GROUP_PROTOCOL, req.memberId()));
                return;
            }
            String memberId = req.memberId().isEmpty() ? clientId + "-" + UUID.randomUUID() : req.memberId();
            if (!req.memberId().isEmpty() && !cg.members.containsKey(memberId)) {
                f.complete(joinError(Errors.UNKNOWN_MEMBER_ID, memberId));
                return;
            }
            JoinGroupRequestData.JoinGroupRequestProtocol p = req.protocols().iterator().next();
            f.complete(cg.classicJoin(memberId, p.name(), p.metadata(), req.sessionTimeoutMs(),
                    version >= 1 ? req.rebalanceTimeoutMs() : req.sessionTimeoutMs(), clientId, clientHost, topics,
                    now()));
            return;
        }
        consumerGroups.remove(groupId);
        Group g = groups.computeIfAbsent(groupId, Group::new);
        if (!g.members.isEmpty() && (!req.protocolType().equals(g.protocolType) || !supportsCommonProtocol(g, req))) {
            f.complete(joinError(Errors.INCONSISTENT_GROUP_PROTOCOL, req.memberId()));
            return;
        }
        String memberId = req.memberId();
        if (memberId.isEmpty()) {
            memberId = clientId + "-" + UUID.randomUUID();
            if (version >= 4) {
                g.pending.add(memberId);
                f.complete(joinError(Errors.MEMBER_ID_REQUIRED, memberId));
                return;
            }
        } else if (!g.members.containsKey(memberId) && !g.pending.remove(memberId)) {
            f.complete(joinError(Errors.UNKNOWN_MEMBER_ID, memberId));
            return;
        }
        Member m = g.members.computeIfAbsent(memberId, Member::new);
        m.groupInstanceId = req.groupInstanceId();
        m.clientId = clientId;
        m.clientHost = clientHost;
        m.sessionTimeoutMs = req.sessionTimeoutMs();
        m.rebalanceTimeoutMs = version >= 1 ? req.rebalanceTimeoutMs() : req.sessionTimeoutMs();
        m.protocols = new LinkedHashMap<>();
        for (JoinGroupRequestData.JoinGroupRequestProtocol p : req.protocols()) {
            m.protocols.put(p.name(), p.metadata());
        }
        m.lastHeartbeatMs = now();
        if (m.joining != null) {
            m.joining.complete(joinError(Errors.UNKNOWN_MEMBER_ID, memberId)); // superseded by this join
        }
        m.joining = f;
        g.protocolType = req.protocolType();
        if (g.state == State.PREPARING_REBALANCE) {
            maybeCompleteJoin(g);
        } else {
            prepareRebalance(g);
        }
    }

    private static boolean supportsCommonProtocol(Group g, JoinGroupRequestData req) {
        for (JoinGroupRequestData.JoinGroupRequestProtocol p : req.protocols()) {
            boolean all = true;
            for (Member m : g.members.values()) {
                all &= m.protocols.containsKey(p.name());
            }
            if (all) {
                return true;
            }
        }
        return false;
    }

    private void prepareRebalance(Group g) {
        if (g.state == State.COMPLETING_REBALANCE) {
            for (Member m : g.members.values()) {
                if (m.syncing != null) {
                    m.syncing.complete(syncError(Errors.REBALANCE_IN_PROGRESS));
                    m.syncing = null;
                }
            }
        }
        boolean wasEmpty = g.state == State.EMPTY;
        g.state = State.PREPARING_REBALANCE;
        if (g.rebalanceTimer != null) {
            g.rebalanceTimer.cancel(false);
        }
        long delayMs;
        if (wasEmpty && config.groupInitialRebalanceDelayMs() > 0) {
            g.initialDelay = true;
            delayMs = config.groupInitialRebalanceDelayMs();
        } else {
            g.initialDelay = false;
            delayMs = 0;
            for (Member m : g.members.values()) {
                delayMs = Math.max(delayMs, m.rebalanceTimeoutMs);
            }
        }
        g.rebalanceTimer = exec.schedule(() -> {
            g.initialDelay = false;
            completeJoin(g);
        }, delayMs, TimeUnit.MILLISECONDS);
        maybeCompleteJoin(g);
    }

    private void maybeCompleteJoin(Group g) {
        if (g.state != State.PREPARING_REBALANCE || g.initialDelay) {
            return;
        }
        for (Member m : g.members.values()) {
            if (m.joining == null) {
                return;
            }
        }
        completeJoin(g);
    }

    private void completeJoin(Group g) {
        if (g.state != State.PREPARING_REBALANCE) {
            return;
        }
        if (g.rebalanceTimer != null) {
            g.rebalanceTimer.cancel(false);
            g.rebalanceTimer = null;
        }
        g.members.values().removeIf(m -> m.joining == null); // did not rejoin in time
        g.generation++;
        if (g.members.isEmpty()) {
            g.state = State.EMPTY;
            g.leader = null;
            g.protocolName = null;
            return;
        }
        if (g.leader == null || !g.members.containsKey(g.leader)) {
            g.leader = g.members.keySet().iterator().next();
        }
        g.protocolName = null;
        for (String candidate : g.members.get(g.leader).protocols.keySet()) {
            boolean all = true;
            for (Member m : g.members.values()) {
                all &= m.protocols.containsKey(candidate);
            }
            if (all) {
                g.protocolName = candidate;
                break;
            }
        }
        g.state = State.COMPLETING_REBALANCE;
        for (Member m : g.members.values()) {
            JoinGroupResponseData r = new JoinGroupResponseData().setErrorCode(Errors.NONE.code())
                    .setGenerationId(g.generation).setProtocolType(g.protocolType).setProtocolName(g.protocolName)
                    .setLeader(g.leader).setMemberId(m.memberId);
            if (m.memberId.equals(g.leader)) {
                List<JoinGroupResponseData.JoinGroupResponseMember> list = new ArrayList<>();
                for (Member o : g.members.values()) {
                    list.add(new JoinGroupResponseData.JoinGroupResponseMember().setMemberId(o.memberId)
                            .setGroupInstanceId(o.groupInstanceId).setMetadata(o.protocols.get(g.protocolName)));
                }
                r.setMembers(list);
            }
            m.lastHeartbeatMs = now();
            CompletableFuture<JoinGroupResponseData> f = m.joining;
            m.joining = null;
            f.complete(r);
        }
    }

    // ---------------------------------------------------------------- sync

    private static SyncGroupResponseData syncError(Errors e) {
        return new SyncGroupResponseData().setErrorCode(e.code()).setAssignment(new byte[0]);
    }

    CompletableFuture<SyncGroupResponseData> sync(SyncGroupRequestData req) {
        return call(() -> {
            CompletableFuture<SyncGroupResponseData> f = new CompletableFuture<>();
            ConsumerGroup cg = consumerGroups.get(req.groupId());
            if (cg != null && cg.members.containsKey(req.memberId())) {
                f.complete(cg.classicSync(req.memberId(), req.generationId()));
                return f;
            }
            Group g = groups.get(req.groupId());
            Member m = g == null ? null : g.members.get(req.memberId());
            if (m == null) {
                f.complete(syncError(Errors.UNKNOWN_MEMBER_ID));
            } else if (req.generationId() != g.generation) {
                f.complete(syncError(Errors.ILLEGAL_GENERATION));
            } else if ((req.protocolType() != null && !req.protocolType().equals(g.protocolType))
                    || (req.protocolName() != null && !req.protocolName().equals(g.protocolName))) {
                f.complete(syncError(Errors.INCONSISTENT_GROUP_PROTOCOL));
            } else if (g.state == State.PREPARING_REBALANCE) {
                f.complete(syncError(Errors.REBALANCE_IN_PROGRESS));
            } else if (g.state == State.STABLE) {
                f.complete(syncOk(g, m));
            } else {
                m.syncing = f;
                m.lastHeartbeatMs = now();
                if (m.memberId.equals(g.leader)) {
                    Map<String, byte[]> byMember = new HashMap<>();
                    for (SyncGroupRequestData.SyncGroupRequestAssignment a : req.assignments()) {
                        byMember.put(a.memberId(), a.assignment());
                    }
                    g.state = State.STABLE;
                    for (Member o : g.members.values()) {
                        o.assignment = byMember.getOrDefault(o.memberId, new byte[0]);
                        if (o.syncing != null) {
                            o.syncing.complete(syncOk(g, o));
                            o.syncing = null;
                        }
                    }
                }
            }
            return f;
        }).thenCompose(f -> f);
    }

    private static SyncGroupResponseData syncOk(Group g, Member m) {
        return new SyncGroupResponseData().setErrorCode(Errors.NONE.code()).setProtocolType(g.protocolType)
                .setProtocolName(g.protocolName).setAssignment(m.assignment);
    }

    // ---------------------------------------------------------------- heartbeat, leave, expiry

    CompletableFuture<Errors> heartbeat(String groupId, String memberId, int generation) {
        return call(() -> {
            ConsumerGroup cg = consumerGroups.get(groupId);
            if (cg != null && cg.members.containsKey(memberId)) {
                return cg.classicHeartbeat(memberId, generation, topics, now());
            }
            Group g = groups.get(groupId);
            Member m = g == null ? null : g.members.get(memberId);
            if (m == null) {
                return Errors.UNKNOWN_MEMBER_ID;
            }
            m.lastHeartbeatMs = now();
            if (g.state == State.PREPARING_REBALANCE) {
                return Errors.REBALANCE_IN_PROGRESS;
            }
            if (generation != g.generation) {
                return Errors.ILLEGAL_GENERATION;
            }
            return Errors.NONE;
        });
    }

    /** Removes members; returns an error per member id. */
    CompletableFuture<Map<String, Errors>> leave(String groupId, List<String> memberIds) {
        return call(() -> {
            Map<String, Errors> result = new LinkedHashMap<>();
            Group g = groups.get(groupId);
            ConsumerGroup cg = consumerGroups.get(groupId);
            for (String id : memberIds) {
                if (cg != null && cg.members.containsKey(id)) {
                    result.put(id, cg.classicLeave(id));
                } else if (g == null || !g.members.containsKey(id)) {
                    result.put(id, Errors.UNKNOWN_MEMBER_ID);
                } else {
                    removeMember(g, id);
                    result.put(id, Errors.NONE);
                }
            }
            return result;
        });
    }

    private void removeMember(Group g, String memberId) {
        Member m = g.members.remove(memberId);
        if (m == null) {
            return;
        }
        if (m.joining != null) {
            m.joining.complete(joinError(Errors.UNKNOWN_MEMBER_ID, memberId));
        }
        if (m.syncing != null) {
            m.syncing.complete(syncError(Errors.UNKNOWN_MEMBER_ID));
        }
        switch (g.state) {
            case STABLE, COMPLETING_REBALANCE -> prepareRebalance(g);
            case PREPARING_REBALANCE -> {
                if (g.members.isEmpty()) {
                    completeJoin(g);
                } else {
                    maybeCompleteJoin(g);
                }
            }
            case EMPTY -> { }
        }
    }

    // ---------------------------------------------------------------- consumer group protocol (KIP-848)

    /**
     * One ConsumerGroupHeartbeat. A group id whose classic group has members is refused (this shell does not mix the
     * protocols in one group); an empty classic group (offsets only) becomes a consumer-protocol group.
     */
    CompletableFuture<ConsumerGroup.Reply> consumerHeartbeat(String groupId, ConsumerGroup.Heartbeat hb,
                                                             ConsumerGroup.Topics topics) {
        return call(() -> {
            if (groupId == null || groupId.isEmpty()) {
                return ConsumerGroup.Reply.error(Errors.INVALID_GROUP_ID, "the group id is empty");
            }
            Group classic = groups.get(groupId);
            if (classic != null && !classic.members.isEmpty()) {
                if (!"consumer".equals(classic.protocolType)) {
                    return ConsumerGroup.Reply.error(Errors.GROUP_ID_NOT_FOUND, "group " + groupId + " is a classic "
                            + "group of protocol type " + classic.protocolType + ", not a consumer group");
                }
                if (classic.state != State.STABLE) {
                    // Converted only between rebalances; the member retries.
                    return ConsumerGroup.Reply.error(Errors.COORDINATOR_LOAD_IN_PROGRESS, "classic group " + groupId
                            + " is rebalancing; it becomes a consumer-protocol group once stable");
                }
                consumerGroups.put(groupId, upgrade(classic, topics));
            }
            groups.remove(groupId);
            ConsumerGroup cg = consumerGroups.computeIfAbsent(groupId, ConsumerGroup::new);
            return cg.heartbeat(hb, topics, now());
        });
    }

    /** The online upgrade: a stable classic consumer group becomes a consumer-protocol group with classic members. */
    private ConsumerGroup upgrade(Group classic, ConsumerGroup.Topics view) {
        if (classic.rebalanceTimer != null) {
            classic.rebalanceTimer.cancel(false);
        }
        Map<String, byte[]> subscriptions = new LinkedHashMap<>();
        Map<String, byte[]> assignments = new HashMap<>();
        Map<String, int[]> timeouts = new HashMap<>();
        for (Member m : classic.members.values()) {
            subscriptions.put(m.memberId, m.protocols.get(classic.protocolName));
            assignments.put(m.memberId, m.assignment);
            timeouts.put(m.memberId, new int[] {m.sessionTimeoutMs, m.rebalanceTimeoutMs});
        }
        return ConsumerGroup.fromClassic(classic.groupId, classic.generation, classic.protocolName, subscriptions,
                assignments, timeouts, view, now());
    }

    /** A consumer-protocol group, read on the coordinator thread by {@code reader}; null if there is none. */
    <T> CompletableFuture<T> readConsumerGroup(String groupId, java.util.function.Function<ConsumerGroup, T> reader) {
        return call(() -> reader.apply(consumerGroups.get(groupId)));
    }

    /** The consumer-protocol groups' states by id (ListGroups). */
    CompletableFuture<Map<String, String>> consumerGroupStates() {
        return call(() -> {
            Map<String, String> out = new TreeMap<>();
            consumerGroups.forEach((id, g) -> out.put(id, g.state()));
            return out;
        });
    }

    private void expireSessions() {
        long now = now();
        consumerGroups.values().forEach(cg -> cg.expire(now));
        for (Group g : List.copyOf(groups.values())) {
            for (Member m : List.copyOf(g.members.values())) {
                if (m.joining == null && now - m.lastHeartbeatMs > m.sessionTimeoutMs) {
                    removeMember(g, m.memberId);
                }
            }
        }
    }

    // ---------------------------------------------------------------- offsets

    /**
     * Checks a commit's member and generation; NONE when the commit may proceed. As in Kafka's classic coordinator, a
     * member of the current generation may commit while the group prepares a rebalance (consumers commit in
     * {@code onPartitionsRevoked}, before they rejoin); only between JoinGroup and SyncGroup, when the member already
     * holds the next generation but not its assignment, is the answer REBALANCE_IN_PROGRESS.
     */
    CompletableFuture<Errors> validateCommit(String groupId, String memberId, int generation) {
        return call(() -> {
            ConsumerGroup cg = consumerGroups.get(groupId);
            if (cg != null) {
                return cg.validateCommit(memberId, generation);
            }
            Group g = groups.get(groupId);
            if (generation < 0 && (memberId == null || memberId.isEmpty())) {
                // A "simple" commit outside any generation: only for groups without active members.
                return g == null || g.members.isEmpty() ? Errors.NONE : Errors.UNKNOWN_MEMBER_ID;
            }
            if (g == null || !g.members.containsKey(memberId)) {
                return Errors.UNKNOWN_MEMBER_ID;
            }
            if (generation != g.generation) {
                return Errors.ILLEGAL_GENERATION;
            }
            if (g.state == State.COMPLETING_REBALANCE) {
                return Errors.REBALANCE_IN_PROGRESS;
            }
            g.members.get(memberId).lastHeartbeatMs = now();
            return Errors.NONE;
        });
    }

    /**
     * Stores offsets durably, then in memory. All the partitions of one OffsetCommit land together or not at all, in
     * one change of the key-value space shared with the commits that arrived while the previous change was written
     * ({@link OffsetWriter}).
     */
    CompletableFuture<Void> commit(String groupId, Map<TopicPartition, Committed> commits) {
        Map<String, byte[]> writes = new HashMap<>();
        for (Map.Entry<TopicPartition, Committed> e : commits.entrySet()) {
            writes.put(OffsetKeys.offsetKey(groupId, e.getKey()), OffsetKeys.encode(e.getValue()));
        }
        writes.put(OffsetKeys.timeKey(groupId), OffsetKeys.encodeTime(System.currentTimeMillis()));
        return retention.committing(groupId, () -> offsetWriter.write(writes))
                .thenComposeAsync(v -> {
                    offsets.computeIfAbsent(groupId, g -> new HashMap<>()).putAll(commits);
                    return CompletableFuture.<Void>completedFuture(null);
                }, exec);
    }

    /**
     * The group's committed offsets, read from the key-value space (a local read of the manifest's view): after a
     * failover or a coordinator change, offsets another shell committed are answered, not this shell's memory.
     */
    CompletableFuture<Map<TopicPartition, Committed>> committed(String groupId) {
        String prefix = OffsetKeys.groupPrefix(groupId);
        // A read barrier first: the commits the previous coordinator acknowledged (before a failover, or before the
        // group moved here) may not be in this shell's view yet, and answering without them would move the group's
        // offsets back (ChaosIT caught OffsetFetch answering 11 records behind an acknowledged commit). One GET.
        return kv.sync().thenCompose(v -> kv.list(prefix)).thenComposeAsync(stored -> {
            Map<TopicPartition, Committed> fresh = new HashMap<>();
            stored.forEach((k, v) -> {
                String[] parts = k.substring(prefix.length()).split("/");
                fresh.put(new TopicPartition(parts[0], Integer.parseInt(parts[1])), OffsetKeys.decode(v));
            });
            // The stored view replaces memory: offsets another shell deleted (DeleteGroups, DeleteTopics) go too.
            if (fresh.isEmpty()) {
                offsets.remove(groupId);
            } else {
                offsets.put(groupId, fresh);
            }
            return CompletableFuture.completedFuture(null);
        }, exec).thenCompose(ignored -> committedInMemory(groupId));
    }

    private CompletableFuture<Map<TopicPartition, Committed>> committedInMemory(String groupId) {
        return call(() -> new TreeMap<TopicPartition, Committed>(
                java.util.Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition)) {
            {
                putAll(offsets.getOrDefault(groupId, Map.of()));
            }
        });
    }

    /** Group ids known to this coordinator, with their state and protocol type. */
    CompletableFuture<Map<String, Group>> snapshot() {
        return call(() -> new TreeMap<>(groups));
    }

    /** The ids of the groups this coordinator holds members or a generation of. */
    public CompletableFuture<Set<String>> groupIds() {
        return call(() -> Set.copyOf(groups.keySet()));
    }

    /**
     * Deletes a group with its committed offsets (DeleteGroups): NON_EMPTY_GROUP while it has members,
     * GROUP_ID_NOT_FOUND when neither the group nor offsets of it exist.
     */
    CompletableFuture<Errors> delete(String groupId) {
        // Offsets may have been committed while another shell coordinated the group: read them first.
        return committed(groupId).thenCompose(known -> call(() -> {
            Group g = groups.get(groupId);
            ConsumerGroup cg = consumerGroups.get(groupId);
            if ((g != null && !g.members.isEmpty()) || (cg != null && !cg.members.isEmpty())) {
                return CompletableFuture.completedFuture(Errors.NON_EMPTY_GROUP);
            }
            consumerGroups.remove(groupId);
            Map<TopicPartition, Committed> committed = offsets.remove(groupId);
            if (g == null && cg == null && committed == null) {
                return CompletableFuture.completedFuture(Errors.GROUP_ID_NOT_FOUND);
            }
            groups.remove(groupId);
            List<String> deletes = new ArrayList<>(List.of(OffsetKeys.timeKey(groupId)));
            if (committed != null) {
                committed.keySet().forEach(tp -> deletes.add(OffsetKeys.offsetKey(groupId, tp)));
            }
            return CompletableFuture.allOf(GroupConfigs.forget(kv, groupId), kv.update(Map.of(), deletes))
                    .thenApply(v -> Errors.NONE);
        }).thenCompose(f -> f));
    }

    /** The answer to OffsetDelete: a group-level error, else one per partition. */
    record OffsetDeleteResult(Errors groupError, Map<TopicPartition, Errors> partitions) {
    }

    /**
     * OffsetDelete, as Kafka's classic coordinator does it: GROUP_ID_NOT_FOUND for a group with neither members nor
     * offsets; NON_EMPTY_GROUP for a group with members that is not a consumer group (its subscriptions cannot be
     * read); GROUP_SUBSCRIBED_TO_TOPIC for partitions of a topic some member subscribes to; the other offsets go.
     */
    CompletableFuture<OffsetDeleteResult> deleteOffsets(String groupId, List<TopicPartition> partitions) {
        return committed(groupId).thenCompose(known -> call(() -> {
            Group g = groups.get(groupId);
            ConsumerGroup cg = consumerGroups.get(groupId);
            Map<TopicPartition, Committed> committed = offsets.get(groupId);
            if ((g == null || g.members.isEmpty()) && (cg == null || cg.members.isEmpty()) && committed == null) {
                return CompletableFuture.completedFuture(new OffsetDeleteResult(Errors.GROUP_ID_NOT_FOUND, Map.of()));
            }
            Set<String> subscribed = new HashSet<>();
            if (cg != null) {
                // As Kafka: names as subscribed, regular expressions as resolved (to topics the member may describe).
                cg.members.values().forEach(m -> subscribed.addAll(m.subscribedTopicNames));
                subscribed.addAll(cg.subscribedTopics(topics));
            }
            if (g != null && !g.members.isEmpty()) {
                if (!"consumer".equals(g.protocolType) || g.protocolName == null) {
                    return CompletableFuture.completedFuture(new OffsetDeleteResult(Errors.NON_EMPTY_GROUP, Map.of()));
                }
                for (Member m : g.members.values()) {
                    byte[] metadata = m.protocols.get(g.protocolName);
                    try {
                        subscribed.addAll(org.apache.kafka.clients.consumer.internals.ConsumerProtocol
                                .deserializeSubscription(java.nio.ByteBuffer.wrap(metadata)).topics());
                    } catch (RuntimeException e) {
                        // Unreadable: Kafka then counts the member as subscribed to every topic.
                        return CompletableFuture.completedFuture(new OffsetDeleteResult(Errors.NON_EMPTY_GROUP, Map.of()));
                    }
                }
            }
            Map<TopicPartition, Errors> out = new LinkedHashMap<>();
            List<String> deletes = new ArrayList<>();
            for (TopicPartition tp : partitions) {
                if (subscribed.contains(tp.topic())) {
                    out.put(tp, Errors.GROUP_SUBSCRIBED_TO_TOPIC);
                    continue;
                }
                out.put(tp, Errors.NONE);
                if (committed != null && committed.remove(tp) != null) {
                    deletes.add(OffsetKeys.offsetKey(groupId, tp));
                }
            }
            return kv.update(Map.of(), deletes).thenApply(v -> new OffsetDeleteResult(Errors.NONE, out));
        }).thenCompose(f -> f));
    }

    /**
     * Forgets the groups another shell coordinates now (a shell joined, or this one was away): their members are told
     * NOT_COORDINATOR (a pending join or sync is answered so) and rejoin at the new coordinator, which reads the
     * committed offsets from the key-value space. If the group comes back here later it starts afresh, not from stale
     * members and generations.
     */
    public void retainOnly(java.util.function.Predicate<String> coordinatedHere) {
        retention.coordinatedHere(coordinatedHere);
        call(() -> {
            for (Group g : List.copyOf(groups.values())) {
                if (coordinatedHere.test(g.groupId)) {
                    continue;
                }
                if (g.rebalanceTimer != null) {
                    g.rebalanceTimer.cancel(false);
                }
                for (Member m : g.members.values()) {
                    if (m.joining != null) {
                        m.joining.complete(joinError(Errors.NOT_COORDINATOR, m.memberId));
                    }
                    if (m.syncing != null) {
                        m.syncing.complete(syncError(Errors.NOT_COORDINATOR));
                    }
                }
                groups.remove(g.groupId);
            }
            consumerGroups.keySet().removeIf(id -> !coordinatedHere.test(id));
            offsets.keySet().removeIf(id -> !coordinatedHere.test(id));
            return null;
        });
    }

    /** Drops all offsets of topic {@code topic} (after DeleteTopics). */
    public void forgetTopic(String topic) {
        call(() -> {
            List<String> deletes = new ArrayList<>();
            for (Map.Entry<String, Map<TopicPartition, Committed>> e : offsets.entrySet()) {
                Iterator<TopicPartition> it = e.getValue().keySet().iterator();
                while (it.hasNext()) {
                    TopicPartition tp = it.next();
                    if (tp.topic().equals(topic)) {
                        it.remove();
                        deletes.add(OffsetKeys.offsetKey(e.getKey(), tp));
                    }
                }
            }
            kv.update(Map.of(), deletes);
            return null;
        });
    }

    private static long now() {
        return System.nanoTime() / 1_000_000;
    }

    @Override
    public void close() {
        exec.shutdownNow();
    }
}
