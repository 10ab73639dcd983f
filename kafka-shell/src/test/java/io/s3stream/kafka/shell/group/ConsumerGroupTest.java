package io.s3stream.kafka.shell.group;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The KIP-848 reconciliation against a model of well-behaved clients, over seeded random joins, leaves, subscription
 * changes, topic growth and heartbeats in random order: no partition is ever held (assigned or being revoked) by two
 * members, and once the group is left alone every member converges to its target, the targets cover every
 * subscribed partition exactly once, and the uniform assignor balances them within one.
 */
class ConsumerGroupTest {
    /** A client: it owns what the coordinator last assigned it, and reports that in every heartbeat. */
    static final class Client {
        final String id;
        int epoch;
        Set<TopicPartition> owned = new TreeSet<>(ServerAssignors.ORDER);
        List<String> topics;

        Client(String id, List<String> topics) {
            this.id = id;
            this.topics = topics;
        }
    }

    static class Cluster implements ConsumerGroup.Topics {
        final Map<String, Integer> partitions = new TreeMap<>();

        @Override
        public int partitions(String topic) {
            return partitions.getOrDefault(topic, -1);
        }

        private Map<String, Integer> lastLayout = Map.of();
        private long layoutVersion;

        @Override
        public Set<String> names() {
            return Set.copyOf(partitions.keySet());
        }

        /** Moves on whenever the names or counts differ from the last call's, as the registry's version does. */
        @Override
        public long layoutVersion() {
            if (!partitions.equals(lastLayout)) {
                lastLayout = Map.copyOf(partitions);
                layoutVersion++;
            }
            return layoutVersion;
        }
    }

    private static ConsumerGroup.Reply beat(ConsumerGroup g, Cluster cluster, Client c, boolean sendSubscription,
                                            long now) {
        ConsumerGroup.Reply r = g.heartbeat(new ConsumerGroup.Heartbeat(c.id, c.epoch, null, null, 60_000,
                sendSubscription || c.epoch == 0 ? c.topics : null, null, null, Set.copyOf(c.owned), "client", "host",
                45_000), cluster, now);
        assertThat(r.error()).as(r.message()).isEqualTo(Errors.NONE);
        c.epoch = r.memberEpoch();
        if (r.assignment() != null) {
            c.owned = new TreeSet<>(ServerAssignors.ORDER);
            c.owned.addAll(r.assignment());
        }
        return r;
    }

    private static void assertNoPartitionHeldTwice(ConsumerGroup g, Map<String, Client> clients) {
        Set<TopicPartition> held = new HashSet<>();
        for (ConsumerGroup.Member m : g.members.values()) {
            for (TopicPartition tp : m.assigned) {
                assertThat(held.add(tp)).as("%s held twice", tp).isTrue();
            }
            for (TopicPartition tp : m.revoking) {
                assertThat(held.add(tp)).as("%s held twice (revoking)", tp).isTrue();
            }
        }
        Set<TopicPartition> owned = new HashSet<>();
        for (Client c : clients.values()) {
            for (TopicPartition tp : c.owned) {
                assertThat(owned.add(tp)).as("%s owned by two clients", tp).isTrue();
            }
        }
    }

    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
    void neverTwoOwnersAndConvergesToABalancedTarget(long seed) {
        Random r = new Random(seed);
        Cluster cluster = new Cluster();
        cluster.partitions.put("a", 1 + r.nextInt(8));
        cluster.partitions.put("b", 1 + r.nextInt(8));
        ConsumerGroup g = new ConsumerGroup("g");
        Map<String, Client> clients = new TreeMap<>();
        long now = 0;
        int next = 0;
        for (int step = 0; step < 300; step++) {
            now += 10;
            int k = r.nextInt(20);
            if (k == 0 || clients.isEmpty()) {
                List<String> topics = r.nextInt(3) == 0 ? List.of("a") : List.of("a", "b");
                Client c = new Client("m" + next++, topics);
                clients.put(c.id, c);
                beat(g, cluster, c, true, now);
            } else if (k == 1 && clients.size() > 1) {
                Client c = new ArrayList<>(clients.values()).get(r.nextInt(clients.size()));
                c.epoch = -1;
                beat(g, cluster, c, false, now);
                clients.remove(c.id);
            } else if (k == 2) {
                Client c = new ArrayList<>(clients.values()).get(r.nextInt(clients.size()));
                c.topics = r.nextBoolean() ? List.of("b") : List.of("a", "b");
                beat(g, cluster, c, true, now);
            } else if (k == 3) {
                cluster.partitions.merge(r.nextBoolean() ? "a" : "b", 1, Integer::sum);
            } else {
                Client c = new ArrayList<>(clients.values()).get(r.nextInt(clients.size()));
                beat(g, cluster, c, false, now);
            }
            assertNoPartitionHeldTwice(g, clients);
        }
        // Left alone: everyone heartbeats until nothing changes.
        for (int round = 0; round < 10; round++) {
            for (Client c : clients.values()) {
                now += 10;
                beat(g, cluster, c, false, now);
                assertNoPartitionHeldTwice(g, clients);
            }
        }
        assertThat(g.state()).isEqualTo("Stable");
        Set<TopicPartition> all = new HashSet<>();
        SortedMap<String, Integer> loads = new TreeMap<>();
        for (Client c : clients.values()) {
            assertThat(c.owned).as("member %s reached its target", c.id).isEqualTo(g.targetOf(c.id));
            assertThat(c.epoch).isEqualTo(g.assignmentEpoch);
            for (TopicPartition tp : c.owned) {
                assertThat(c.topics).contains(tp.topic());
                assertThat(all.add(tp)).isTrue();
            }
            loads.put(c.id, c.owned.size());
        }
        Set<String> subscribed = new HashSet<>();
        clients.values().forEach(c -> subscribed.addAll(c.topics));
        int expected = subscribed.stream().mapToInt(cluster::partitions).sum();
        assertThat(all).hasSize(expected);
        boolean homogeneous = clients.values().stream().map(c -> c.topics).distinct().count() == 1;
        if (homogeneous) {
            assertThat(loads.values().stream().mapToInt(Integer::intValue).max().orElse(0)
                    - loads.values().stream().mapToInt(Integer::intValue).min().orElse(0)).isLessThanOrEqualTo(1);
        }
    }

    @Test
    void epochsFenceStaleMembersAndCommitsCheckTheMemberEpoch() {
        Cluster cluster = new Cluster();
        cluster.partitions.put("t", 2);
        ConsumerGroup g = new ConsumerGroup("g");
        Client a = new Client("a", List.of("t"));
        beat(g, cluster, a, true, 0);
        assertThat(a.owned).hasSize(2);
        assertThat(g.validateCommit("a", a.epoch)).isEqualTo(Errors.NONE);
        assertThat(g.validateCommit("a", a.epoch + 1)).isEqualTo(Errors.FENCED_MEMBER_EPOCH);
        assertThat(g.validateCommit("nobody", 1)).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
        ConsumerGroup.Reply stale = g.heartbeat(new ConsumerGroup.Heartbeat("a", a.epoch + 5, null, null, -1, null,
                null, null, null, "c", "h", 45_000), cluster, 1);
        assertThat(stale.error()).isEqualTo(Errors.FENCED_MEMBER_EPOCH);
        ConsumerGroup.Reply unknown = g.heartbeat(new ConsumerGroup.Heartbeat("zz", 3, null, null, -1, null,
                null, null, null, "c", "h", 45_000), cluster, 1);
        assertThat(unknown.error()).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
        ConsumerGroup.Reply badAssignor = g.heartbeat(new ConsumerGroup.Heartbeat("a", a.epoch, null, null, -1, null,
                null, "sticky-ish", null, "c", "h", 45_000), cluster, 1);
        assertThat(badAssignor.error()).isEqualTo(Errors.UNSUPPORTED_ASSIGNOR);
        // A member silent past its session timeout is removed; the other gets its partitions.
        Client b = new Client("b", List.of("t"));
        beat(g, cluster, b, true, 2);
        beat(g, cluster, a, false, 3);
        beat(g, cluster, a, false, 4);
        beat(g, cluster, b, false, 5);
        assertThat(a.owned).hasSize(1);
        assertThat(b.owned).hasSize(1);
        assertThat(g.expire(50_000)).isTrue();
        assertThat(g.members).isEmpty();
    }

    @Test
    void rangeAssignsContiguousRangesPerTopic() {
        SortedMap<String, Set<String>> subs = new TreeMap<>(Map.of("m1", Set.of("t"), "m2", Set.of("t"),
                "m3", Set.of("t")));
        Map<String, Set<TopicPartition>> out = ServerAssignors.range(subs, Map.of("t", 7));
        assertThat(out.get("m1")).extracting(TopicPartition::partition).containsExactly(0, 1, 2);
        assertThat(out.get("m2")).extracting(TopicPartition::partition).containsExactly(3, 4);
        assertThat(out.get("m3")).extracting(TopicPartition::partition).containsExactly(5, 6);
    }

    @Test
    void uniformKeepsWhatMembersHadWhenANewMemberJoins() {
        SortedMap<String, Set<String>> two = new TreeMap<>(Map.of("m1", Set.of("t"), "m2", Set.of("t")));
        Map<String, Set<TopicPartition>> before = ServerAssignors.uniform(two, Map.of("t", 6), Map.of());
        SortedMap<String, Set<String>> three = new TreeMap<>(two);
        three.put("m3", Set.of("t"));
        Map<String, Set<TopicPartition>> after = ServerAssignors.uniform(three, Map.of("t", 6), before);
        assertThat(after.get("m3")).hasSize(2);
        for (String m : List.of("m1", "m2")) {
            assertThat(before.get(m)).containsAll(after.get(m)); // nobody got a partition another lost
            assertThat(after.get(m)).hasSize(2);
        }
        Map<String, Set<TopicPartition>> copy = new HashMap<>(after);
        assertThat(ServerAssignors.uniform(three, Map.of("t", 6), copy)).isEqualTo(after); // stable
    }

    @Test
    void aRegularExpressionMatchesOnlyTopicsTheMemberMayDescribe() {
        Cluster cluster = new Cluster();
        cluster.partitions.put("orders", 2);
        cluster.partitions.put("ordinals", 1);
        cluster.partitions.put("payments", 1);
        ConsumerGroup g = new ConsumerGroup("g");
        Set<String> visible = new HashSet<>(Set.of("orders", "payments"));
        int[] epoch = {0};
        Set<TopicPartition> owned = new TreeSet<>(ServerAssignors.ORDER);
        Runnable beat = () -> {
            ConsumerGroup.Reply r = g.heartbeat(new ConsumerGroup.Heartbeat("m", epoch[0], null, null, 60_000,
                    epoch[0] == 0 ? List.of() : null, epoch[0] == 0 ? "ord.*" : null, null, Set.copyOf(owned),
                    "client", "host", 45_000, Set.copyOf(visible)::contains), cluster, 0);
            assertThat(r.error()).as(r.message()).isEqualTo(Errors.NONE);
            epoch[0] = r.memberEpoch();
            if (r.assignment() != null) {
                owned.clear();
                owned.addAll(r.assignment());
            }
        };
        beat.run();
        beat.run();
        assertThat(owned).containsExactly(new TopicPartition("orders", 0), new TopicPartition("orders", 1));
        int before = g.groupEpoch;
        visible.add("ordinals"); // an ACL grant: seen at the member's next heartbeat
        beat.run();
        beat.run();
        assertThat(g.groupEpoch).isGreaterThan(before);
        assertThat(owned).contains(new TopicPartition("ordinals", 0)).hasSize(3);
    }

    /** A cluster that counts how often the group asks it for every name. */
    static final class CountingCluster extends Cluster {
        int namesCalls;
        int partitionsCalls;

        @Override
        public Set<String> names() {
            namesCalls++;
            return super.names();
        }

        @Override
        public int partitions(String topic) {
            partitionsCalls++;
            return super.partitions(topic);
        }
    }

    /** The walk over two sorted sets answers as {@link Set#equals} does, for sorted and unsorted sets alike. */
    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {1, 2, 3, 4, 5})
    void samePartitionsAnswersAsSetEquals(long seed) {
        Random r = new Random(seed);
        for (int i = 0; i < 2_000; i++) {
            Set<TopicPartition> a = randomPartitions(r);
            Set<TopicPartition> b = r.nextInt(3) == 0 ? randomPartitions(r) : new HashSet<>(a);
            if (r.nextBoolean() && !b.isEmpty()) {
                TopicPartition some = b.iterator().next();
                b.remove(some);
                b.add(r.nextBoolean() ? some : new TopicPartition(some.topic(), some.partition() + 1));
            }
            Set<TopicPartition> x = sortedOrNot(r, a);
            Set<TopicPartition> y = sortedOrNot(r, b);
            assertThat(ConsumerGroup.samePartitions(x, y)).as("%s vs %s", x, y).isEqualTo(a.equals(b));
        }
    }

    private static Set<TopicPartition> randomPartitions(Random r) {
        Set<TopicPartition> out = new HashSet<>();
        int n = r.nextInt(6);
        for (int i = 0; i < n; i++) {
            out.add(new TopicPartition("t-" + r.nextInt(3), r.nextInt(3)));
        }
        return out;
    }

    private static Set<TopicPartition> sortedOrNot(Random r, Set<TopicPartition> partitions) {
        if (r.nextBoolean()) {
            return Set.copyOf(partitions);
        }
        Set<TopicPartition> sorted = new TreeSet<>(ServerAssignors.ORDER);
        sorted.addAll(partitions);
        return sorted;
    }

    @Test
    void aSteadyHeartbeatLooksUpNoPartitionCountsAndAGrownTopicIsAssigned() {
        CountingCluster cluster = new CountingCluster();
        List<String> subscribed = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            cluster.partitions.put("t-" + i, 2);
            subscribed.add("t-" + i);
        }
        ConsumerGroup g = new ConsumerGroup("g");
        List<Client> members = new ArrayList<>();
        long now = 0;
        for (int i = 0; i < 4; i++) {
            Client c = new Client("m" + i, subscribed);
            members.add(c);
            beat(g, cluster, c, true, now);
        }
        for (int round = 0; round < 5; round++) {
            for (Client c : members) {
                beat(g, cluster, c, false, now += 10);
            }
        }
        assertThat(g.state()).isEqualTo("Stable");
        int calls = cluster.partitionsCalls;
        int epoch = g.groupEpoch;
        for (int round = 0; round < 10; round++) {
            for (Client c : members) {
                beat(g, cluster, c, false, now += 10);
            }
        }
        assertThat(cluster.partitionsCalls).as("steady heartbeats look up no partition count").isEqualTo(calls);
        assertThat(g.groupEpoch).isEqualTo(epoch);

        cluster.partitions.put("t-7", 5);
        for (int round = 0; round < 5; round++) {
            for (Client c : members) {
                beat(g, cluster, c, false, now += 10);
            }
        }
        assertThat(g.groupEpoch).as("the growth is a new group epoch, once").isEqualTo(epoch + 1);
        assertThat(g.state()).isEqualTo("Stable");
        Set<TopicPartition> owned = new HashSet<>();
        members.forEach(c -> owned.addAll(c.owned));
        assertThat(owned).hasSize(103).contains(new TopicPartition("t-7", 4));
        calls = cluster.partitionsCalls;
        for (Client c : members) {
            beat(g, cluster, c, false, now += 10);
        }
        assertThat(cluster.partitionsCalls).as("steady again").isEqualTo(calls);
    }

    @Test
    void aRegularExpressionIsMatchedAgainOnlyWhenATopicComesOrGoes() {
        CountingCluster cluster = new CountingCluster();
        for (int i = 0; i < 20; i++) {
            cluster.partitions.put("logs-" + i, 1);
            cluster.partitions.put("metrics-" + i, 1);
        }
        ConsumerGroup g = new ConsumerGroup("g");
        List<Client> members = new ArrayList<>();
        long now = 0;
        for (int i = 0; i < 5; i++) {
            Client c = new Client("m" + i, null);
            members.add(c);
            regexBeat(g, cluster, c, "logs-.*", now);
        }
        for (int round = 0; round < 5; round++) {
            for (Client c : members) {
                regexBeat(g, cluster, c, null, now += 10);
            }
        }
        assertThat(g.subscribedTopics(cluster)).hasSize(20).allMatch(t -> t.startsWith("logs-"));
        int calls = cluster.namesCalls;
        for (int round = 0; round < 10; round++) {
            for (Client c : members) {
                regexBeat(g, cluster, c, null, now += 10);
            }
        }
        assertThat(cluster.namesCalls).as("steady heartbeats match nothing again").isEqualTo(calls);

        cluster.partitions.put("logs-new", 3);
        cluster.partitions.remove("logs-0");
        for (int round = 0; round < 5; round++) {
            for (Client c : members) {
                regexBeat(g, cluster, c, null, now += 10);
            }
        }
        assertThat(cluster.namesCalls - calls).as("one match per member after the change").isEqualTo(members.size());
        assertThat(g.subscribedTopics(cluster)).contains("logs-new").doesNotContain("logs-0").hasSize(20);
        Set<TopicPartition> owned = new HashSet<>();
        members.forEach(c -> owned.addAll(c.owned));
        assertThat(owned).contains(new TopicPartition("logs-new", 2)).noneMatch(tp -> tp.topic().equals("logs-0"))
                .hasSize(22);
    }

    /** A heartbeat of a member subscribed by regular expression ({@code regex} when it joins or changes it). */
    private static void regexBeat(ConsumerGroup g, Cluster cluster, Client c, String regex, long now) {
        ConsumerGroup.Reply r = g.heartbeat(new ConsumerGroup.Heartbeat(c.id, c.epoch, null, null, 60_000,
                c.epoch == 0 ? List.of() : null, regex, null, Set.copyOf(c.owned), "client", "host", 45_000),
                cluster, now);
        assertThat(r.error()).as(r.message()).isEqualTo(Errors.NONE);
        c.epoch = r.memberEpoch();
        if (r.assignment() != null) {
            c.owned = new TreeSet<>(ServerAssignors.ORDER);
            c.owned.addAll(r.assignment());
        }
    }

    /**
     * The group's cached resolutions never go stale: over seeded random topic creations and deletions, partition
     * growth, members joining, leaving and changing between names and regular expressions, after every heartbeat the
     * group's subscribed topics equal what the members' subscriptions resolve to against the cluster at that moment,
     * and its target assigns every partition of them (grown ones included) and nothing else.
     */
    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
    void cachedSubscriptionsFollowEveryChange(long seed) {
        Random r = new Random(seed);
        Cluster cluster = new Cluster();
        String[] pool = {"a-1", "a-2", "a-3", "b-1", "b-2", "c-1", "__internal-a"};
        String[] regexes = {"a-.*", "b-.*", ".*-1", "c-.*|a-1", ".*"};
        cluster.partitions.put("a-1", 2);
        ConsumerGroup g = new ConsumerGroup("g");
        Map<String, Client> clients = new TreeMap<>();
        Map<String, String> regexOf = new HashMap<>();
        long now = 0;
        int next = 0;
        for (int step = 0; step < 400; step++) {
            now += 10;
            int k = r.nextInt(12);
            String topic = pool[r.nextInt(pool.length)];
            if (k == 0 || clients.isEmpty()) {
                Client c = new Client("m" + next++, List.of());
                clients.put(c.id, c);
                if (r.nextBoolean()) {
                    c.topics = List.of(pool[r.nextInt(pool.length)], pool[r.nextInt(pool.length)]);
                    beat(g, cluster, c, true, now);
                } else {
                    regexOf.put(c.id, regexes[r.nextInt(regexes.length)]);
                    regexBeat(g, cluster, c, regexOf.get(c.id), now);
                }
            } else if (k == 1 && clients.size() > 1) {
                Client c = new ArrayList<>(clients.values()).get(r.nextInt(clients.size()));
                c.epoch = -1;
                beat(g, cluster, c, false, now);
                clients.remove(c.id);
                regexOf.remove(c.id);
            } else if (k == 2) {
                Client c = new ArrayList<>(clients.values()).get(r.nextInt(clients.size()));
                if (regexOf.containsKey(c.id)) {
                    regexOf.put(c.id, regexes[r.nextInt(regexes.length)]);
                    regexBeat(g, cluster, c, regexOf.get(c.id), now);
                } else {
                    c.topics = List.of(pool[r.nextInt(pool.length)]);
                    beat(g, cluster, c, true, now);
                }
            } else if (k == 3) {
                cluster.partitions.putIfAbsent(topic, 1 + r.nextInt(3));
            } else if (k == 4) {
                cluster.partitions.remove(topic);
            } else if (k == 5) {
                cluster.partitions.computeIfPresent(topic, (t, n) -> n + 1);
            } else {
                Client c = new ArrayList<>(clients.values()).get(r.nextInt(clients.size()));
                if (regexOf.containsKey(c.id)) {
                    regexBeat(g, cluster, c, null, now);
                } else {
                    beat(g, cluster, c, false, now);
                }
                Set<String> expected = new TreeSet<>();
                for (Client m : clients.values()) {
                    String regex = regexOf.get(m.id);
                    for (String t : cluster.partitions.keySet()) {
                        boolean byRegex = regex != null && !t.startsWith("__") && t.matches(regex);
                        if (byRegex || regex == null && m.topics.contains(t)) {
                            expected.add(t);
                        }
                    }
                }
                assertThat(g.subscribedTopics(cluster)).as("step %d", step).isEqualTo(expected);
                Set<TopicPartition> targeted = new HashSet<>();
                for (Client m : clients.values()) {
                    targeted.addAll(g.targetOf(m.id));
                }
                Set<TopicPartition> every = new HashSet<>();
                expected.forEach(t -> IntStream.range(0, cluster.partitions(t))
                        .forEach(p -> every.add(new TopicPartition(t, p))));
                assertThat(targeted).as("step %d: the target covers every subscribed partition, no other", step)
                        .isEqualTo(every);
            }
            assertNoPartitionHeldTwice(g, clients);
        }
    }
}
