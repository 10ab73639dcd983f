package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Kafka transactions against one shell with the Java client: commit and abort seen exactly by read_committed, the last
 * stable offset, aborts on timeout and on a new producer instance (zombie fencing), offsets committed with a
 * transaction (consume-transform-produce), an open transaction across a restart, and the admin APIs behind
 * {@code kafka-transactions.sh}.
 */
@Timeout(120)
class TransactionsTest {
    private static final int PARTITIONS = 3;

    @RegisterExtension
    final ShellFixture fx = new ShellFixture(Map.of("s3stream.kafka.transaction.sweep.ms", "200"));

    @BeforeEach
    void createTopics() throws Exception {
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("txn", PARTITIONS, (short) 1),
                    new NewTopic("in", PARTITIONS, (short) 1), new NewTopic("out", PARTITIONS, (short) 1))).all().get();
        }
    }

    private KafkaProducer<String, String> transactional(String id, Map<String, Object> extra) {
        Map<String, Object> m = new HashMap<>(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id,
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000));
        m.putAll(extra);
        KafkaProducer<String, String> p = fx.producer(m);
        p.initTransactions();
        return p;
    }

    private static void send(KafkaProducer<String, String> p, String topic, String prefix, int count) {
        for (int i = 0; i < count; i++) {
            p.send(new ProducerRecord<>(topic, i % PARTITIONS, null, prefix + i));
        }
    }

    private List<String> readAll(String topic, String isolation, long quietMs) {
        return readAll(fx.bootstrap(), topic, PARTITIONS, isolation, quietMs);
    }

    /** Every value of {@code topic} (read until {@code quietMs} pass without a record), in the given isolation. */
    static List<String> readAll(String bootstrap, String topic, int partitions, String isolation, long quietMs) {
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation,
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()))) {
            List<TopicPartition> tps = IntStream.range(0, partitions).mapToObj(p -> new TopicPartition(topic, p)).toList();
            c.assign(tps);
            c.seekToBeginning(tps);
            List<String> values = new ArrayList<>();
            long quietSince = System.nanoTime();
            while ((System.nanoTime() - quietSince) / 1_000_000 < quietMs) {
                var records = c.poll(Duration.ofMillis(100));
                if (!records.isEmpty()) {
                    records.forEach(r -> values.add(r.value()));
                    quietSince = System.nanoTime();
                }
            }
            return values;
        }
    }

    static List<String> values(String prefix, int count) {
        return IntStream.range(0, count).mapToObj(i -> prefix + i).toList();
    }

    @Test
    void readCommittedSeesExactlyTheCommittedRecords() {
        try (KafkaProducer<String, String> p = transactional("t-1", Map.of());
             KafkaProducer<String, String> plain = fx.producer(Map.of())) {
            p.beginTransaction();
            send(p, "txn", "c1-", 30);
            send(plain, "txn", "plain-", 6); // interleaved with the open transaction
            plain.flush();
            p.commitTransaction();
            p.beginTransaction();
            send(p, "txn", "aborted-", 20);
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            send(p, "txn", "c2-", 10);
            p.commitTransaction();
        }
        List<String> expected = new ArrayList<>(values("c1-", 30));
        expected.addAll(values("plain-", 6));
        expected.addAll(values("c2-", 10));
        assertThat(readAll("txn", "read_committed", 1500)).containsExactlyInAnyOrderElementsOf(expected);
        List<String> all = new ArrayList<>(expected);
        all.addAll(values("aborted-", 20));
        assertThat(readAll("txn", "read_uncommitted", 1500)).containsExactlyInAnyOrderElementsOf(all);
    }

    @Test
    void anOpenTransactionHoldsReadCommittedReadersAtTheLastStableOffset() throws Exception {
        try (KafkaProducer<String, String> p = transactional("t-lso", Map.of());
             KafkaProducer<String, String> plain = fx.producer(Map.of());
             KafkaConsumer<String, String> committed = fx.consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"));
             KafkaConsumer<String, String> uncommitted = fx.consumer(null, Map.of())) {
            TopicPartition tp = new TopicPartition("txn", 0);
            plain.send(new ProducerRecord<>("txn", 0, null, "before")).get();
            p.beginTransaction();
            p.send(new ProducerRecord<>("txn", 0, null, "open-0"));
            p.send(new ProducerRecord<>("txn", 0, null, "open-1"));
            p.flush();
            long afterTs = plain.send(new ProducerRecord<>("txn", 0, null, "after")).get().timestamp();

            // Offsets: before=0, open-0/1=1..2, after=3. The LSO is 1 (the open transaction's first offset).
            assertThat(committed.endOffsets(List.of(tp)).get(tp)).isEqualTo(1);
            assertThat(uncommitted.endOffsets(List.of(tp)).get(tp)).isEqualTo(4);
            // By timestamp, read_committed finds nothing at or past the LSO (as Kafka); read_uncommitted does.
            assertThat(uncommitted.offsetsForTimes(Map.of(tp, afterTs)).get(tp).offset()).isBetween(1L, 3L);
            assertThat(committed.offsetsForTimes(Map.of(tp, afterTs)).get(tp)).isNull();
            committed.assign(List.of(tp));
            committed.seekToBeginning(List.of(tp));
            List<String> seen = new ArrayList<>();
            long until = System.nanoTime() + 1_500_000_000L;
            while (System.nanoTime() < until) {
                committed.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
            }
            assertThat(seen).containsExactly("before");

            p.commitTransaction();
            until = System.nanoTime() + 10_000_000_000L;
            while (seen.size() < 4 && System.nanoTime() < until) {
                committed.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
            }
            assertThat(seen).containsExactly("before", "open-0", "open-1", "after");
            // The commit marker took offset 4.
            assertThat(committed.endOffsets(List.of(tp)).get(tp)).isEqualTo(5);
        }
    }

    @Test
    void aTransactionPastItsTimeoutIsAbortedAndItsProducerFenced() throws Exception {
        try (KafkaProducer<String, String> p = transactional("t-timeout", Map.of(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 1000));
             Admin admin = fx.admin()) {
            p.beginTransaction();
            send(p, "txn", "late-", 9);
            p.flush();
            long deadline = System.nanoTime() + 20_000_000_000L;
            TransactionDescription d;
            do {
                Thread.sleep(100);
                d = admin.describeTransactions(List.of("t-timeout")).description("t-timeout").get();
            } while (d.state() != TransactionState.COMPLETE_ABORT && System.nanoTime() < deadline);
            assertThat(d.state()).isEqualTo(TransactionState.COMPLETE_ABORT);
            assertThatThrownBy(p::commitTransaction).isInstanceOf(KafkaException.class);
        }
        assertThat(readAll("txn", "read_committed", 1000)).isEmpty();
        assertThat(readAll("txn", "read_uncommitted", 1000)).containsExactlyInAnyOrderElementsOf(values("late-", 9));
    }

    @Test
    void aNewProducerInstanceAbortsTheOldOnesTransactionAndFencesIt() {
        try (KafkaProducer<String, String> zombie = transactional("t-zombie", Map.of())) {
            zombie.beginTransaction();
            send(zombie, "txn", "zombie-", 12);
            zombie.flush();
            try (KafkaProducer<String, String> fresh = transactional("t-zombie", Map.of())) {
                fresh.beginTransaction();
                send(fresh, "txn", "fresh-", 12);
                fresh.commitTransaction();
            }
            // As with Kafka: the partition refuses the old epoch (abortable for the client), the coordinator fences it.
            assertThatThrownBy(() -> zombie.send(new ProducerRecord<>("txn", 0, null, "zombie-late")).get())
                    .hasCauseInstanceOf(InvalidProducerEpochException.class);
            assertThatThrownBy(zombie::abortTransaction).isInstanceOf(ProducerFencedException.class);
        }
        assertThat(readAll("txn", "read_committed", 1000)).containsExactlyInAnyOrderElementsOf(values("fresh-", 12));
    }

    @Test
    void consumeTransformProduceCommitsItsOffsetsWithTheTransaction() throws Exception {
        try (KafkaProducer<String, String> seed = fx.producer(Map.of())) {
            send(seed, "in", "in-", 90);
        }
        String group = "ctp";
        try (KafkaProducer<String, String> p = transactional("t-ctp", Map.of());
             KafkaConsumer<String, String> c = fx.consumer(group, Map.of(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                     ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed", ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10));
             Admin admin = fx.admin()) {
            c.subscribe(List.of("in"));
            int processed = 0;
            boolean abortedOnce = false;
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (processed < 90 && System.nanoTime() < deadline) {
                var records = c.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                p.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    p.send(new ProducerRecord<>("out", r.partition(), null, r.value().replace("in-", "out-")));
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                p.sendOffsetsToTransaction(next, c.groupMetadata());
                if (!abortedOnce) {
                    // The first batch is aborted: its output disappears and its offsets are not committed; the
                    // consumer rewinds to the committed offsets and processes it again.
                    abortedOnce = true;
                    p.abortTransaction();
                    Map<TopicPartition, OffsetAndMetadata> committed = c.committed(next.keySet());
                    for (TopicPartition tp : next.keySet()) {
                        OffsetAndMetadata om = committed.get(tp);
                        c.seek(tp, om == null ? 0 : om.offset());
                    }
                    continue;
                }
                p.commitTransaction();
                processed += records.count();
            }
            assertThat(processed).isEqualTo(90);
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get();
            for (int i = 0; i < PARTITIONS; i++) {
                assertThat(offsets.get(new TopicPartition("in", i)).offset()).isEqualTo(30);
            }
            // Committed only through transactions, and that counts as activity for offset retention.
            assertThat(fx.shell.keyValuesForTest().get("kafka/offset-time/" + group).join())
                    .as("the group's commit time, stored with its transactional offsets").isPresent();
        }
        assertThat(readAll("out", "read_committed", 1000)).containsExactlyInAnyOrderElementsOf(values("out-", 90));
    }

    @Test
    void anOpenTransactionSurvivesARestartOfTheShell() {
        try (KafkaProducer<String, String> p = transactional("t-restart", Map.of())) {
            p.beginTransaction();
            send(p, "txn", "across-", 15);
            p.flush();
            fx.restart();
            // Still undecided after the restart: read_committed readers stop before it.
            assertThat(readAll("txn", "read_committed", 1000)).isEmpty();
            send(p, "txn", "after-restart-", 6);
            p.commitTransaction();
        }
        List<String> expected = new ArrayList<>(values("across-", 15));
        expected.addAll(values("after-restart-", 6));
        assertThat(readAll("txn", "read_committed", 1500)).containsExactlyInAnyOrderElementsOf(expected);
    }

    @Test
    void theAdminApisDescribeTransactionsAndProducers() throws Exception {
        try (KafkaProducer<String, String> p = transactional("t-admin", Map.of());
             Admin admin = fx.admin()) {
            p.beginTransaction();
            p.send(new ProducerRecord<>("txn", 1, null, "x")).get();
            TransactionDescription d = admin.describeTransactions(List.of("t-admin")).description("t-admin").get();
            assertThat(d.state()).isEqualTo(TransactionState.ONGOING);
            assertThat(d.topicPartitions()).containsExactly(new TopicPartition("txn", 1));
            Collection<TransactionListing> listed = admin.listTransactions().all().get();
            assertThat(listed).extracting(TransactionListing::transactionalId).contains("t-admin");
            List<ProducerState> producers = admin.describeProducers(List.of(new TopicPartition("txn", 1)))
                    .partitionResult(new TopicPartition("txn", 1)).get().activeProducers();
            assertThat(producers).singleElement().satisfies(s -> {
                assertThat(s.producerId()).isEqualTo(d.producerId());
                assertThat(s.currentTransactionStartOffset()).hasValue(0L);
            });
            p.commitTransaction();
            assertThat(admin.describeTransactions(List.of("t-admin")).description("t-admin").get().state())
                    .isEqualTo(TransactionState.COMPLETE_COMMIT);
            assertThat(admin.listTransactions().all().get()).extracting(TransactionListing::state)
                    .doesNotContain(TransactionState.ONGOING);
        }
        assertThat(Set.copyOf(readAll("txn", "read_committed", 1000))).containsExactly("x");
    }

    @Test
    void confluentKafkaTransactionsAndReadCommitted() throws Exception {
        ExternalClients.require("confluent-kafka (" + ExternalClients.PYTHON + ")", ExternalClients.PYTHON, "-c",
                "import confluent_kafka");
        Path script = Path.of("src/test/python/confluent_transactions.py").toAbsolutePath();
        var r = ExternalClients.run(new byte[0], List.of(ExternalClients.PYTHON, script.toString(), fx.bootstrap()));
        assertThat(r.exit()).as(r.output()).isZero();
        assertThat(r.output()).contains("confluent transactions OK");
    }

    @Test
    void deletingATopicDropsItsTransactionCheckpointsAndLeaderRecords() throws Exception {
        try (KafkaProducer<String, String> p = transactional("t-delete", Map.of())) {
            p.beginTransaction();
            send(p, "txn", "gone-", 6);
            p.commitTransaction();
        }
        try (Admin admin = fx.admin()) {
            admin.deleteTopics(List.of("txn")).all().get();
        }
        fx.shell.close();
        try (io.s3stream.StreamStorage storage = io.s3stream.StreamStorage.open(fx.config().storageConfig())) {
            assertThat(storage.keyValues().list("kafka/txn-index/").join()).isEmpty();
            assertThat(storage.keyValues().list("kafka/leader/txn/").join()).isEmpty();
            assertThat(storage.keyValues().get("kafka/topic/txn").join()).isEmpty();
        }
        fx.shell = KafkaShell.start(fx.config());
    }
}
