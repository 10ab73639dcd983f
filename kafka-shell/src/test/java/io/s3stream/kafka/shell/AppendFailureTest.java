package io.s3stream.kafka.shell;

import io.s3stream.kafka.shell.topic.TopicRegistry;
import io.s3stream.testing.FaultInjectingObjectStore;
import io.s3stream.testing.FaultyObjectStoreProvider;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A partition whose append failed serves again without a move or a restart. The object store refuses every upload
 * (503s), so the log cache fills and an append fails with {@code OverCapacityException} after the backpressure wait; the
 * stream then refuses appends (it must not have a hole) and producers get KAFKA_STORAGE_ERROR, a retriable error. Once
 * the store heals, the shell reopens the stream at a higher epoch on its next reconcile; the producer's retries land,
 * and every acknowledged record is read back exactly once.
 */
@Timeout(120)
class AppendFailureTest {
    private static final int RECORDS = 800;

    @Test
    void aPartitionWhoseAppendFailedIsReopenedAndServesAgain() throws Exception {
        String storeName = "append-failure-" + System.nanoTime();
        try (ShellFixture broker = new ShellFixture(Map.of(
                "s3stream.object.store", "faulty://" + storeName,
                "s3stream.log.cache.bytes", Long.toString(4L << 20),
                "s3stream.upload.threshold.bytes", Long.toString(128L << 10),
                "s3stream.backpressure.timeout.ms", "200",
                "s3stream.kafka.reconcile.ms", "100"))) {
            try (Admin admin = broker.admin()) {
                admin.createTopics(List.of(new NewTopic("sick", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            }
            TopicRegistry.Slot slot = broker.shell.topicsForTest().get("sick").slot(0);
            long epochBefore = slot.epoch();
            FaultInjectingObjectStore faults = FaultyObjectStoreProvider.faults(storeName);
            for (FaultInjectingObjectStore.Operation upload : List.of(FaultInjectingObjectStore.Operation.PUT,
                    FaultInjectingObjectStore.Operation.START_MULTIPART, FaultInjectingObjectStore.Operation.PART)) {
                faults.on(upload).always().failRetriable("503 SlowDown");
            }

            Set<String> acked = ConcurrentHashMap.newKeySet();
            ConcurrentLinkedQueue<Exception> failed = new ConcurrentLinkedQueue<>();
            String pad = "x".repeat(8 << 10);
            try (KafkaProducer<String, String> producer = broker.producer(Map.of(ProducerConfig.ACKS_CONFIG, "all",
                    ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true, ProducerConfig.LINGER_MS_CONFIG, 5,
                    ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000, ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 50))) {
                for (int i = 0; i < RECORDS; i++) { // 6.4 MiB, over one and a half times the log cache
                    String v = i + ":" + pad;
                    producer.send(new ProducerRecord<>("sick", 0, null, v), (md, e) -> {
                        if (e == null) {
                            acked.add(v);
                        } else {
                            failed.add(e);
                        }
                    });
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (!slot.appendFailed()) {
                    assertThat(System.nanoTime()).as("an append failed while the store refused uploads")
                            .isLessThan(deadline);
                    Thread.sleep(10);
                }
                faults.clearFaults();
                producer.flush();
            }
            assertThat(failed).as("no send failed: the retries landed on the reopened stream").isEmpty();
            assertThat(acked).hasSize(RECORDS);
            assertThat(slot.epoch()).as("reopened at a higher epoch").isGreaterThan(epochBefore);

            List<String> values = new ArrayList<>();
            try (KafkaConsumer<String, String> consumer = broker.consumer(null, Map.of())) {
                TopicPartition tp = new TopicPartition("sick", 0);
                consumer.assign(List.of(tp));
                consumer.seekToBeginning(List.of(tp));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (values.size() < acked.size() && System.nanoTime() < deadline) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        values.add(r.value());
                    }
                }
            }
            assertThat(values).as("every acknowledged record exactly once").hasSize(acked.size())
                    .containsExactlyInAnyOrderElementsOf(acked);
        } finally {
            FaultyObjectStoreProvider.forget(storeName);
        }
    }

    @Test
    void aTopicWhoseDeletionCannotBeRecordedIsUnchangedAndTheDeletionCanBeRetried() throws Exception {
        String storeName = "delete-failure-" + System.nanoTime();
        try (ShellFixture broker = new ShellFixture(Map.of("s3stream.object.store", "faulty://" + storeName,
                "s3stream.metadata", "manifest:default", // the manifest in that store: its writes fail too
                "s3stream.kafka.reconcile.ms", "100"));
             Admin admin = broker.admin()) {
            admin.createTopics(List.of(new NewTopic("keep", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            FaultInjectingObjectStore faults = FaultyObjectStoreProvider.faults(storeName);
            faults.on(FaultInjectingObjectStore.Operation.PUT_IF_ABSENT).always().failFatal("403 AccessDenied");

            // The manifest cannot take the deletion: Kafka's storage error with the reason, and nothing changed.
            assertThatThrownBy(() -> admin.deleteTopics(List.of("keep")).all().get(30, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(KafkaStorageException.class)
                    .hasMessageContaining("Deleting topic 'keep' failed, the topic is unchanged; retry")
                    .hasMessageContaining("403 AccessDenied");
            Thread.sleep(300); // a few reconcile rounds: the topic must not vanish or come back broken
            assertThat(admin.listTopics().names().get(30, TimeUnit.SECONDS)).contains("keep");

            faults.clearFaults();
            try (KafkaProducer<String, String> producer = broker.producer(Map.of(ProducerConfig.ACKS_CONFIG, "all"))) {
                assertThat(producer.send(new ProducerRecord<>("keep", 0, null, "still here")).get(30, TimeUnit.SECONDS)
                        .offset()).isZero();
            }
            admin.deleteTopics(List.of("keep")).all().get(30, TimeUnit.SECONDS);
            assertThat(admin.listTopics().names().get(30, TimeUnit.SECONDS)).doesNotContain("keep");
            // The stream's kafka/destroy/ record, written with the deletion, goes once the stream is destroyed.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!broker.shell.keyValuesForTest().list("kafka/destroy/").join().isEmpty()
                    && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertThat(broker.shell.keyValuesForTest().list("kafka/destroy/").join()).isEmpty();
        } finally {
            FaultyObjectStoreProvider.forget(storeName);
        }
    }
}
