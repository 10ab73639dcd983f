package io.s3stream.kafka.shell.group;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
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

        /** Every topic's name (for regular-expression subscriptions). */
        Set<String> names();
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
        List<String> subscribedTopicNames = List.of();
        String subscribedTopicRegex;
        /** Partitions the member may use now. */
        final Set<TopicPartition> assigned = new TreeSet<>(ServerAssignors.ORDER);
        /** Partitions the member was asked to give up and has not yet confirmed giving up. */
        final Set<TopicPartition> revoking = new TreeSet<>(ServerAssignors.ORDER);
        long revokeDeadlineMs;
        long lastHeartbeatMs;
        int sessionTimeoutMs;
        /** The assignment last sent to the member; null when it must be sent (again). */
        Set<TopicPartition> sent;

        Member(String memberId) {
            this.memberId = memberId;
        }

        /** The member's subscription resolved against the existing topics. */
        Set<String> subscribedTopics(Topics topics) {
            Set<String> out = new TreeSet<>();
            for (String t : subscribedTopicNames) {
                if (topics.partitions(t) >= 0) {
                    out.add(t);
                }
            }
            if (subscribedTopicRegex != null) {
                Pattern p = Pattern.compile(subscribedTopicRegex);
                for (String t : topics.names()) {
                    if (!t.startsWith("__") && p.matcher(t).matches()) {
                        out.add(t);
                    }
                }
            }
            return out;
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
     * @param owned the partitions the member reports owning, resolved to names, or null
     */
    record Heartbeat(String memberId, int memberEpoch, String instanceId, String rackId, int rebalanceTimeoutMs,
                     List<String> subscribedTopicNames, String subscribedTopicRegex, String serverAssignor,
                     Set<TopicPartition> owned, String clientId, String clientHost, int sessionTimeoutMs) {
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
        Set<String> out = new HashSet<>();
        members.values().forEach(m -> out.addAll(m.subscribedTopics(topics)));
        return out;
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
            m.subscribedTopicNames = List.copyOf(hb.subscribedTopicNames());
            groupEpoch++;
        }
        String regex = hb.subscribedTopicRegex() == null ? m.subscribedTopicRegex
                : hb.subscribedTopicRegex().isEmpty() ? null : hb.subscribedTopicRegex();
        if (!Objects.equals(regex, m.subscribedTopicRegex)) {
            m.subscribedTopicRegex = regex;
            groupEpoch++;
        }
        if (hb.serverAssignor() != null && !hb.serverAssignor().equals(assignor)) {
            assignor = hb.serverAssignor();
            groupEpoch++;
        }
        if (!metadata(topics).equals(targetMetadata)) {
            groupEpoch++; // a subscribed topic appeared, grew or went
        }
        if (assignmentEpoch < groupEpoch) {
            computeTarget(topics);
        }
        if (hb.owned() != null) {
            if (!m.revoking.isEmpty() && m.revoking.stream().noneMatch(hb.owned()::contains)) {
                m.revoking.clear(); // the member confirmed it gave them up
            }
            if (!hb.owned().equals(m.assigned)) {
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

    /** Partition counts of every topic some member subscribes to. */
    private Map<String, Integer> metadata(Topics topics) {
        Map<String, Integer> out = new TreeMap<>();
        for (Member m : members.values()) {
            for (String t : m.subscribedTopics(topics)) {
                out.put(t, topics.partitions(t));
            }
        }
        return out;
    }

    private void computeTarget(Topics topics) {
        SortedMap<String, Set<String>> subscriptions = new TreeMap<>();
        members.values().forEach(m -> subscriptions.put(m.memberId, m.subscribedTopics(topics)));
        targetMetadata = metadata(topics);
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
        if (m.epoch != assignmentEpoch) {
            m.previousEpoch = m.epoch;
            m.epoch = assignmentEpoch;
        }
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
