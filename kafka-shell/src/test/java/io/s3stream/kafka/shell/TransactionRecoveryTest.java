package io.s3stream.kafka.shell;

import io.s3stream.KeyValues;
import io.s3stream.StreamStorage;
import io.s3stream.testing.MemBackends;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.TransactionResult;
import org.apache.kafka.common.requests.WriteTxnMarkersRequest;
import org.apache.kafka.common.requests.WriteTxnMarkersResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Transactions through failures: a transaction whose partitions are led by three different shells (markers written
 * over WriteTxnMarkers), a commit decided by a coordinator that died before writing any marker (finished by the next
 * one), and a shell SIGKILLed in the middle of transactions (the partitions rebuild their transaction state from the
 * stream, the producer then commits or aborts).
 */
@Timeout(180)
class TransactionRecoveryTest {

    private static List<String> readCommitted(String bootstrap, String topic, int partitions, long quietMs) {
        return TransactionsTest.readAll(bootstrap, topic, partitions, "read_committed", quietMs);
    }

    private static List<String> values(String prefix, int count) {
        return TransactionsTest.values(prefix, count);
    }

    private static void send(KafkaProducer<String, String> p, String topic, int partitions, String prefix, int count) {
        for (int i = 0; i < count; i++) {
            p.send(new ProducerRecord<>(topic, i % partitions, null, prefix + i));
        }
    }

    @Test
    void aTransactionOverPartitionsLedByThreeShells(@TempDir Path tmp) throws Exception {
        String wal = "txn-multi-" + System.nanoTime();
        List<KafkaShell> shells = new ArrayList<>();
        try {
            for (int node = 1; node <= 3; node++) {
                shells.add(MultiShellTest.shell(tmp, node, wal + "-" + node));
            }
            String bootstrap = shells.getFirst().bootstrapServers();
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
                FailoverProcessTest.createSpread(admin, "spread", 6);
            }
            // Several transactional ids, so that each of the shells coordinates some of them.
            List<String> expected = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                try (KafkaProducer<String, String> p = ProcessBrokerTest.producer(bootstrap, Map.of(
                        ProducerConfig.TRANSACTIONAL_ID_CONFIG, "multi-" + t))) {
                    p.initTransactions();
                    p.beginTransaction();
                    send(p, "spread", 6, "c" + t + "-", 24);
                    p.commitTransaction();
                    p.beginTransaction();
                    send(p, "spread", 6, "a" + t + "-", 12);
                    p.flush();
                    p.abortTransaction();
                    expected.addAll(values("c" + t + "-", 24));
                }
            }
            assertThat(readCommitted(bootstrap, "spread", 6, 1500)).containsExactlyInAnyOrderElementsOf(expected);
        } finally {
            for (KafkaShell s : shells) {
                s.close();
            }
            for (int node = 1; node <= 3; node++) {
                MemBackends.clearWal(wal + "-" + node);
            }
        }
    }

    /**
     * A coordinator recorded PrepareCommit, wrote the marker into one partition of three and died (the marker is
     * written with WriteTxnMarkers as the coordinator writes it, the state set in the key-value space while the shell
     * is down: exactly what such a death leaves). The next coordinator writes the two missing markers; the partition
     * that has one already is not marked twice.
     */
    @Test
    void aCommitHalfWrittenByACoordinatorThatDiedIsFinishedByTheNextOne() throws Exception {
        ShellFixture fx = new ShellFixture(Map.of("s3stream.kafka.transaction.sweep.ms", "200"));
        try {
            try (Admin admin = fx.admin()) {
                admin.createTopics(List.of(new NewTopic("prep", 3, (short) 1))).all().get();
            }
            KafkaProducer<String, String> p = fx.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "prep-1"));
            p.initTransactions();
            p.beginTransaction();
            send(p, "prep", 3, "decided-", 30);
            p.flush();
            TransactionDescription d;
            try (Admin admin = fx.admin()) {
                d = admin.describeTransactions(List.of("prep-1")).description("prep-1").get();
            }
            try (RawClient raw = new RawClient(fx.shell.port())) {
                WriteTxnMarkersResponse r = (WriteTxnMarkersResponse) raw.call(ApiKeys.WRITE_TXN_MARKERS, (short) 1,
                        new WriteTxnMarkersRequest.Builder(List.of(new WriteTxnMarkersRequest.TxnMarkerEntry(d.producerId(),
                                (short) d.producerEpoch(), 0, TransactionResult.COMMIT, List.of(new TopicPartition("prep", 0)),
                                (short) 1))).build((short) 1));
                assertThat(r.errorsByProducerId().get(d.producerId())).containsEntry(new TopicPartition("prep", 0), Errors.NONE);
            }
            // Partition 0 is decided, the other two are not.
            assertThat(readCommitted(fx.bootstrap(), "prep", 3, 500)).hasSize(10);
            p.close(Duration.ZERO);
            fx.shell.close();
            try (StreamStorage storage = StreamStorage.open(fx.config().storageConfig())) {
                KeyValues kv = storage.keyValues();
                byte[] before = kv.get("kafka/txn/prep-1").join().orElseThrow();
                String text = new String(before, StandardCharsets.UTF_8);
                assertThat(text).contains(" ONGOING ");
                byte[] prepared = text.replace(" ONGOING ", " PREPARE_COMMIT ").getBytes(StandardCharsets.UTF_8);
                assertThat(kv.compareAndSet("kafka/txn/prep-1", before, prepared).join()).isTrue();
            }
            fx.shell = KafkaShell.start(fx.config());
            long deadline = System.nanoTime() + 30_000_000_000L;
            List<String> seen;
            do {
                seen = readCommitted(fx.bootstrap(), "prep", 3, 500);
            } while (seen.size() < 30 && System.nanoTime() < deadline);
            assertThat(seen).containsExactlyInAnyOrderElementsOf(values("decided-", 30));
            try (Admin admin = fx.admin()) {
                // One commit marker per partition: each partition ends at its 10 records plus one marker.
                for (int partition = 0; partition < 3; partition++) {
                    TopicPartition tp = new TopicPartition("prep", partition);
                    assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get().offset())
                            .isEqualTo(11);
                }
            }
        } finally {
            fx.close();
        }
    }

    /**
     * A broker process SIGKILLed while two transactions are open (one producer then commits, the other aborts) and
     * while a third is open and never ended (its timeout aborts it). After the restart, the partitions rebuild their
     * open transactions from the stream, so read_committed readers see exactly the committed records.
     */
    @Test
    void openTransactionsAcrossASigkill(@TempDir Path tmp) throws Exception {
        Path data = tmp.resolve("data");
        int port = ProcessBrokerTest.freePort();
        ProcessBrokerTest.Broker broker = new ProcessBrokerTest.Broker(data, port,
                "s3stream.kafka.transaction.sweep.ms=200");
        try {
            String bootstrap = broker.bootstrap();
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
                admin.createTopics(List.of(new NewTopic("crash", 4, (short) 1))).all().get();
            }
            Map<String, Object> cfg = new HashMap<>(Map.of(ProducerConfig.MAX_BLOCK_MS_CONFIG, 60_000,
                    ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000));
            cfg.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "crash-commit");
            KafkaProducer<String, String> committer = ProcessBrokerTest.producer(bootstrap, cfg);
            cfg.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "crash-abort");
            KafkaProducer<String, String> aborter = ProcessBrokerTest.producer(bootstrap, cfg);
            cfg.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "crash-abandoned");
            cfg.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 3_000);
            KafkaProducer<String, String> abandoned = ProcessBrokerTest.producer(bootstrap, cfg);
            try (committer; aborter) {
                for (KafkaProducer<String, String> p : List.of(committer, aborter, abandoned)) {
                    p.initTransactions();
                    p.beginTransaction();
                }
                try (KafkaProducer<String, String> plain = ProcessBrokerTest.producer(bootstrap, Map.of())) {
                    send(committer, "crash", 4, "commit-", 40);
                    send(plain, "crash", 4, "plain-", 8);
                    send(aborter, "crash", 4, "abort-", 40);
                    send(abandoned, "crash", 4, "abandoned-", 40);
                    for (KafkaProducer<String, String> p : List.of(committer, aborter, abandoned, plain)) {
                        p.flush();
                    }
                }
                abandoned.close(Duration.ZERO);

                broker.process.destroyForcibly(); // SIGKILL: no checkpoint at close, the open rebuilds from the stream
                broker.process.waitFor();
                broker = new ProcessBrokerTest.Broker(data, port, "s3stream.kafka.transaction.sweep.ms=200");

                send(committer, "crash", 4, "commit-after-", 8);
                committer.commitTransaction();
                aborter.abortTransaction();
            }
            List<String> expected = new ArrayList<>(values("commit-", 40));
            expected.addAll(values("plain-", 8));
            expected.addAll(values("commit-after-", 8));
            long deadline = System.nanoTime() + 30_000_000_000L;
            List<String> seen;
            do {
                // The abandoned transaction holds the last stable offset until its timeout aborts it.
                seen = readCommitted(bootstrap, "crash", 4, 500);
            } while (seen.size() < expected.size() && System.nanoTime() < deadline);
            assertThat(seen).containsExactlyInAnyOrderElementsOf(expected);
        } finally {
            broker.close();
        }
    }
}
