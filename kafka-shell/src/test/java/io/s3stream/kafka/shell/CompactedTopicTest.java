package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Compacted topics ({@code cleanup.policy=compact}) with the Java client: after compaction a reader from the start
 * sees each key's latest value at its original offset, tombstones until {@code delete.retention.ms} and then not at
 * all; records without a key are refused; the policy can be altered; compaction survives restarts.
 */
@Timeout(180)
class CompactedTopicTest {
    /** Uploads every 200 ms and a compaction round every 300 ms, so data reaches stream objects and is compacted soon. */
    static final Map<String, String> FAST = Map.of("s3stream.upload.interval.ms", "200",
            "s3stream.compaction.interval.ms", "300", "log.retention.check.interval.ms", "200",
            "s3stream.kafka.reconcile.ms", "100");

    static final String TOPIC = "table";
    static final TopicPartition TP = new TopicPartition(TOPIC, 0);

    /** Every record from the start to the end offset, in order. */
    static List<ConsumerRecord<String, String>> readAll(ShellFixture fx) {
        return readAll(fx, TP);
    }

    static List<ConsumerRecord<String, String>> readAll(ShellFixture fx, TopicPartition tp) {
        try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of())) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            List<ConsumerRecord<String, String>> out = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (c.position(tp) < end && System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(out::add);
            }
            assertThat(c.position(tp)).as("read up to the end offset").isEqualTo(end);
            return out;
        }
    }

    /**
     * Restarts the shell until a reader from the start sees at most {@code records} records (reads after a restart
     * come from objects; the log cache keeps recent data as written). Returns what it read.
     */
    static List<ConsumerRecord<String, String>> awaitCompacted(ShellFixture fx, int records) throws Exception {
        return awaitCompacted(fx, TP, records);
    }

    static List<ConsumerRecord<String, String>> awaitCompacted(ShellFixture fx, TopicPartition tp, int records)
            throws Exception {
        List<ConsumerRecord<String, String>> read = List.of();
        for (int attempt = 0; attempt < 20; attempt++) {
            long deadline = System.currentTimeMillis() + 10_000;
            while (fx.shell.metrics().compaction().keyCompactionRuns() == 0 && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            fx.restart();
            read = readAll(fx, tp);
            if (read.size() <= records) {
                return read;
            }
        }
        return read;
    }

    /** Waits (up to a minute) until at most {@code most} markers of {@code tp} hold a record; returns those left. */
    static List<MutableRecordBatch> awaitMarkers(ShellFixture fx, TopicPartition tp, int most) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        List<MutableRecordBatch> markers;
        while (true) {
            try (RawClient raw = new RawClient(fx.shell.port())) {
                markers = raw.batches(tp.topic(), tp.partition(), 0).stream()
                        .filter(b -> b.isControlBatch() && b.countOrNull() > 0).toList();
            }
            if (markers.size() <= most || System.currentTimeMillis() > deadline) {
                return markers;
            }
            Thread.sleep(200);
        }
    }

    @Test
    void readersSeeTheLatestValueOfEachKeyThenTombstonesGoAfterDeleteRetention() throws Exception {
        try (ShellFixture fx = new ShellFixture(FAST); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1).configs(Map.of("cleanup.policy", "compact",
                    "min.cleanable.dirty.ratio", "0.01", "delete.retention.ms", "4000")))).all().get();
            try (KafkaProducer<String, String> p = fx.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 5))) {
                for (int round = 0; round < 10; round++) {
                    for (int k = 0; k < 500; k++) {
                        p.send(new ProducerRecord<>(TOPIC, 0, "key-" + k, "v" + round + "-" + k));
                    }
                }
                for (int k = 0; k < 50; k++) {
                    p.send(new ProducerRecord<>(TOPIC, 0, "key-" + k, null)); // deletes
                }
                p.flush();
            }
            // 5,050 records: 500 keys x 10 rounds, then 50 tombstones.
            List<ConsumerRecord<String, String>> read = awaitCompacted(fx, 500);
            assertThat(read).hasSize(500);
            long previous = -1;
            for (ConsumerRecord<String, String> r : read) {
                assertThat(r.offset()).isGreaterThan(previous);
                previous = r.offset();
                int k = Integer.parseInt(r.key().substring(4));
                if (k < 50) {
                    assertThat(r.value()).as("tombstone of " + r.key()).isNull();
                    assertThat(r.offset()).isEqualTo(5_000 + k);
                } else {
                    assertThat(r.value()).isEqualTo("v9-" + k);
                    assertThat(r.offset()).isEqualTo(4_500 + k);
                }
            }
            assertThat(fx.shell.metrics().compaction().failedRuns()).isZero();

            // After delete.retention.ms the tombstones go too (the library runs again at their delete horizon).
            Thread.sleep(4_500);
            read = awaitCompacted(fx, 450);
            assertThat(read).hasSize(450).allSatisfy(r -> assertThat(r.value()).isNotNull());
            // The end offset and the offsets of what is left never change.
            try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of())) {
                assertThat(c.endOffsets(List.of(TP)).get(TP)).isEqualTo(5_050);
            }
            assertThat(read.getFirst().offset()).isEqualTo(4_550);
        }
    }

    /**
     * Every record deleted: the partition holds only empty batch headers, and a reader from the start still reaches the
     * end offset (with nothing left to carry its position there, it used to stop short and wait for good).
     */
    @Test
    void aTopicWhoseRecordsAreAllDeletedStillReadsToItsEndAndTakesNewRecords() throws Exception {
        try (ShellFixture fx = new ShellFixture(FAST); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1).configs(Map.of("cleanup.policy", "compact",
                    "min.cleanable.dirty.ratio", "0.01", "delete.retention.ms", "500")))).all().get();
            try (KafkaProducer<String, String> p = fx.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 5))) {
                for (int k = 0; k < 100; k++) {
                    p.send(new ProducerRecord<>(TOPIC, 0, "key-" + k, "value-" + k));
                }
                p.flush();
                for (int k = 0; k < 100; k++) {
                    p.send(new ProducerRecord<>(TOPIC, 0, "key-" + k, null));
                }
                p.flush();
            }
            assertThat(awaitCompacted(fx, 0)).isEmpty();
            try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
                assertThat(p.send(new ProducerRecord<>(TOPIC, 0, "key-0", "again")).get().offset()).isEqualTo(200);
            }
            assertThat(readAll(fx)).singleElement().satisfies(r -> {
                assertThat(r.offset()).isEqualTo(200);
                assertThat(r.value()).isEqualTo("again");
            });
            assertThat(fx.shell.metrics().compaction().failedRuns()).isZero();
        }
    }

    @Test
    void recordsWithoutAKeyAreRefusedAndThePolicyIsValidated() throws Exception {
        try (ShellFixture fx = new ShellFixture(FAST); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1)
                    .configs(Map.of("cleanup.policy", "compact,delete")))).all().get();
            try (KafkaProducer<String, String> p = fx.producer(Map.of(ProducerConfig.RETRIES_CONFIG, 0))) {
                assertThatThrownBy(() -> p.send(new ProducerRecord<>(TOPIC, 0, null, "no key")).get())
                        .isInstanceOf(ExecutionException.class).cause().isInstanceOf(InvalidRecordException.class)
                        .hasMessageContaining("without a key");
                p.send(new ProducerRecord<>(TOPIC, 0, "k", "keyed")).get();
            }
            assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("bad", 1, (short) 1)
                    .configs(Map.of("cleanup.policy", "compcat")))).all().get())
                    .cause().isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("cleanup.policy");
            assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("bad", 1, (short) 1)
                    .configs(Map.of("min.cleanable.dirty.ratio", "1.5")))).all().get())
                    .cause().isInstanceOf(InvalidConfigurationException.class)
                    .hasMessageContaining("min.cleanable.dirty.ratio");
            // Back to delete: keyless records are accepted again.
            ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, TOPIC);
            admin.incrementalAlterConfigs(Map.of(topic, List.of(new AlterConfigOp(
                    new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.SET)))).all().get();
            try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
                p.send(new ProducerRecord<>(TOPIC, 0, null, "no key")).get();
            }
        }
    }

    @Test
    void turningCompactionOnForAnExistingTopicCompactsWhatIsThere() throws Exception {
        try (ShellFixture fx = new ShellFixture(FAST); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1))).all().get();
            Map<String, String> latest = new HashMap<>();
            try (KafkaProducer<String, String> p = fx.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 5))) {
                for (int i = 0; i < 3_000; i++) {
                    String key = "k" + (i % 100);
                    p.send(new ProducerRecord<>(TOPIC, 0, key, "value-" + i));
                    latest.put(key, "value-" + i);
                }
                p.flush();
            }
            ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, TOPIC);
            admin.incrementalAlterConfigs(Map.of(topic, List.of(
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("min.cleanable.dirty.ratio", "0.01"),
                            AlterConfigOp.OpType.SET)))).all().get();
            List<ConsumerRecord<String, String>> read = awaitCompacted(fx, 100);
            assertThat(read).hasSize(100);
            Map<String, String> seen = new HashMap<>();
            read.forEach(r -> seen.put(r.key(), r.value()));
            assertThat(seen).isEqualTo(latest);
        }
    }

    @Test
    void abortedRecordsAreRemovedAndNeverSupersedeCommittedOnes() throws Exception {
        try (ShellFixture fx = new ShellFixture(FAST); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1).configs(Map.of("cleanup.policy", "compact",
                    "min.cleanable.dirty.ratio", "0.01")))).all().get();
            try (KafkaProducer<String, String> p = fx.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "t1"))) {
                p.initTransactions();
                p.beginTransaction();
                for (int k = 0; k < 100; k++) {
                    p.send(new ProducerRecord<>(TOPIC, 0, "key-" + k, "committed-" + k));
                }
                p.commitTransaction();
                p.beginTransaction();
                for (int k = 0; k < 100; k++) {
                    p.send(new ProducerRecord<>(TOPIC, 0, "key-" + k, "aborted-" + k));
                }
                p.flush();
                p.abortTransaction();
                p.beginTransaction();
                p.send(new ProducerRecord<>(TOPIC, 0, "key-0", "committed-again"));
                p.commitTransaction();
            }
            // 100 committed, 100 aborted, 1 committed, plus three markers: offsets 0..203.
            List<ConsumerRecord<String, String>> read = awaitCompacted(fx, 100);
            assertThat(read).hasSize(100);
            Map<String, String> seen = new HashMap<>();
            read.forEach(r -> seen.put(r.key(), r.value()));
            assertThat(seen).hasSize(100).containsEntry("key-0", "committed-again").containsEntry("key-1", "committed-1")
                    .containsEntry("key-99", "committed-99");
            try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of("isolation.level", "read_committed"))) {
                c.assign(List.of(TP));
                c.seekToBeginning(List.of(TP));
                List<ConsumerRecord<String, String>> committed = new ArrayList<>();
                long end = c.endOffsets(List.of(TP)).get(TP);
                long deadline = System.currentTimeMillis() + 20_000;
                while (c.position(TP) < end && System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(200)).forEach(committed::add);
                }
                assertThat(committed).extracting(ConsumerRecord::value).doesNotContain("aborted-0")
                        .hasSize(100).contains("committed-again", "committed-50");
            }
        }
    }

    /**
     * Kafka Streams under exactly-once writes a commit marker into its compacted changelogs at every commit. A marker
     * goes once no record of its transaction is left and delete.retention.ms has passed; abort markers and the markers
     * of transactions that still have records stay; a restart after the markers went rebuilds the transaction state
     * (the last stable offset reaches the end, read_committed readers see what they saw before).
     */
    @Test
    void commitMarkersGoAfterDeleteRetentionOnceTheirTransactionsHaveNoRecordsLeft() throws Exception {
        try (ShellFixture fx = new ShellFixture(FAST); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1).configs(Map.of("cleanup.policy", "compact",
                    "min.cleanable.dirty.ratio", "0.01", "delete.retention.ms", "1000")))).all().get();
            try (KafkaProducer<String, String> p = fx.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "t-m"))) {
                p.initTransactions();
                for (int t = 0; t < 20; t++) {
                    p.beginTransaction();
                    for (int k = 0; k < 10; k++) {
                        p.send(new ProducerRecord<>(TOPIC, 0, "key-" + k, "t" + t + "-" + k));
                    }
                    p.commitTransaction();
                }
                p.beginTransaction();
                for (int k = 0; k < 10; k++) {
                    p.send(new ProducerRecord<>(TOPIC, 0, "key-" + k, "aborted"));
                }
                p.flush();
                p.abortTransaction();
                p.beginTransaction();
                p.send(new ProducerRecord<>(TOPIC, 0, "key-0", "last"));
                p.commitTransaction();
            }
            // 20 transactions of 10 records and a marker, an aborted one, a last one of 1 record: offsets 0..232.
            assertThat(awaitCompacted(fx, 10)).hasSize(10);
            // Left: the commit of transaction 19 (key-1..9 are still its records), the abort, the last commit.
            List<MutableRecordBatch> markers = awaitMarkers(fx, TP, 3);
            assertThat(markers).extracting(MutableRecordBatch::baseOffset).containsExactly(219L, 230L, 232L);
            assertThat(markers.getFirst().deleteHorizonMs()).isEmpty();
            assertThat(fx.shell.metrics().compaction().failedRuns()).isZero();

            fx.restart();
            long deadline = System.currentTimeMillis() + 30_000;
            try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of("isolation.level", "read_committed"))) {
                c.assign(List.of(TP));
                assertThat(c.endOffsets(List.of(TP)).get(TP)).as("the last stable offset").isEqualTo(233);
                c.seekToBeginning(List.of(TP));
                Map<String, String> seen = new HashMap<>();
                while (c.position(TP) < 233 && System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(200)).forEach(r -> seen.put(r.key(), r.value()));
                }
                assertThat(seen).hasSize(10).containsEntry("key-0", "last").containsEntry("key-9", "t19-9");
            }
        }
    }

    /** librdkafka reads a compacted transactional topic whose spent commit markers went (empty control batches). */
    @Test
    void confluentKafkaReadsACompactedTransactionalTopicWhoseMarkersWent() throws Exception {
        ExternalClients.require("confluent-kafka (" + ExternalClients.PYTHON + ")", ExternalClients.PYTHON, "-c",
                "import confluent_kafka");
        String script = java.nio.file.Path.of("src/test/python/confluent_compacted_txn.py").toAbsolutePath().toString();
        try (ShellFixture fx = new ShellFixture(FAST)) {
            var produced = ExternalClients.run(new byte[0], List.of(ExternalClients.PYTHON, script, "produce",
                    fx.bootstrap()));
            assertThat(produced.exit()).as(produced.output()).isZero();
            TopicPartition tp = new TopicPartition("py-compact-txn", 0);
            assertThat(awaitCompacted(fx, tp, 10)).hasSize(10);
            assertThat(awaitMarkers(fx, tp, 3)).extracting(MutableRecordBatch::baseOffset)
                    .containsExactly(219L, 230L, 232L);
            var consumed = ExternalClients.run(new byte[0], List.of(ExternalClients.PYTHON, script, "consume",
                    fx.bootstrap()));
            assertThat(consumed.exit()).as(consumed.output()).isZero();
            assertThat(consumed.output()).contains("confluent-kafka read_committed OK 10 records",
                    "confluent-kafka read_uncommitted OK 10 records");
        }
    }

    @Test
    void confluentKafkaReadsACompactedTopic() throws Exception {
        ExternalClients.require("confluent-kafka (" + ExternalClients.PYTHON + ")", ExternalClients.PYTHON, "-c",
                "import confluent_kafka");
        String script = java.nio.file.Path.of("src/test/python/confluent_compacted.py").toAbsolutePath().toString();
        try (ShellFixture fx = new ShellFixture(FAST)) {
            var produced = ExternalClients.run(new byte[0], List.of(ExternalClients.PYTHON, script, "produce",
                    fx.bootstrap()));
            assertThat(produced.exit()).as(produced.output()).isZero();
            assertThat(produced.output()).contains("keyless refused: INVALID_RECORD");
            assertThat(awaitCompacted(fx, new TopicPartition("py-compact", 0), 200)).hasSize(200);
            var consumed = ExternalClients.run(new byte[0], List.of(ExternalClients.PYTHON, script, "consume",
                    fx.bootstrap()));
            assertThat(consumed.exit()).as(consumed.output()).isZero();
            assertThat(consumed.output()).contains("confluent-kafka compacted OK 200 records");
        }
    }
}
