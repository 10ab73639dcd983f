package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** CreatePartitions, DeleteGroups and fetch.min.bytes with the Java clients. */
@Timeout(60)
class AdminExtrasTest {

    @Test
    void createPartitionsGrowsATopicDurably() throws Exception {
        try (ShellFixture fx = new ShellFixture()) {
            try (Admin admin = fx.admin()) {
                admin.createTopics(List.of(new NewTopic("grow", 1, (short) 1))).all().get();
                admin.createPartitions(Map.of("grow", NewPartitions.increaseTo(3))).all().get();
                assertThat(admin.describeTopics(List.of("grow")).allTopicNames().get().get("grow").partitions()).hasSize(3);
                assertThatThrownBy(() -> admin.createPartitions(Map.of("grow", NewPartitions.increaseTo(2))).all().get())
                        .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(InvalidPartitionsException.class);
            }
            try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
                p.send(new ProducerRecord<>("grow", 2, null, "on-p2")).get();
            }
            fx.restart();
            try (Admin admin = fx.admin()) {
                assertThat(admin.describeTopics(List.of("grow")).allTopicNames().get().get("grow").partitions()).hasSize(3);
            }
            try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of())) {
                c.assign(List.of(new TopicPartition("grow", 2)));
                c.seekToBeginning(c.assignment());
                List<ConsumerRecord<String, String>> got = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 10_000;
                while (got.isEmpty() && System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(200)).forEach(got::add);
                }
                assertThat(got).extracting(ConsumerRecord::value).containsExactly("on-p2");
            }
        }
    }

    @Test
    void incrementalAlterConfigsAndDescribeLogDirs() throws Exception {
        try (ShellFixture fx = new ShellFixture(); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("cfg", 2, (short) 1))).all().get();
            var res = new org.apache.kafka.common.config.ConfigResource(org.apache.kafka.common.config.ConfigResource.Type.TOPIC, "cfg");
            admin.incrementalAlterConfigs(Map.of(res, List.of(new org.apache.kafka.clients.admin.AlterConfigOp(
                    new org.apache.kafka.clients.admin.ConfigEntry("retention.ms", "1234"),
                    org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET)))).all().get();
            assertThat(admin.describeConfigs(List.of(res)).all().get().get(res).get("retention.ms").value()).isEqualTo("1234");
            assertThatThrownBy(() -> admin.incrementalAlterConfigs(Map.of(res, List.of(new org.apache.kafka.clients.admin.AlterConfigOp(
                    new org.apache.kafka.clients.admin.ConfigEntry("cleanup.policy", "shred"),
                    org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET)))).all().get())
                    .hasCauseInstanceOf(org.apache.kafka.common.errors.InvalidConfigurationException.class);
            fx.restart();
            try (Admin again = fx.admin()) {
                assertThat(again.describeConfigs(List.of(res)).all().get().get(res).get("retention.ms").value()).isEqualTo("1234");
                again.incrementalAlterConfigs(Map.of(res, List.of(new org.apache.kafka.clients.admin.AlterConfigOp(
                        new org.apache.kafka.clients.admin.ConfigEntry("retention.ms", null),
                        org.apache.kafka.clients.admin.AlterConfigOp.OpType.DELETE)))).all().get();
                assertThat(again.describeConfigs(List.of(res)).all().get().get(res).get("retention.ms").value()).isEqualTo("604800000");
                var dirs = again.describeLogDirs(List.of(0)).allDescriptions().get().get(0);
                assertThat(dirs.values().iterator().next().replicaInfos().keySet())
                        .contains(new TopicPartition("cfg", 0), new TopicPartition("cfg", 1));
            }
        }
    }

    /** The produce path keeps each topic's settings: an altered config must apply to the very next produce. */
    @Test
    void alteredTopicConfigsApplyToTheNextProduce() throws Exception {
        try (ShellFixture fx = new ShellFixture(); Admin admin = fx.admin();
             KafkaProducer<String, String> producer = fx.producer(Map.of("retries", "0"))) {
            admin.createTopics(List.of(new NewTopic("limits", 1, (short) 1))).all().get();
            var res = new ConfigResource(ConfigResource.Type.TOPIC, "limits");
            String big = "b".repeat(5_000);
            assertThat(producer.send(new ProducerRecord<>("limits", big)).get().offset()).isZero();

            alter(admin, res, "max.message.bytes", "2000", AlterConfigOp.OpType.SET);
            assertThatThrownBy(() -> producer.send(new ProducerRecord<>("limits", big)).get())
                    .hasCauseInstanceOf(RecordTooLargeException.class);
            assertThat(producer.send(new ProducerRecord<>("limits", "small")).get().offset()).isEqualTo(1);

            alter(admin, res, "message.timestamp.type", "LogAppendTime", AlterConfigOp.OpType.SET);
            long before = System.currentTimeMillis();
            var appended = producer.send(new ProducerRecord<>("limits", null, 1_000L, null, "old")).get();
            assertThat(appended.timestamp()).as("the broker's time, not the record's").isGreaterThanOrEqualTo(before);

            alter(admin, res, "max.message.bytes", null, AlterConfigOp.OpType.DELETE);
            assertThat(producer.send(new ProducerRecord<>("limits", big)).get().offset()).isEqualTo(3);
        }
    }

    private static void alter(Admin admin, ConfigResource res, String key, String value, AlterConfigOp.OpType op)
            throws Exception {
        admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(new ConfigEntry(key, value), op))))
                .all().get();
    }

    @Test
    void deleteGroupsRemovesOffsetsAndRefusesActiveGroups() throws Exception {
        try (ShellFixture fx = new ShellFixture(); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("dg", 1, (short) 1))).all().get();
            TopicPartition tp = new TopicPartition("dg", 0);
            try (KafkaConsumer<String, String> c = fx.consumer("gone", Map.of())) {
                c.subscribe(List.of("dg"));
                long deadline = System.currentTimeMillis() + 10_000;
                while (c.assignment().isEmpty() && System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(100));
                }
                c.commitSync(Map.of(tp, new OffsetAndMetadata(0)));
                assertThatThrownBy(() -> admin.deleteConsumerGroups(List.of("gone")).all().get())
                        .hasCauseInstanceOf(GroupNotEmptyException.class);
            }
            assertThat(admin.listConsumerGroupOffsets("gone").partitionsToOffsetAndMetadata().get()).containsKey(tp);
            admin.deleteConsumerGroups(List.of("gone")).all().get();
            assertThat(admin.listConsumerGroupOffsets("gone").partitionsToOffsetAndMetadata().get()).isEmpty();
            assertThatThrownBy(() -> admin.deleteConsumerGroups(List.of("never")).all().get())
                    .hasCauseInstanceOf(GroupIdNotFoundException.class);
            fx.restart();
            try (Admin again = fx.admin()) {
                assertThat(again.listConsumerGroupOffsets("gone").partitionsToOffsetAndMetadata().get()).isEmpty();
            }
        }
    }

    @Test
    void longPollWaitsForMinBytes() throws Exception {
        try (ShellFixture fx = new ShellFixture()) {
            try (Admin admin = fx.admin()) {
                admin.createTopics(List.of(new NewTopic("minb", 1, (short) 1))).all().get();
            }
            TopicPartition tp = new TopicPartition("minb", 0);
            try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of(
                    ConsumerConfig.FETCH_MIN_BYTES_CONFIG, 20_000, ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 2_000));
                 KafkaProducer<String, String> p = fx.producer(Map.of(
                         org.apache.kafka.clients.producer.ProducerConfig.BATCH_SIZE_CONFIG, 65536,
                         org.apache.kafka.clients.producer.ProducerConfig.LINGER_MS_CONFIG, 100))) {
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                c.poll(Duration.ofMillis(300)); // the first long poll is now waiting at offset 0
                p.send(new ProducerRecord<>("minb", "small")).get();
                long producedAt = System.nanoTime();
                List<ConsumerRecord<String, String>> got = new ArrayList<>();
                while (got.isEmpty() && System.nanoTime() - producedAt < 10_000_000_000L) {
                    c.poll(Duration.ofMillis(100)).forEach(got::add);
                }
                long waitedMs = (System.nanoTime() - producedAt) / 1_000_000;
                assertThat(got).hasSize(1);
                assertThat(waitedMs).as("a 5-byte record does not satisfy min.bytes: the fetch waits for max.wait.ms")
                        .isGreaterThan(800);

                // Enough bytes (one 30 KB batch) answer the long poll at once.
                c.poll(Duration.ofMillis(300));
                long start = System.nanoTime();
                for (int i = 0; i < 30; i++) {
                    p.send(new ProducerRecord<>("minb", "x".repeat(1000)));
                }
                p.flush();
                got.clear();
                while (got.size() < 30 && System.nanoTime() - start < 10_000_000_000L) {
                    c.poll(Duration.ofMillis(50)).forEach(got::add);
                }
                assertThat(got).hasSize(30);
                assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(1_800);
            }
        }
    }
}
