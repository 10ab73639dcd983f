package io.s3stream.kafka.shell.group;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * One group of the consumer group protocol (KIP-848, {@code group.protocol=consumer}): members heartbeat, the
 * coordinator computes a target assignment with a server-side assignor whenever the group epoch moves (a member
 * joins, leaves or changes its subscription, a subscribed topic grows), and brings each member to its target in
 * steps that never give a partition to two members at once: a member first gives up (revokes) what it must lose and
 * confirms it in a heartbeat, and is given a partition only once no other member holds it or is revoking it.
 *
 * <h2>Epochs</h2>
 * The group epoch counts changes of membership and subscriptions; the assignment epoch is the group epoch the
 * current target was computed at; a member's epoch is the assignment epoch it has reached. A heartbeat with an epoch
 * other than the member's current (or previous) one is FENCED_MEMBER_EPOCH, and the member rejoins with epoch 0.
 *
 * <p>Owned by the coordinator thread; not thread-safe. The state is in memory only, as for classic groups: after a
 * coordinator change members are unknown to the new coordinator (UNKNOWN_MEMBER_ID) and rejoin; committed offsets are
 * in the shared key-value space.
 */
final class ConsumerGroup {
    /** What the coordinator knows of the cluster's topics, for subscriptions. */
    interface Topics {
        /** Partition count of {@code topic}, or -1 when it does not exist. */
        int partitions(String topic);

        /** Every topic's name (for regular-expression subscriptions): an unmodifiable snapshot. */
        Set<String> names();

        /**
         * A number that moves on whenever a topic is created or deleted or its partition count changes, read before
         * {@link #names()} and {@link #partitions}: members keep what their regular expression matched, and the group
         * the partition counts its target was computed from, until it moves, so a steady heartbeat neither matches
         * every topic again nor looks up every subscribed topic's partitions.
         */
        long layoutVersion();
    }

    static final class Member {
        final String memberId;
        int epoch;
        int previousEpoch;
        String instanceId;
        String rackId;
        String clientId;
        String clientHost;
        int rebalanceTimeoutMs;
        /** The topic names the member subscribes to; set with {@link #subscribe(List)}. */
        List<String> subscribedTopicNames = List.of();
        /** The member's regular expression, or null; set with {@link #subscribe(String)}. */
        String subscribedTopicRegex;
        /** {@link #subscribedTopicRegex} compiled once, when it is set. */
        private Pattern subscribedPattern;
        /** The topics {@link #subscribedPattern} matched at {@link #matchedVersion} of the layout; null: not yet. */
        private List<String> matched;
        private long matchedVersion;
        /** Whether the member's principal may describe a topic (from its last heartbeat); null: every topic. */
        private Predicate<String> mayDescribe;
        /** {@link #mayDescribe}'s answers since the member's last heartbeat: other members' heartbeats reuse them. */
        private final Map<String, Boolean> describable = new HashMap<>();
        /**
         * The subscription resolved against the topics at {@link #resolvedVersion} of their layout (unmodifiable);
         * resolved again when the layout moved or {@link #stale}, and kept as the same instance when that changes
         * nothing, which is how the group knows its members' subscriptions did not change ({@link #subscribed}).
         */
        private Set<String> resolved;
        private long resolvedVersion;
        private boolean stale = true;
        /** Partitions the member may use now. */
        final Set<TopicPartition> assigned = new TreeSet<>(ServerAssignors.ORDER);
        /** Partitions the member was asked to give up and has not yet confirmed giving up. */
        final Set<TopicPartition> revoking = new TreeSet<>(ServerAssignors.ORDER);
        long revokeDeadlineMs;
        long lastHeartbeatMs;
        int sessionTimeoutMs;
        /** The assignment last sent to the member; null when it must be sent (again). */
        Set<TopicPartition> sent;
        /** A member speaking the classic protocol (JoinGroup/SyncGroup/Heartbeat) in this group: its protocol name. */
        String classicProtocol;

        Member(String memberId) {
            this.memberId = memberId;
        }

        /** The member's subscription resolved against the existing topics: an unmodifiable sorted set. */
        Set<String> subscribedTopics(Topics topics) {
            long version = topics.layoutVersion();
            if (stale || resolved == null || resolvedVersion != version) {
                SortedSet<String> fresh = resolve(topics);
                if (!fresh.equals(resolved)) {
                    resolved = Collections.unmodifiableSortedSet(fresh);
                }
                resolvedVersion = version;
                stale = false;
            }
            return resolved;
        }

        private SortedSet<String> resolve(Topics topics) {
            SortedSet<String> out = new TreeSet<>();
            for (String t : subscribedTopicNames) {
                if (topics.partitions(t) >= 0) {
                    out.add(t);
                }
            }
            if (subscribedPattern != null) {
                // As Kafka, a regular expression matches only topics the member may describe.
                for (String t : matched(topics)) {
                    if (mayDescribe == null || describable.computeIfAbsent(t, mayDescribe::test)) {
                        out.add(t);
                    }
                }
            }
            return out;
        }

        /** The topics the member's regular expression matches, matched again only when the layout moved. */
        private List<String> matched(Topics topics) {
            long version = topics.layoutVersion();
            if (matched == null || matchedVersion != version) {
                List<String> found = new ArrayList<>();
                for (String t : topics.names()) {
                    if (!t.startsWith("__") && subscribedPattern.matcher(t).matches()) {
                        found.add(t);
                    }
                }
                matched = found;
                matchedVersion = version;
            }
            return matched;
        }

        /** Sets the topic names the member subscribes to. */
        void subscribe(List<String> names) {
            subscribedTopicNames = List.copyOf(names);
            stale = true;
        }

        /** Sets the member's regular expression, or none (null); a valid one. */
        void subscribe(String regex) {
            subscribedTopicRegex = regex;
            subscribedPattern = regex == null ? null : Pattern.compile(regex);
            matched = null;
            stale = true;
        }

        /** The member's principal's topic visibility, from a heartbeat: an ACL change shows at the next one. */
        void mayDescribe(Predicate<String> mayDescribe) {
            if (mayDescribe != null || this.mayDescribe != null) {
                stale = true; // asked again at this heartbeat; without an authorizer there is nothing to ask
            }
            this.mayDescribe = mayDescribe;
            describable.clear();
        }
    }

    /** A heartbeat's answer: an error, or the member's epoch and (when it changed) its assignment. */
    record Reply(Errors error, String message, String memberId, int memberEpoch, Set<TopicPartition> assignment) {
        static Reply error(Errors error, String message) {
            return new Reply(error, message, null, -1, null);
        }
    }

    /**
     * What one heartbeat carries (KIP-848 semantics: null fields did not change since the last heartbeat).
     *
     * @param owned       the partitions the member reports owning, resolved to names, or null
     * @param mayDescribe whether the member's principal may describe a topic, or null when no authorizer decides
     */
    record Heartbeat(String memberId, int memberEpoch, String instanceId, String rackId, int rebalanceTimeoutMs,
                     List<String> subscribedTopicNames, String subscribedTopicRegex, String serverAssignor,
                     Set<TopicPartition> owned, String clientId, String clientHost, int sessionTimeoutMs,
                     Predicate<String> mayDescribe) {
        Heartbeat(String memberId, int memberEpoch, String instanceId, String rackId, int rebalanceTimeoutMs,
                  List<String> subscribedTopicNames, String subscribedTopicRegex, String serverAssignor,
                  Set<TopicPartition> owned, String clientId, String clientHost, int sessionTimeoutMs) {
            this(memberId, memberEpoch, instanceId, rackId, rebalanceTimeoutMs, subscribedTopicNames,
                    subscribedTopicRegex, serverAssignor, owned, clientId, clientHost, sessionTimeoutMs, null);
        }
    }

    final String groupId;
    int groupEpoch;
    int assignmentEpoch;
    String assignor = ServerAssignors.UNIFORM;
    final LinkedHashMap<String, Member> members = new LinkedHashMap<>();
    /** The target assignment of the assignment epoch. */
    private Map<String, Set<TopicPartition>> target = Map.of();
    /** Partition counts of the subscribed topics that the target was computed from. */
    private Map<String, Integer> targetMetadata = Map.of();
    /**
     * The layout version and the {@link #subscribed} union at which {@link #targetMetadata} was last found current:
     * while neither moves, the counts cannot have changed and {@link #metadataMoved} does not look them up.
     */
    private long metadataVersion = -1;
    private Set<String> metadataUnion;
    /** {@link #subscribed}'s union, and the members' resolved subscriptions it was built from, in member order. */
    private Set<String> union = Set.of();
    private List<Set<String>> unionSources = List.of();

    ConsumerGroup(String groupId) {
        this.groupId = groupId;
    }

    /** KIP-848's group states, as ConsumerGroupDescribe and ListGroups name them. */
    String state() {
        if (members.isEmpty()) {
            return "Empty";
        }
        if (assignmentEpoch < groupEpoch) {
            return "Assigning";
        }
        for (Member m : members.values()) {
            if (m.epoch != assignmentEpoch || !m.revoking.isEmpty()) {
                return "Reconciling";
            }
        }
        return "Stable";
    }

    Set<TopicPartition> targetOf(String memberId) {
        return target.getOrDefault(memberId, Set.of());
    }

    /** Every topic some member subscribes to, for OffsetDelete's GROUP_SUBSCRIBED_TO_TOPIC. */
    Set<String> subscribedTopics(Topics topics) {
        return subscribed(topics);
    }

    /**
     * The union of the members' subscriptions (unmodifiable), built again only when a member's resolved subscription
     * is another set than the one it was built from, or members came or went: a heartbeat then costs one pass over
     * the members, not over every member's topics.
     */
    private Set<String> subscribed(Topics topics) {
        List<Set<String>> sources = new ArrayList<>(members.size());
        boolean same = unionSources.size() == members.size();
        for (Member m : members.values()) {
            Set<String> s = m.subscribedTopics(topics);
            same = same && s == unionSources.get(sources.size());
            sources.add(s);
        }
        if (!same) {
            SortedSet<String> u = new TreeSet<>();
            sources.forEach(u::addAll);
            union = Collections.unmodifiableSortedSet(u);
            unionSources = sources;
        }
        return union;
    }

    Reply heartbeat(Heartbeat hb, Topics topics, long nowMs) {
        if (hb.serverAssignor() != null && !ServerAssignors.known(hb.serverAssignor())) {
            return Reply.error(Errors.UNSUPPORTED_ASSIGNOR, "unknown server assignor '" + hb.serverAssignor()
                    + "'; this broker has uniform and range");
        }
        if (hb.subscribedTopicRegex() != null && !hb.subscribedTopicRegex().isEmpty()) {
            try {
                Pattern.compile(hb.subscribedTopicRegex());
            } catch (PatternSyntaxException e) {
                return Reply.error(Errors.INVALID_REGULAR_EXPRESSION, e.getMessage());
            }
        }
        Member m;
        if (hb.memberEpoch() == -1 || hb.memberEpoch() == -2) {
            if (members.remove(hb.memberId()) != null) {
                groupEpoch++;
            }
            return new Reply(Errors.NONE, null, hb.memberId(), hb.memberEpoch(), null);
        } else if (hb.memberEpoch() == 0) {
            if (hb.subscribedTopicNames() == null && hb.subscribedTopicRegex() == null) {
                return Reply.error(Errors.INVALID_REQUEST, "a joining member must send its subscription");
            }
            if (hb.memberId() == null || hb.memberId().isEmpty()) {
                return Reply.error(Errors.INVALID_REQUEST, "MemberId can't be empty");
            }
            m = members.get(hb.memberId());
            if (m != null) { // rejoining (fenced, or restarted): it holds nothing any more
                m.assigned.clear();
                m.revoking.clear();
            } else {
                m = new Member(hb.memberId());
                members.put(m.memberId, m);
            }
            m.epoch = 0;
            m.previousEpoch = 0;
            m.sent = null;
            groupEpoch++;
        } else {
            m = members.get(hb.memberId());
            if (m == null) {
                return Reply.error(Errors.UNKNOWN_MEMBER_ID, "member " + hb.memberId() + " is not in group " + groupId);
            }
            if (hb.memberEpoch() != m.epoch && hb.memberEpoch() != m.previousEpoch) {
                return Reply.error(Errors.FENCED_MEMBER_EPOCH, "member epoch " + hb.memberEpoch()
                        + " is not the member's current epoch " + m.epoch);
            }
        }
        m.lastHeartbeatMs = nowMs;
        m.mayDescribe(hb.mayDescribe());
        m.clientId = hb.clientId();
        m.clientHost = hb.clientHost();
        m.sessionTimeoutMs = hb.sessionTimeoutMs();
        if (hb.instanceId() != null) {
            m.instanceId = hb.instanceId();
        }
        if (hb.rackId() != null) {
            m.rackId = hb.rackId();
        }
        if (hb.rebalanceTimeoutMs() > 0) {
            m.rebalanceTimeoutMs = hb.rebalanceTimeoutMs();
        }
        if (hb.subscribedTopicNames() != null && !hb.subscribedTopicNames().equals(m.subscribedTopicNames)) {
            m.subscribe(hb.subscribedTopicNames());
            groupEpoch++;
        }
        String regex = hb.subscribedTopicRegex() == null ? m.subscribedTopicRegex
                : hb.subscribedTopicRegex().isEmpty() ? null : hb.subscribedTopicRegex();
        if (!Objects.equals(regex, m.subscribedTopicRegex)) {
            m.subscribe(regex); // validated above
            groupEpoch++;
        }
        if (hb.serverAssignor() != null && !hb.serverAssignor().equals(assignor)) {
            assignor = hb.serverAssignor();
            groupEpoch++;
        }
        if (metadataMoved(topics)) {
            groupEpoch++; // a subscribed topic appeared, grew or went
        }
        if (assignmentEpoch < groupEpoch) {
            computeTarget(topics);
        }
        if (hb.owned() != null) {
            if (!m.revoking.isEmpty() && m.revoking.stream().noneMatch(hb.owned()::contains)) {
                m.revoking.clear(); // the member confirmed it gave them up
            }
            if (!samePartitions(hb.owned(), m.assigned)) {
                m.sent = null; // it does not hold what it should: tell it again
            }
        }
        reconcile(m, nowMs);
        Set<TopicPartition> send = null;
        if (m.sent == null || !m.sent.equals(m.assigned)) {
            send = Set.copyOf(m.assigned);
            m.sent = send;
        }
        return new Reply(Errors.NONE, null, m.memberId, m.epoch, send);
    }

    /** Partition counts of the topics in {@code subscribed}. */
    private static Map<String, Integer> metadata(Set<String> subscribed, Topics topics) {
        Map<String, Integer> out = new TreeMap<>();
        for (String t : subscribed) {
            out.put(t, topics.partitions(t));
        }
        return out;
    }

    /**
     * Whether a subscribed topic appeared, grew or went since the target was computed. The counts are looked up only
     * when the layout version or the union of the subscriptions moved since they were last found current.
     */
    private boolean metadataMoved(Topics topics) {
        long version = topics.layoutVersion(); // before the counts: a change while they are read moves it again
        Set<String> subscribed = subscribed(topics);
        if (version == metadataVersion && subscribed == metadataUnion) {
            return false;
        }
        if (!metadata(subscribed, topics).equals(targetMetadata)) {
            return true; // the caller computes the target again, which records what it was computed at
        }
        metadataVersion = version;
        metadataUnion = subscribed;
        return false;
    }

    private void computeTarget(Topics topics) {
        long version = topics.layoutVersion();
        SortedMap<String, Set<String>> subscriptions = new TreeMap<>();
        members.values().forEach(m -> subscriptions.put(m.memberId, m.subscribedTopics(topics)));
        Set<String> subscribed = subscribed(topics);
        targetMetadata = metadata(subscribed, topics);
        metadataVersion = version;
        metadataUnion = subscribed;
        target = ServerAssignors.assign(assignor, subscriptions, targetMetadata, target);
        assignmentEpoch = groupEpoch;
    }

    /**
     * Moves {@code m} toward its target: first it revokes what it must lose (and confirms), then it gets what it
     * lacks as far as no other member holds or is revoking it, and takes the assignment epoch.
     */
    private void reconcile(Member m, long nowMs) {
        if (!m.revoking.isEmpty()) {
            return; // waiting for the member to confirm its revocation
        }
        Set<TopicPartition> goal = targetOf(m.memberId);
        if (samePartitions(m.assigned, goal)) {
            takeAssignmentEpoch(m); // a steady member: nothing to give up, nothing to look up in the others
            return;
        }
        List<TopicPartition> lose = new ArrayList<>();
        for (TopicPartition tp : m.assigned) {
            if (!goal.contains(tp)) {
                lose.add(tp);
            }
        }
        if (!lose.isEmpty()) {
            lose.forEach(m.assigned::remove);
            m.revoking.addAll(lose);
            m.revokeDeadlineMs = nowMs + Math.max(1, m.rebalanceTimeoutMs);
            return; // the epoch stays until the member confirms
        }
        Set<TopicPartition> heldByOthers = new HashSet<>();
        for (Member other : members.values()) {
            if (other != m) {
                heldByOthers.addAll(other.assigned);
                heldByOthers.addAll(other.revoking);
            }
        }
        for (TopicPartition tp : goal) {
            if (!heldByOthers.contains(tp)) {
                m.assigned.add(tp);
            }
        }
        takeAssignmentEpoch(m);
    }

    /**
     * Whether {@code a} and {@code b} hold the same partitions. A member's assignment, its target and what it reports
     * owning are sorted sets in {@link ServerAssignors#ORDER}: two of them are compared in one walk of both, not with
     * a lookup per partition (a steady heartbeat compares a member's whole assignment twice).
     */
    static boolean samePartitions(Set<TopicPartition> a, Set<TopicPartition> b) {
        if (a == b) {
            return true;
        }
        if (a.size() != b.size()) {
            return false;
        }
        if (a instanceof SortedSet<TopicPartition> x && x.comparator() == ServerAssignors.ORDER
                && b instanceof SortedSet<TopicPartition> y && y.comparator() == ServerAssignors.ORDER) {
            Iterator<TopicPartition> other = y.iterator();
            for (TopicPartition tp : x) {
                if (!tp.equals(other.next())) {
                    return false;
                }
            }
            return true;
        }
        return a.equals(b);
    }

    private void takeAssignmentEpoch(Member m) {
        if (m.epoch != assignmentEpoch) {
            m.previousEpoch = m.epoch;
            m.epoch = assignmentEpoch;
        }
    }

    // ---------------------------------------------------------------- classic members (mixed groups)

    /**
     * JoinGroup of a classic consumer into this group (Kafka 4's mixed groups, for rolling upgrades and downgrades
     * between the protocols): its subscription and owned partitions are read from the protocol metadata it sent, it is
     * reconciled like any member (its member epoch is its generation), and it is answered at once, as a follower: the
     * server assigns, and SyncGroup returns its assignment.
     */
    org.apache.kafka.common.message.JoinGroupResponseData classicJoin(
            String memberId, String protocolName, byte[] metadata, int sessionTimeoutMs, int rebalanceTimeoutMs,
            String clientId, String clientHost, Topics topics, long nowMs) {
        org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription sub;
        try {
            sub = org.apache.kafka.clients.consumer.internals.ConsumerProtocol.deserializeSubscription(
                    java.nio.ByteBuffer.wrap(metadata));
        } catch (RuntimeException e) {
            return new org.apache.kafka.common.message.JoinGroupResponseData()
                    .setErrorCode(Errors.INCONSISTENT_GROUP_PROTOCOL.code()).setMemberId(memberId).setGenerationId(-1)
                    .setProtocolName(null).setLeader("");
        }
        Member existing = members.get(memberId);
        Set<TopicPartition> owned = new TreeSet<>(ServerAssignors.ORDER);
        owned.addAll(sub.ownedPartitions()); // eager consumers rejoin owning nothing, cooperative ones say what they own
        Reply r = heartbeat(new Heartbeat(memberId, existing == null ? 0 : existing.epoch, null, sub.rackId().orElse(null),
                rebalanceTimeoutMs, sub.topics(), null, null, owned, clientId, clientHost, sessionTimeoutMs), topics, nowMs);
        if (r.error() != Errors.NONE) {
            return new org.apache.kafka.common.message.JoinGroupResponseData().setErrorCode(r.error().code())
                    .setMemberId(memberId).setGenerationId(-1).setProtocolName(null).setLeader("");
        }
        Member m = members.get(memberId);
        m.classicProtocol = protocolName;
        return new org.apache.kafka.common.message.JoinGroupResponseData().setMemberId(memberId)
                .setGenerationId(m.epoch).setProtocolType("consumer").setProtocolName(protocolName).setLeader("");
    }

    /** SyncGroup of a classic member: its current assignment, in the consumer protocol's encoding. */
    org.apache.kafka.common.message.SyncGroupResponseData classicSync(String memberId, int generation) {
        Member m = members.get(memberId);
        Errors error = m == null || m.classicProtocol == null ? Errors.UNKNOWN_MEMBER_ID
                : generation != m.epoch ? Errors.ILLEGAL_GENERATION : Errors.NONE;
        if (error != Errors.NONE) {
            return new org.apache.kafka.common.message.SyncGroupResponseData().setErrorCode(error.code())
                    .setAssignment(new byte[0]);
        }
        java.nio.ByteBuffer bytes = org.apache.kafka.clients.consumer.internals.ConsumerProtocol.serializeAssignment(
                new org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment(List.copyOf(m.assigned)));
        byte[] out = new byte[bytes.remaining()];
        bytes.get(out);
        return new org.apache.kafka.common.message.SyncGroupResponseData().setProtocolType("consumer")
                .setProtocolName(m.classicProtocol).setAssignment(out);
    }

    /**
     * Heartbeat of a classic member: REBALANCE_IN_PROGRESS while it must give up partitions or can be given more (it
     * then rejoins, which reconciles it), else NONE.
     */
    Errors classicHeartbeat(String memberId, int generation, Topics topics, long nowMs) {
        Member m = members.get(memberId);
        if (m == null || m.classicProtocol == null) {
            return Errors.UNKNOWN_MEMBER_ID;
        }
        if (generation != m.epoch) {
            return Errors.ILLEGAL_GENERATION;
        }
        m.lastHeartbeatMs = nowMs;
        if (metadataMoved(topics)) {
            groupEpoch++;
        }
        if (assignmentEpoch < groupEpoch) {
            computeTarget(topics);
        }
        return !m.revoking.isEmpty() || !samePartitions(m.assigned, targetOf(memberId)) ? Errors.REBALANCE_IN_PROGRESS
                : Errors.NONE;
    }

    /** LeaveGroup of a classic member. */
    Errors classicLeave(String memberId) {
        if (members.remove(memberId) == null) {
            return Errors.UNKNOWN_MEMBER_ID;
        }
        groupEpoch++;
        return Errors.NONE;
    }

    /**
     * Adopts the members of a stable classic consumer group when its first consumer-protocol member arrives (the
     * online upgrade): each keeps its assignment and generation as its member epoch, and is reconciled at its next
     * heartbeat, which asks it to rejoin.
     */
    static ConsumerGroup fromClassic(String groupId, int generation, String protocolName,
                                     Map<String, byte[]> subscriptions, Map<String, byte[]> assignments,
                                     Map<String, int[]> timeouts, Topics topics, long nowMs) {
        ConsumerGroup g = new ConsumerGroup(groupId);
        Map<String, Set<TopicPartition>> current = new TreeMap<>();
        for (Map.Entry<String, byte[]> e : subscriptions.entrySet()) {
            Member m = new Member(e.getKey());
            m.classicProtocol = protocolName;
            m.epoch = generation;
            m.previousEpoch = generation;
            m.subscribe(org.apache.kafka.clients.consumer.internals.ConsumerProtocol
                    .deserializeSubscription(java.nio.ByteBuffer.wrap(e.getValue())).topics());
            byte[] a = assignments.get(e.getKey());
            if (a != null && a.length > 0) {
                m.assigned.addAll(org.apache.kafka.clients.consumer.internals.ConsumerProtocol
                        .deserializeAssignment(java.nio.ByteBuffer.wrap(a)).partitions());
            }
            m.sessionTimeoutMs = timeouts.get(e.getKey())[0];
            m.rebalanceTimeoutMs = timeouts.get(e.getKey())[1];
            m.lastHeartbeatMs = nowMs;
            g.members.put(m.memberId, m);
            current.put(m.memberId, Set.copyOf(m.assigned));
        }
        g.groupEpoch = generation;
        g.assignmentEpoch = generation;
        g.target = current;
        g.targetMetadata = metadata(g.subscribed(topics), topics);
        return g;
    }

    /**
     * Removes members whose session expired or that did not revoke in time; returns whether any went (the group epoch
     * then moved, and the others are given what they held at their next heartbeats).
     */
    boolean expire(long nowMs) {
        boolean any = false;
        for (Member m : List.copyOf(members.values())) {
            boolean sessionOver = nowMs - m.lastHeartbeatMs > m.sessionTimeoutMs;
            boolean revokeOver = !m.revoking.isEmpty() && nowMs > m.revokeDeadlineMs;
            if (sessionOver || revokeOver) {
                members.remove(m.memberId);
                any = true;
            }
        }
        if (any) {
            groupEpoch++;
        }
        return any;
    }

    /**
     * Checks an offset commit's member and epoch (OffsetCommit v9+ carries the member epoch where classic clients send
     * the generation): NONE when it may proceed.
     */
    Errors validateCommit(String memberId, int memberEpoch) {
        if ((memberId == null || memberId.isEmpty()) && memberEpoch < 0) {
            return members.isEmpty() ? Errors.NONE : Errors.UNKNOWN_MEMBER_ID;
        }
        Member m = members.get(memberId);
        if (m == null) {
            return Errors.UNKNOWN_MEMBER_ID;
        }
        if (memberEpoch > m.epoch) {
            return Errors.FENCED_MEMBER_EPOCH;
        }
        if (memberEpoch < m.epoch && memberEpoch != m.previousEpoch) {
            return Errors.STALE_MEMBER_EPOCH;
        }
        return Errors.NONE;
    }
}
