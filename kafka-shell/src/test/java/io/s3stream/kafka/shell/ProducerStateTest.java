package io.s3stream.kafka.shell;

import io.s3stream.testing.FaultInjectingObjectStore;
import io.s3stream.testing.FaultyObjectStoreProvider;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/** Idempotent-producer state survives a broker restart: it is rebuilt from the tail of each partition. */
@Timeout(60)
class ProducerStateTest {

    @Test
    void retriedBatchAfterRestartGetsItsOriginalOffsetAndGapsAreStillRejected() throws Exception {
        try (ShellFixture fx = new ShellFixture()) {
            try (Admin admin = fx.admin()) {
                admin.createTopics(List.of(new NewTopic("idem", 1, (short) 1))).all().get();
            }
            long pid = 4242;
            try (RawClient c = new RawClient(fx.shell.port())) {
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 0, 3)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 0));
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 3, 2)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 3));
                // Another producer in between, so the duplicate's offset is not simply the tail.
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid + 1, (short) 2, 0, 1)).error()).isEqualTo(Errors.NONE);
            }
            fx.restart();
            try (RawClient c = new RawClient(fx.shell.port())) {
                // The retry of the last acknowledged batch: its original offset, nothing stored.
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 3, 2)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 3));
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 0, 3)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 0));
                // A gap is rejected; the next sequence is accepted.
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 9, 1)).error())
                        .isEqualTo(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER);
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 5, 1)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 6));
                // The second producer's epoch was recovered too: an older epoch is fenced.
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid + 1, (short) 1, 1, 1)).error())
                        .isEqualTo(Errors.INVALID_PRODUCER_EPOCH);
            }
            assertThat(fx.shell.port()).isPositive();
        }
    }

    /**
     * ChaosIT found a batch stored twice: after a failover the new leader could not read the partition's tail (the
     * store failing), kept the half of the producer state it had read, refused the producer's retry of a batch the old
     * leader had stored as out of order, and the producer, restarting its sequences, stored it again. Now an
     * unreadable tail refuses idempotent appends retriably and keeps no state, and the retry is recognised once the
     * tail can be read.
     */
    @Test
    void whileTheTailCannotBeReadARetryIsRefusedRetriablyAndNeverStoredTwice() throws Exception {
        String store = "idem-unreadable-" + System.nanoTime();
        try (ShellFixture fx = new ShellFixture(Map.of("s3stream.object.store", "faulty://" + store))) {
            try (Admin admin = fx.admin()) {
                admin.createTopics(List.of(new NewTopic("idem", 1, (short) 1))).all().get();
            }
            long pid = 77;
            try (RawClient c = new RawClient(fx.shell.port())) {
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 0, 3)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 0));
            }
            // A clean restart uploads everything, so the new instance reads the tail from objects; those reads fail.
            FaultyObjectStoreProvider.onOpen(store, f -> f.on(FaultInjectingObjectStore.Operation.GET).always()
                    .failFatal("403 AccessDenied"));
            fx.restart();
            try (RawClient c = new RawClient(fx.shell.port())) {
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 0, 3)).error())
                        .as("the retry of a stored batch, while the tail is unreadable").isEqualTo(Errors.KAFKA_STORAGE_ERROR);
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 3, 1)).error())
                        .isEqualTo(Errors.KAFKA_STORAGE_ERROR);
                FaultyObjectStoreProvider.faults(store).clearFaults();
                Thread.sleep(1_100);
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 0, 3)))
                        .as("recognised as the stored batch").isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 0));
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 3, 1)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 3));
            }
        } finally {
            FaultyObjectStoreProvider.forget(store);
        }
    }

    /**
     * The Java client's default (idempotent) producer, with its retries spanning a broker restart: batches the broker
     * stored whose answers never arrived (a proxy swallows them) are retried after the restart on new connections,
     * and must get their original offsets instead of being stored twice.
     */
    @Test
    void defaultJavaProducerRetriesAcrossARestartWithoutDuplicates() throws Exception {
        try (HoldingProxy proxy = new HoldingProxy();
             ShellFixture fx = new ShellFixture(Map.of("advertised.listeners", "PLAINTEXT://127.0.0.1:" + proxy.port()))) {
            proxy.target = fx.shell::port;
            try (Admin admin = fx.admin()) {
                admin.createTopics(List.of(new NewTopic("retry", 1, (short) 1))).all().get();
            }
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            try (KafkaProducer<String, String> p = fx.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 0,
                    ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 3_000, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000))) {
                for (int i = 0; i < 100; i++) {
                    sent.add(p.send(new ProducerRecord<>("retry", "v" + i)));
                }
                p.flush();
                proxy.hold = true; // the broker stores what follows, the client hears nothing
                for (int i = 100; i < 150; i++) {
                    sent.add(p.send(new ProducerRecord<>("retry", "v" + i)));
                    if (i % 10 == 0) {
                        Thread.sleep(20); // several batches in flight
                    }
                }
                Thread.sleep(1_000);
                assertThat(sent.get(149).isDone()).as("the answers were swallowed").isFalse();
                fx.restart();
                proxy.hold = false;
                proxy.cutAll(); // the client reconnects and retries its unanswered batches
                p.flush();
                for (int i = 0; i < 150; i++) {
                    assertThat(sent.get(i).get().offset()).isEqualTo(i);
                }
            }
            try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of())) {
                TopicPartition tp = new TopicPartition("retry", 0);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                List<String> values = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 10_000;
                while (values.size() < 150 && System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(100)).forEach(r -> values.add(r.value()));
                }
                c.poll(Duration.ofMillis(300)).forEach(r -> values.add(r.value()));
                List<String> expected = new ArrayList<>();
                for (int i = 0; i < 150; i++) {
                    expected.add("v" + i);
                }
                assertThat(values).isEqualTo(expected);
                assertThat(c.endOffsets(List.of(tp)).get(tp)).isEqualTo(150);
            }
        }
    }

    /**
     * During a move, a producer's batch can reach the new leader before an earlier batch that went to the old one and
     * was refused there. The new leader does not know the producer (nothing of it in the partition's tail): if it
     * accepted the later batch, the earlier one would be out of order forever and the producer stuck. It answers
     * UNKNOWN_PRODUCER_ID instead, storing nothing; the earlier batch, then the later one, are accepted in order.
     */
    @Test
    void aLaterBatchOfAnUnknownProducerIsRefusedSoTheEarlierOneIsNotStuck() throws Exception {
        try (ShellFixture fx = new ShellFixture()) {
            try (Admin admin = fx.admin()) {
                admin.createTopics(List.of(new NewTopic("race", 1, (short) 1))).all().get();
            }
            long pid = 777;
            try (RawClient c = new RawClient(fx.shell.port())) {
                assertThat(c.produce("race", 0, RawClient.idempotent(pid, (short) 0, 3, 3)).error())
                        .isEqualTo(Errors.UNKNOWN_PRODUCER_ID);
                assertThat(c.produce("race", 0, RawClient.idempotent(pid, (short) 0, 0, 3)))
                        .as("nothing was stored for the refused batch").isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 0));
                assertThat(c.produce("race", 0, RawClient.idempotent(pid, (short) 0, 3, 3)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 3));
                // After the client's epoch bump, sequences restart at 0.
                assertThat(c.produce("race", 0, RawClient.idempotent(pid, (short) 1, 0, 1)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 6));
            }
        }
    }

    /**
     * A producer whose batches are older than the tail the shell recovers producer state from (the last ~8 MiB) is
     * unknown after a restart: its next batch gets UNKNOWN_PRODUCER_ID, and the Java client bumps its epoch, restarts
     * its sequences and goes on; no send fails and nothing is stored twice.
     */
    @Test
    void aProducerForgottenByARestartBumpsItsEpochAndGoesOn() throws Exception {
        try (ShellFixture fx = new ShellFixture()) {
            try (Admin admin = fx.admin()) {
                admin.createTopics(List.of(new NewTopic("forgotten", 1, (short) 1))).all().get();
            }
            try (KafkaProducer<String, String> old = fx.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 0,
                    ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000))) {
                for (int i = 0; i < 10; i++) {
                    old.send(new ProducerRecord<>("forgotten", "old-" + i)).get();
                }
                String big = "x".repeat(64 << 10);
                try (KafkaProducer<String, String> other = fx.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 5))) {
                    for (int i = 0; i < 192; i++) { // 12 MiB after the old producer's batches
                        other.send(new ProducerRecord<>("forgotten", big));
                    }
                    other.flush();
                }
                fx.restart();
                for (int i = 10; i < 20; i++) {
                    old.send(new ProducerRecord<>("forgotten", "old-" + i)).get(60, java.util.concurrent.TimeUnit.SECONDS);
                }
            }
            try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of())) {
                TopicPartition tp = new TopicPartition("forgotten", 0);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                List<String> olds = new ArrayList<>();
                long total = 0;
                long deadline = System.currentTimeMillis() + 20_000;
                while (total < 212 && System.currentTimeMillis() < deadline) {
                    for (var r : c.poll(Duration.ofMillis(200))) {
                        total++;
                        if (r.value().startsWith("old-")) {
                            olds.add(r.value());
                        }
                    }
                }
                List<String> expected = new ArrayList<>();
                for (int i = 0; i < 20; i++) {
                    expected.add("old-" + i);
                }
                assertThat(olds).isEqualTo(expected);
                assertThat(total).isEqualTo(212);
            }
        }
    }
}
