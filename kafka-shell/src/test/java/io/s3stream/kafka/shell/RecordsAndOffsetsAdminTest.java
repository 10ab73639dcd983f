package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupSubscribedToTopicException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * DeleteRecords (Admin.deleteRecords, kafka-delete-records.sh), OffsetDelete (kafka-consumer-groups
 * --delete-offsets) and the ListOffsets specs of clients 4.x, with the Java Admin client.
 */
@Timeout(90)
class RecordsAndOffsetsAdminTest {
    @RegisterExtension
    final ShellFixture fx = new ShellFixture();

    private void produce(String topic, int partition, int count) throws Exception {
        try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
            for (int i = 0; i < count; i++) {
                p.send(new ProducerRecord<>(topic, partition, null, "v" + i));
            }
            p.flush();
        }
    }

    private List<String> readFromBeginning(TopicPartition tp, int atLeast) {
        try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of())) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            List<String> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 10_000;
            while (got.size() < atLeast && System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(100)).forEach((ConsumerRecord<String, String> r) -> got.add(r.value()));
            }
            return got;
        }
    }

    @Test
    void deleteRecordsMovesTheLogStartDurably() throws Exception {
        TopicPartition tp = new TopicPartition("purge", 0);
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("purge", 2, (short) 1))).all().get();
        }
        produce("purge", 0, 100);
        try (Admin admin = fx.admin()) {
            // Inside a batch (the producer sent the 100 records in a few): Kafka allows it, and so does the shell.
            assertThat(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(37))).lowWatermarks().get(tp).get()
                    .lowWatermark()).isEqualTo(37);
            assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get().offset()).isEqualTo(37);
            // Below the current start: nothing changes.
            assertThat(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(10))).lowWatermarks().get(tp).get()
                    .lowWatermark()).isEqualTo(37);
            assertThatThrownBy(() -> admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(101))).all().get())
                    .hasCauseInstanceOf(OffsetOutOfRangeException.class);
        }
        List<String> left = readFromBeginning(tp, 63);
        assertThat(left).hasSize(63).first().isEqualTo("v37");

        fx.restart();
        try (Admin admin = fx.admin()) {
            assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get().offset()).isEqualTo(37);
            // -1: up to the high watermark.
            assertThat(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(-1))).lowWatermarks().get(tp).get()
                    .lowWatermark()).isEqualTo(100);
        }
        produce("purge", 0, 1);
        assertThat(readFromBeginning(tp, 1)).containsExactly("v0");
    }

    @Test
    void offsetDeleteRefusesTopicsTheGroupSubscribesTo() throws Exception {
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("subscribed", 1, (short) 1), new NewTopic("other", 1, (short) 1)))
                    .all().get();
        }
        produce("subscribed", 0, 5);
        TopicPartition sub = new TopicPartition("subscribed", 0);
        TopicPartition other = new TopicPartition("other", 0);
        try (KafkaConsumer<String, String> c = fx.consumer("deleter", Map.of(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false));
             Admin admin = fx.admin()) {
            c.subscribe(List.of("subscribed"));
            long deadline = System.currentTimeMillis() + 15_000;
            while (c.assignment().isEmpty() && System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(100));
            }
            c.commitSync(Map.of(sub, new OffsetAndMetadata(5), other, new OffsetAndMetadata(3)));

            assertThatThrownBy(() -> admin.deleteConsumerGroupOffsets("deleter", Set.of(sub)).all().get())
                    .hasCauseInstanceOf(GroupSubscribedToTopicException.class);
            admin.deleteConsumerGroupOffsets("deleter", Set.of(other)).all().get();
            assertThat(admin.listConsumerGroupOffsets("deleter").partitionsToOffsetAndMetadata().get())
                    .containsOnlyKeys(sub);
        }
        try (Admin admin = fx.admin()) {
            // The group is empty now: its offsets of any topic may go.
            long deadline = System.currentTimeMillis() + 15_000;
            while (true) {
                try {
                    admin.deleteConsumerGroupOffsets("deleter", Set.of(sub)).all().get();
                    break;
                } catch (Exception e) {
                    if (System.currentTimeMillis() > deadline) {
                        throw e;
                    }
                    Thread.sleep(200); // until the consumer's LeaveGroup is processed
                }
            }
            assertThat(admin.listConsumerGroupOffsets("deleter").partitionsToOffsetAndMetadata().get()).isEmpty();
            assertThatThrownBy(() -> admin.deleteConsumerGroupOffsets("no-such-group", Set.of(sub)).all().get())
                    .hasCauseInstanceOf(GroupIdNotFoundException.class);
        }
    }

    @Test
    void listOffsetsAnswersEverySpecOfTheClient() throws Exception {
        TopicPartition tp = new TopicPartition("specs", 0);
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("specs", 1, (short) 1))).all().get();
        }
        produce("specs", 0, 10);
        try (Admin admin = fx.admin()) {
            assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get().offset()).isZero();
            assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get().offset()).isEqualTo(10);
            assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.earliestLocal())).partitionResult(tp).get().offset()).isZero();
            // No tiered storage: Kafka answers -1 for these two (ListOffsets v9 and v11).
            assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.latestTiered())).partitionResult(tp).get().offset()).isEqualTo(-1);
            assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.earliestPendingUpload())).partitionResult(tp).get().offset())
                    .isEqualTo(-1);
        }
    }
}
