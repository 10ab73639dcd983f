package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The consumer group protocol of KIP-848 ({@code group.protocol=consumer}) with the Java consumer: a member joins and
 * gets every partition from the server-side assignor, a second member joins and the partitions split without any
 * partition owned twice, commits are accepted with the member epoch, a member leaving hands its partitions back,
 * a regular-expression subscription follows new topics, a topic that grows has its new partitions assigned, and Admin
 * and the CLI see the group.
 */
@Timeout(120)
class ConsumerGroupProtocolTest {
    static final Map<String, String> FAST = Map.of("group.consumer.heartbeat.interval.ms", "300",
            "group.consumer.session.timeout.ms", "6000");

    private static KafkaConsumer<String, String> consumer(ShellFixture fx, String group, Map<String, Object> extra) {
        Map<String, Object> m = new java.util.HashMap<>(Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false));
        m.putAll(extra);
        return fx.consumer(group, m);
    }

    private static void pollUntil(BooleanSupplier done, List<KafkaConsumer<String, String>> consumers) {
        long deadline = System.currentTimeMillis() + 30_000;
        while (!done.getAsBoolean() && System.currentTimeMillis() < deadline) {
            consumers.forEach(c -> c.poll(Duration.ofMillis(100)));
        }
        assertThat(done.getAsBoolean()).as("condition reached in time").isTrue();
    }

    /** Records which partitions each consumer owns, from its rebalance callbacks. */
    static final class Owned implements ConsumerRebalanceListener {
        final Set<TopicPartition> now = ConcurrentHashMap.newKeySet();

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            now.removeAll(partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            now.addAll(partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            now.removeAll(partitions);
        }
    }

    @Test
    void membersShareThePartitionsAndCommitWithTheirEpoch() throws Exception {
        try (ShellFixture fx = new ShellFixture(FAST); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("kip848", 4, (short) 1))).all().get();
            try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
                for (int i = 0; i < 400; i++) {
                    p.send(new ProducerRecord<>("kip848", i % 4, "k" + i, "v" + i));
                }
            }
            Owned ownedA = new Owned();
            Owned ownedB = new Owned();
            try (KafkaConsumer<String, String> a = consumer(fx, "g848", Map.of())) {
                KafkaConsumer<String, String> b = consumer(fx, "g848", Map.of());
                a.subscribe(List.of("kip848"), ownedA);
                Set<String> seen = new HashSet<>();
                long deadline = System.currentTimeMillis() + 30_000;
                while (seen.size() < 400 && System.currentTimeMillis() < deadline) {
                    a.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                }
                assertThat(seen).hasSize(400);
                assertThat(ownedA.now).hasSize(4);
                a.commitSync(); // OffsetCommit with the member epoch

                b.subscribe(List.of("kip848"), ownedB);
                pollUntil(() -> ownedA.now.size() == 2 && ownedB.now.size() == 2, List.of(a, b));
                Set<TopicPartition> overlap = new HashSet<>(ownedA.now);
                overlap.retainAll(ownedB.now);
                assertThat(overlap).as("no partition owned twice").isEmpty();

                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of("g848")).all().get().get("g848");
                assertThat(d.type()).isEqualTo(GroupType.CONSUMER);
                assertThat(d.groupState()).isEqualTo(GroupState.STABLE);
                assertThat(d.members()).hasSize(2);
                assertThat(admin.listGroups().all().get()).anySatisfy(g -> {
                    assertThat(g.groupId()).isEqualTo("g848");
                    assertThat(g.type()).contains(GroupType.CONSUMER);
                });

                // Commits from both members after the rebalance are accepted.
                try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
                    for (int i = 0; i < 4; i++) {
                        p.send(new ProducerRecord<>("kip848", i, "k", "second-" + i));
                    }
                }
                for (int i = 0; i < 10; i++) {
                    a.poll(Duration.ofMillis(100));
                    b.poll(Duration.ofMillis(100));
                }
                a.commitSync();
                b.commitSync();
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets("g848")
                        .partitionsToOffsetAndMetadata().get();
                assertThat(committed).hasSize(4);
                assertThat(committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum()).isGreaterThanOrEqualTo(400);

                // b leaves: a gets every partition back.
                b.close();
                pollUntil(() -> ownedA.now.size() == 4, List.of(a));
            }
        }
    }

    @Test
    void aPatternSubscriptionFollowsNewTopicsAndTheRangeAssignorIsHonoured() throws Exception {
        try (ShellFixture fx = new ShellFixture(FAST); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("metrics-a", 2, (short) 1))).all().get();
            Owned owned = new Owned();
            try (KafkaConsumer<String, String> c = consumer(fx, "g848-re",
                    // A pattern is matched by the client against its metadata, refreshed this often (as with Kafka).
                    Map.of(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, "range",
                            ConsumerConfig.METADATA_MAX_AGE_CONFIG, 500))) {
                c.subscribe(Pattern.compile("metrics-.*"), owned);
                pollUntil(() -> owned.now.size() == 2, List.of(c));
                admin.createTopics(List.of(new NewTopic("metrics-b", 3, (short) 1))).all().get();
                pollUntil(() -> owned.now.size() == 5, List.of(c));
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of("g848-re")).all().get()
                        .get("g848-re");
                assertThat(d.partitionAssignor()).isEqualTo("range");
            }
        }
    }

    @Test
    void aTopicThatGrowsHasItsNewPartitionsAssigned() throws Exception {
        // The coordinator keeps the partition counts its target was computed from until the registry's layout version
        // moves: CreatePartitions must move it, or the new partitions are never assigned.
        try (ShellFixture fx = new ShellFixture(FAST); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("grows", 2, (short) 1))).all().get();
            Owned one = new Owned();
            Owned two = new Owned();
            try (KafkaConsumer<String, String> a = consumer(fx, "g848-grow", Map.of());
                 KafkaConsumer<String, String> b = consumer(fx, "g848-grow", Map.of())) {
                a.subscribe(List.of("grows"), one);
                b.subscribe(List.of("grows"), two);
                pollUntil(() -> one.now.size() + two.now.size() == 2, List.of(a, b));
                admin.createPartitions(Map.of("grows", NewPartitions.increaseTo(5))).all().get();
                pollUntil(() -> one.now.size() + two.now.size() == 5 && !one.now.isEmpty() && !two.now.isEmpty(),
                        List.of(a, b));
                Set<TopicPartition> all = new HashSet<>(one.now);
                all.addAll(two.now);
                assertThat(all).hasSize(5).contains(new TopicPartition("grows", 4));
            }
        }
    }

    @Test
    void aServerSideRegexFollowsNewTopicsAndItsTopicsAreNamedById() throws Exception {
        // SubscriptionPattern: the coordinator resolves the expression and assigns topics the client has no name for;
        // it asks Metadata for them by topic id (with the empty name, the field's default).
        try (ShellFixture fx = new ShellFixture(FAST); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("logs-a", 2, (short) 1))).all().get();
            try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
                p.send(new ProducerRecord<>("logs-a", 0, "k", "v")).get();
            }
            Owned owned = new Owned();
            try (KafkaConsumer<String, String> c = consumer(fx, "g848-server-re", Map.of())) {
                c.subscribe(new SubscriptionPattern("logs-.*"), owned);
                Set<String> seen = new HashSet<>();
                pollUntil(() -> {
                    c.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                    return owned.now.size() == 2 && seen.contains("v");
                }, List.of());
                admin.createTopics(List.of(new NewTopic("logs-b", 1, (short) 1))).all().get();
                pollUntil(() -> owned.now.size() == 3, List.of(c));
                assertThat(owned.now).contains(new TopicPartition("logs-b", 0));
                assertThat(admin.describeConsumerGroups(List.of("g848-server-re")).all().get().get("g848-server-re")
                        .members()).singleElement().satisfies(m -> assertThat(m.assignment().topicPartitions())
                                .hasSize(3));
            }
        }
    }

    @Test
    void confluentKafkaJoinsWithTheConsumerProtocol() throws Exception {
        ExternalClients.require("confluent-kafka (" + ExternalClients.PYTHON + ")", ExternalClients.PYTHON, "-c",
                "import confluent_kafka");
        String script = java.nio.file.Path.of("src/test/python/confluent_consumer_protocol.py").toAbsolutePath()
                .toString();
        try (ShellFixture fx = new ShellFixture(FAST)) {
            var r = ExternalClients.run(new byte[0], List.of(ExternalClients.PYTHON, script, fx.bootstrap()));
            assertThat(r.exit()).as(r.output()).isZero();
            assertThat(r.output()).contains("confluent-kafka consumer protocol OK");
        }
    }

    @Test
    void groupConfigsAreDescribedAlteredValidatedAndDeletedWithTheGroup() throws Exception {
        try (ShellFixture fx = new ShellFixture(FAST); Admin admin = fx.admin()) {
            var group = new org.apache.kafka.common.config.ConfigResource(
                    org.apache.kafka.common.config.ConfigResource.Type.GROUP, "g-cfg");
            var described = admin.describeConfigs(List.of(group)).all().get().get(group);
            assertThat(described.get("consumer.session.timeout.ms").value()).isEqualTo("6000"); // the broker's
            assertThat(described.get("consumer.heartbeat.interval.ms").value()).isEqualTo("300");
            admin.incrementalAlterConfigs(Map.of(group, List.of(new org.apache.kafka.clients.admin.AlterConfigOp(
                    new org.apache.kafka.clients.admin.ConfigEntry("consumer.heartbeat.interval.ms", "250"),
                    org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET)))).all().get();
            var entry = admin.describeConfigs(List.of(group)).all().get().get(group).get("consumer.heartbeat.interval.ms");
            assertThat(entry.value()).isEqualTo("250");
            assertThat(entry.source()).isEqualTo(org.apache.kafka.clients.admin.ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG);
            for (var bad : List.of(Map.entry("consumer.heartbeat.interval.ms", "9000"), // not below the session timeout
                    Map.entry("consumer.session.timeout.ms", "soon"), Map.entry("share.record.lock.duration.ms", "1"))) {
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> admin.incrementalAlterConfigs(Map.of(group,
                        List.of(new org.apache.kafka.clients.admin.AlterConfigOp(
                                new org.apache.kafka.clients.admin.ConfigEntry(bad.getKey(), bad.getValue()),
                                org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET)))).all().get())
                        .as(bad.toString()).cause()
                        .isInstanceOf(org.apache.kafka.common.errors.InvalidConfigurationException.class);
            }
            // The group runs with it, and deleting the group deletes its configs.
            try (KafkaConsumer<String, String> c = consumer(fx, "g-cfg", Map.of())) {
                admin.createTopics(List.of(new NewTopic("cfg-t", 1, (short) 1))).all().get();
                Owned owned = new Owned();
                c.subscribe(List.of("cfg-t"), owned);
                pollUntil(() -> owned.now.size() == 1, List.of(c));
            }
            admin.deleteConsumerGroups(List.of("g-cfg")).all().get();
            assertThat(admin.describeConfigs(List.of(group)).all().get().get(group)
                    .get("consumer.heartbeat.interval.ms").value()).isEqualTo("300");
        }
    }

    /**
     * Mixed groups, as Kafka 4 supports them: a classic consumer group is upgraded online when a consumer-protocol
     * member joins (the classic member keeps consuming and gives up half its partitions), and a classic consumer can
     * join a consumer-protocol group. No partition is owned twice at any point.
     */
    @Test
    void classicAndConsumerProtocolMembersShareAGroup() throws Exception {
        try (ShellFixture fx = new ShellFixture(FAST); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("mixed", 4, (short) 1))).all().get();
            Owned classicOwned = new Owned();
            Owned newOwned = new Owned();
            Owned secondClassicOwned = new Owned();
            Map<String, Object> classic = Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                    ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 300, ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000,
                    ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
            try (KafkaConsumer<String, String> a = consumer(fx, "mixed-g", classic)) {
                a.subscribe(List.of("mixed"), classicOwned);
                pollUntil(() -> classicOwned.now.size() == 4, List.of(a));
                a.commitSync();
                // A consumer-protocol member arrives: the classic group becomes a consumer-protocol group.
                try (KafkaConsumer<String, String> b = consumer(fx, "mixed-g", Map.of())) {
                    b.subscribe(List.of("mixed"), newOwned);
                    pollUntil(() -> classicOwned.now.size() == 2 && newOwned.now.size() == 2, List.of(a, b));
                    Set<TopicPartition> overlap = new HashSet<>(classicOwned.now);
                    overlap.retainAll(newOwned.now);
                    assertThat(overlap).isEmpty();
                    a.commitSync(); // the classic member commits with its generation (its member epoch)
                    ConsumerGroupDescription d = admin.describeConsumerGroups(List.of("mixed-g")).all().get()
                            .get("mixed-g");
                    assertThat(d.type()).isEqualTo(GroupType.CONSUMER);
                    assertThat(d.members()).hasSize(2);
                    // A second classic consumer joins the consumer-protocol group.
                    try (KafkaConsumer<String, String> c = consumer(fx, "mixed-g", classic)) {
                        c.subscribe(List.of("mixed"), secondClassicOwned);
                        pollUntil(() -> secondClassicOwned.now.size() >= 1
                                && classicOwned.now.size() + newOwned.now.size() + secondClassicOwned.now.size() == 4
                                && classicOwned.now.size() >= 1 && newOwned.now.size() >= 1, List.of(a, b, c));
                        Set<TopicPartition> all = new HashSet<>();
                        for (Owned o : List.of(classicOwned, newOwned, secondClassicOwned)) {
                            for (TopicPartition tp : o.now) {
                                assertThat(all.add(tp)).as("%s owned twice", tp).isTrue();
                            }
                        }
                    }
                }
            }
        }
    }
}
