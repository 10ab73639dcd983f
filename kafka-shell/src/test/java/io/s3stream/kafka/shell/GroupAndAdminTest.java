package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Consumer groups with several members and a rebalance, the Admin client, and a broker restart. */
@Timeout(90)
class GroupAndAdminTest {
    @RegisterExtension
    final ShellFixture fx = new ShellFixture();

    @Test
    void twoMembersRebalanceAndCommit() throws Exception {
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("events", 4, (short) 1))).all().get();
        }
        Map<String, Object> fast = Map.of("session.timeout.ms", "6000", "heartbeat.interval.ms", "200",
                "max.poll.interval.ms", "10000");
        try (KafkaProducer<String, String> producer = fx.producer(Map.of());
             KafkaConsumer<String, String> c1 = fx.consumer("grp", fast);
             KafkaConsumer<String, String> c2 = fx.consumer("grp", fast)) {
            for (int i = 0; i < 200; i++) {
                producer.send(new ProducerRecord<>("events", i % 4, null, "v" + i));
            }
            producer.flush();
            c1.subscribe(List.of("events"));
            Set<String> seen = new HashSet<>();
            long deadline = System.currentTimeMillis() + 20_000;
            while (c1.assignment().size() != 4 && System.currentTimeMillis() < deadline) {
                c1.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
            }
            assertThat(c1.assignment()).hasSize(4);
            c1.commitSync();
            c2.subscribe(List.of("events"));
            deadline = System.currentTimeMillis() + 30_000;
            while ((c1.assignment().size() != 2 || c2.assignment().size() != 2) && System.currentTimeMillis() < deadline) {
                c1.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                c2.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
            }
            assertThat(c1.assignment()).hasSize(2);
            assertThat(c2.assignment()).hasSize(2);
            for (int i = 200; i < 400; i++) {
                producer.send(new ProducerRecord<>("events", i % 4, null, "v" + i));
            }
            producer.flush();
            deadline = System.currentTimeMillis() + 20_000;
            while (seen.size() < 400 && System.currentTimeMillis() < deadline) {
                c1.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                c2.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
            }
            assertThat(seen).hasSize(400);
            c1.commitSync();
            c2.commitSync();
            try (Admin admin = fx.admin()) {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of("grp")).all().get().get("grp");
                assertThat(d.members()).hasSize(2);
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets("grp")
                        .partitionsToOffsetAndMetadata().get();
                long total = committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
                assertThat(total).isEqualTo(400);
            }
        }
    }

    @Test
    void adminTopicsConfigsAndCluster() throws Exception {
        try (Admin admin = fx.admin()) {
            DescribeClusterResult cluster = admin.describeCluster();
            assertThat(cluster.nodes().get()).hasSize(1);
            assertThat(cluster.clusterId().get()).isEqualTo("s3stream-kafka-shell");
            admin.createTopics(List.of(new NewTopic("a", 2, (short) 1).configs(Map.of("retention.ms", "60000")),
                    new NewTopic("b", 1, (short) 1))).all().get();
            assertThat(admin.listTopics().names().get()).contains("a", "b");
            TopicDescription a = admin.describeTopics(List.of("a")).allTopicNames().get().get("a");
            assertThat(a.partitions()).hasSize(2);
            assertThat(a.topicId()).isNotNull();
            Config cfg = admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, "a")))
                    .all().get().values().iterator().next();
            assertThat(cfg.get("retention.ms").value()).isEqualTo("60000");
            assertThat(cfg.get("max.message.bytes").value()).isEqualTo("1048588");
            assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("a", 1, (short) 1))).all().get())
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(TopicExistsException.class);
            assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("c", 1, (short) 3))).all().get())
                    .hasCauseInstanceOf(InvalidReplicationFactorException.class);
            admin.deleteTopics(List.of("b")).all().get();
            assertThat(admin.listTopics().names().get()).contains("a").doesNotContain("b");
            assertThatThrownBy(() -> admin.deleteTopics(List.of("b")).all().get())
                    .hasCauseInstanceOf(UnknownTopicOrPartitionException.class);
        }
    }

    @Test
    void dataTopicsAndCommittedOffsetsSurviveRestart() throws Exception {
        try (KafkaProducer<String, String> producer = fx.producer(Map.of())) {
            for (int i = 0; i < 50; i++) {
                producer.send(new ProducerRecord<>("durable", "v" + i));
            }
            producer.flush();
        }
        TopicPartition tp = new TopicPartition("durable", 0);
        try (KafkaConsumer<String, String> c = fx.consumer("keep", Map.of())) {
            c.commitSync(Map.of(tp, new OffsetAndMetadata(20)));
        }
        fx.restart();
        try (KafkaConsumer<String, String> c = fx.consumer("keep", Map.of())) {
            c.subscribe(List.of("durable"));
            int n = 0;
            long first = -1;
            long deadline = System.currentTimeMillis() + 20_000;
            while (n < 30 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    if (first < 0) {
                        first = r.offset();
                    }
                    n++;
                }
            }
            assertThat(first).isEqualTo(20);
            assertThat(n).isEqualTo(30);
        }
        // The producer id block moved on: a new producer appends after the old records.
        try (KafkaProducer<String, String> producer = fx.producer(Map.of())) {
            assertThat(producer.send(new ProducerRecord<>("durable", "after")).get().offset()).isEqualTo(50);
        }
    }
}
