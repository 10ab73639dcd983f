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

import java.io.BufferedReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.DoublePredicate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Incremental fetch sessions (KIP-227) with Kafka's Java consumer, which opens one whenever the broker answers with a
 * session id: the shell keeps the consumer's partitions, follows its assignment changes, survives losing the sessions
 * on a restart (the consumer starts over with a full fetch), and drops the session when the consumer closes. The
 * long polls of such a consumer let go of the partitions that did not answer them, and a fetch over many partitions
 * with a backlog reads about what its response can carry.
 */
@Timeout(120)
class ManyPartitionsFetchTest {
    private static final String SESSIONS = "kafka_server_fetch_sessions{node_id=\"0\"}";
    private static final String PARTITIONS = "kafka_server_fetch_session_partitions{node_id=\"0\"}";
    private static final int PARTITION_COUNT = 48;
    private static final String FRANZ = System.getenv().getOrDefault("S3STREAM_FRANZ_CLIENT",
            "/opt/s3stream-tools/bin/franz-client");

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
        consume(consumer, count, r -> {
            int n = seen.merge(new TopicPartition(r.topic(), r.partition()), 1, Integer::sum) - 1;
            assertThat(r.value()).isEqualTo(r.partition() + "-" + n);
        });
    }

    /** Polls until {@code count} records came, each passed to {@code check}. */
    private static void consume(KafkaConsumer<String, String> consumer, int count,
                                Consumer<ConsumerRecord<String, String>> check) {
        int got = 0;
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (got < count && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                check.accept(r);
                got++;
            }
        }
        assertThat(got).as("records consumed").isEqualTo(count);
    }

    /** Creates {@code name} with {@code partitions} partitions; returns them. */
    private List<TopicPartition> createTopic(String name, int partitions) throws Exception {
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get();
        }
        List<TopicPartition> all = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            all.add(new TopicPartition(name, p));
        }
        return all;
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
        List<TopicPartition> all = createTopic("many", PARTITION_COUNT);
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
        List<TopicPartition> all = createTopic("many", PARTITION_COUNT);
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

    /**
     * A consumer catching up on 32 partitions of 256 KiB each, 64 KiB per partition and 256 KiB per fetch: the shell
     * reads about what it sends, once with a known bytes-per-offset (the appends since the partitions opened) and once
     * after a restart, when it reserves partition.max.bytes per partition. Each fetch read 64 KiB of all 32 partitions
     * before, to send 256 KiB of them: 8x.
     */
    @Test
    void aFetchOfManyPartitionsWithABacklogReadsAboutWhatItSends() throws Exception {
        int partitions = 32;
        int perPartition = 64;
        String value = "x".repeat(4096);
        List<TopicPartition> all = createTopic("backlog", partitions);
        try (KafkaProducer<String, String> producer = fx.producer(Map.of("linger.ms", 5, "batch.size", 16384))) {
            for (int i = 0; i < perPartition; i++) {
                for (int p = 0; p < partitions; p++) {
                    producer.send(new ProducerRecord<>("backlog", p, null, value));
                }
            }
            producer.flush();
        }
        long stored = readBytes(partitions);
        assertThat(stored).as("what the appends stored").isGreaterThan(32L * 64 * 4096);
        for (boolean restarted : new boolean[] {false, true}) {
            if (restarted) {
                fx.restart(); // the reopened logs know no bytes per offset
            }
            long before = readBytes(partitions);
            try (KafkaConsumer<String, String> consumer = fx.consumer(null, Map.of("max.partition.fetch.bytes",
                    65536, "fetch.max.bytes", 262144))) {
                consumer.assign(all);
                consumer.seekToBeginning(all);
                consume(consumer, partitions * perPartition, r -> assertThat(r.value()).isEqualTo(value));
            }
            long read = readBytes(partitions) - before;
            assertThat(read).as("bytes read to send %d (restarted: %s)", stored, restarted)
                    .isLessThan(stored + stored / 2);
        }
    }

    /**
     * Partitions whose records sit behind open transactions reserve budget a read_committed fetch cannot use: the fetch
     * then reads once more without reserving and long-polls as before, instead of answering at once, empty, over and
     * over.
     */
    @Test
    void aReadCommittedFetchBehindOpenTransactionsStillLongPolls() throws Exception {
        List<TopicPartition> all = createTopic("open", 9);
        String value = "y".repeat(8192);
        try (KafkaProducer<String, String> txn = fx.producer(Map.of("transactional.id", "open-1"));
             KafkaProducer<String, String> plain = fx.producer(Map.of("linger.ms", 0));
             KafkaConsumer<String, String> consumer = fx.consumer(null, Map.of("isolation.level", "read_committed",
                     "fetch.max.wait.ms", 500, "max.partition.fetch.bytes", 65536, "fetch.max.bytes", 65536))) {
            txn.initTransactions();
            txn.beginTransaction();
            for (int i = 0; i < 16; i++) {
                for (int p = 0; p < 8; p++) {
                    txn.send(new ProducerRecord<>("open", p, null, value));
                }
            }
            txn.flush(); // 128 KiB in each of partitions 0-7, not committed
            consumer.assign(all);
            consumer.seekToBeginning(all);
            long answered = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (fetches() == 0 && System.nanoTime() < answered) { // the first long poll may outlast a poll
                assertThat(consumer.poll(Duration.ofMillis(100))).isEmpty();
            }
            double before = fetches();
            assertThat(before).as("fetches answered before the window").isPositive();
            long until = System.nanoTime() + Duration.ofSeconds(2).toNanos();
            while (System.nanoTime() < until) {
                assertThat(consumer.poll(Duration.ofMillis(100))).isEmpty();
            }
            assertThat(fetches() - before).as("fetches in 2 s of 500-ms long polls").isLessThan(20);
            plain.send(new ProducerRecord<>("open", 8, null, "free")).get();
            consume(consumer, 1, r -> assertThat(r.value()).isEqualTo("free"));
            txn.commitTransaction();
            consume(consumer, 128, r -> assertThat(r.value()).isEqualTo(value));
        }
    }

    /** Fetches answered so far: the histogram has no Fetch sample until the first one is. */
    private double fetches() throws Exception {
        String body = fx.scrapeMetrics();
        String sample = "kafka_request_latency_seconds_count{api=\"Fetch\"";
        return body.contains(sample) ? ShellFixture.metric(body, sample) : 0;
    }

    /**
     * franz-go (test-infra/franz-client; bin/test builds it), a second client implementation that keeps fetch sessions,
     * independent of the Java client's: it reads 24 partitions through one session and then gets one more record
     * through an incremental fetch.
     */
    @Test
    void franzGoReadsThroughAnIncrementalSessionToo() throws Exception {
        ExternalClients.require("franz-client (franz-go)", FRANZ, "-h");
        createTopic("franz", 24);
        Process franz = new ProcessBuilder(FRANZ, "-brokers", fx.bootstrap(), "-topic", "franz", "-partitions", "24",
                "-records", "20").redirectErrorStream(true).start();
        StringBuilder output = new StringBuilder();
        try (BufferedReader out = franz.inputReader(StandardCharsets.UTF_8)) {
            String line = out.readLine();
            while (line != null && !line.startsWith("consumed")) {
                output.append(line).append('\n');
                line = out.readLine();
            }
            assertThat(line).as("franz-client said: %s", output).isEqualTo("consumed 480");
            awaitMetric(SESSIONS, v -> v == 1, "franz-go's session");
            awaitMetric(PARTITIONS, v -> v == 24, "holding its 24 partitions");
            try (KafkaProducer<String, String> producer = fx.producer(Map.of())) {
                producer.send(new ProducerRecord<>("franz", 11, null, "extra")).get();
            }
            assertThat(out.readLine()).as("franz-client said: %s", output).isEqualTo("extra 11 20");
        } finally {
            if (!franz.waitFor(30, TimeUnit.SECONDS)) {
                franz.destroyForcibly();
            }
        }
        assertThat(franz.exitValue()).isZero();
    }

    /** Bytes appended and read by the shell's logs of {@code backlog}, as its balancer counts them. */
    private long readBytes(int partitions) {
        var topic = fx.shell.topicsForTest().get("backlog");
        long sum = 0;
        for (int p = 0; p < partitions; p++) {
            sum += topic.partition(p).trafficBytes();
        }
        return sum;
    }
}
