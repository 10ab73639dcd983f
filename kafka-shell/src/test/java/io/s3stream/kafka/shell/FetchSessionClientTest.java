package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.DoublePredicate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Incremental fetch sessions (KIP-227) with Kafka's Java consumer, which opens one whenever the broker answers with a
 * session id: the shell keeps the consumer's partitions, follows its assignment changes, survives losing the sessions
 * on a restart (the consumer starts over with a full fetch), and drops the session when the consumer closes. And the
 * long polls of such a consumer let go of the partitions that did not answer them.
 */
@Timeout(120)
class FetchSessionClientTest {
    private static final String SESSIONS = "kafka_server_fetch_sessions{node_id=\"0\"}";
    private static final String PARTITIONS = "kafka_server_fetch_session_partitions{node_id=\"0\"}";
    private static final int PARTITION_COUNT = 48;

    @RegisterExtension
    final ShellFixture fx = new ShellFixture(Map.of("metrics.port", "0"));

    private final Map<TopicPartition, Integer> next = new HashMap<>();

    private void produce(KafkaProducer<String, String> producer, int partition, int count) throws Exception {
        TopicPartition tp = new TopicPartition("many", partition);
        for (int i = 0; i < count; i++) {
            int n = next.merge(tp, 1, Integer::sum) - 1;
            producer.send(new ProducerRecord<>("many", partition, null, partition + "-" + n)).get();
        }
    }

    /** Polls until {@code count} records came; checks each partition's values arrive in order, none twice. */
    private static void consume(KafkaConsumer<String, String> consumer, Map<TopicPartition, Integer> seen, int count) {
        int got = 0;
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (got < count && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                int n = seen.merge(tp, 1, Integer::sum) - 1;
                assertThat(r.value()).isEqualTo(r.partition() + "-" + n);
                got++;
            }
        }
        assertThat(got).as("records consumed").isEqualTo(count);
    }

    private void awaitMetric(String sample, DoublePredicate expected, String what) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        double value = ShellFixture.metric(fx.scrapeMetrics(), sample);
        while (!expected.test(value) && System.nanoTime() < deadline) {
            Thread.sleep(50);
            value = ShellFixture.metric(fx.scrapeMetrics(), sample);
        }
        assertThat(expected.test(value)).as("%s: %s is %s", what, sample, value).isTrue();
    }

    @Test
    void theJavaConsumerFetchesIncrementallyThroughAssignmentChangesRestartsAndClose() throws Exception {
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("many", PARTITION_COUNT, (short) 1))).all().get();
        }
        List<TopicPartition> all = new ArrayList<>();
        for (int p = 0; p < PARTITION_COUNT; p++) {
            all.add(new TopicPartition("many", p));
        }
        Map<TopicPartition, Integer> seen = new HashMap<>();
        try (KafkaProducer<String, String> producer = fx.producer(Map.of("linger.ms", 0))) {
            for (int p = 0; p < PARTITION_COUNT; p++) {
                produce(producer, p, 3);
            }
            KafkaConsumer<String, String> consumer = fx.consumer(null, Map.of("fetch.max.wait.ms", 100));
            try {
                consumer.assign(all);
                consumer.seekToBeginning(all);
                consume(consumer, seen, 3 * PARTITION_COUNT);
                awaitMetric(SESSIONS, v -> v == 1, "one session for the consumer");
                awaitMetric(PARTITIONS, v -> v == PARTITION_COUNT, "holding all its partitions");

                // Incremental fetches carry the one partition with news.
                produce(producer, 7, 5);
                consume(consumer, seen, 5);

                // The consumer narrows its assignment: the session forgets the others.
                consumer.assign(all.subList(0, 16));
                produce(producer, 3, 2);
                consume(consumer, seen, 2);
                awaitMetric(PARTITIONS, v -> v == 16, "the session follows the assignment");

                // A restart loses the sessions: the consumer is told so, fetches in full and gets a new one.
                fx.restart();
                produce(producer, 9, 4);
                consume(consumer, seen, 4);
                awaitMetric(SESSIONS, v -> v == 1, "a new session after the restart");
                awaitMetric(PARTITIONS, v -> v == 16, "holding the consumer's 16 partitions");
            } finally {
                consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)));
            }
            awaitMetric(SESSIONS, v -> v == 0, "a closing consumer closes its session");
        }
        for (TopicPartition tp : all) {
            assertThat(seen.getOrDefault(tp, 0)).as("everything of %s read", tp).isEqualTo(next.get(tp));
        }
    }

    /**
     * A long poll waits on every partition it reads; when one of them (or the deadline) answers it, the others must
     * let go of it. They kept it until their next append before: forever on an idle partition, so a consumer polling
     * an idle topic of 1,000 partitions left 1,000 waiters — each holding the whole fetch — per poll (2026-11-28,
     * benchmarks/compare/fetch-sessions.sh: a shell's CPU at 50 s per 26-s run by the third run).
     */
    @Test
    void longPollsThatAnsweredLeaveNoWaiterBehind() throws Exception {
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("many", PARTITION_COUNT, (short) 1))).all().get();
        }
        List<TopicPartition> all = new ArrayList<>();
        for (int p = 0; p < PARTITION_COUNT; p++) {
            all.add(new TopicPartition("many", p));
        }
        Map<TopicPartition, Integer> seen = new HashMap<>();
        try (KafkaProducer<String, String> producer = fx.producer(Map.of("linger.ms", 0));
             KafkaConsumer<String, String> consumer = fx.consumer(null, Map.of("fetch.max.wait.ms", 20))) {
            consumer.assign(all);
            consumer.seekToBeginning(all);
            long until = System.nanoTime() + Duration.ofSeconds(2).toNanos();
            while (System.nanoTime() < until) {
                assertThat(consumer.poll(Duration.ofMillis(100))).isEmpty(); // dozens of long polls time out
            }
            produce(producer, 5, 1); // and one is answered by an append
            consume(consumer, seen, 1);
            var topic = fx.shell.topicsForTest().get("many");
            int waiting = 0;
            for (int p = 0; p < PARTITION_COUNT; p++) {
                waiting += topic.partition(p).awaiting();
            }
            assertThat(waiting).as("waiters left on the partitions: at most the one fetch in flight's")
                    .isLessThanOrEqualTo(PARTITION_COUNT);
        }
    }
}
