package io.s3stream.kafka.shell;

import io.s3stream.internal.wal.InMemoryWal;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two shells on one object store (one manifest): each partition is led by one shell, the other answers
 * NOT_LEADER_OR_FOLLOWER, Metadata names the leader, and AlterPartitionReassignments moves a partition while an
 * idempotent producer keeps writing: nothing lost, nothing duplicated.
 */
@Timeout(90)
class MultiShellTest {
    private static final System.Logger LOG = System.getLogger(MultiShellTest.class.getName());

    static KafkaShell shell(Path tmp, int node, String wal) {
        Map<String, String> m = new HashMap<>();
        m.put("listeners", "PLAINTEXT://127.0.0.1:0");
        m.put("node.id", Integer.toString(node));
        m.put("group.initial.rebalance.delay.ms", "0");
        m.put("s3stream.data.dir", tmp.resolve("node-" + node).toString());
        m.put("s3stream.wal", "mem://" + wal + "?capacity=64MiB");
        m.put("s3stream.object.store", tmp.resolve("objects").toUri().toString());
        m.put("s3stream.log.cache.bytes", Long.toString(32L << 20));
        m.put("s3stream.block.cache.bytes", Long.toString(8L << 20));
        m.put("s3stream.upload.threshold.bytes", Long.toString(4L << 20));
        m.put("s3stream.kafka.reconcile.ms", "100");
        return KafkaShell.start(ShellConfig.of(m));
    }

    static int leader(Admin admin, String topic, int partition) throws Exception {
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        var leader = d.partitions().get(partition).leader();
        return leader == null ? -1 : leader.id();
    }

    @Test
    void partitionsAreLedByOneShellAndMoveWithTheAdminApi(@TempDir Path tmp) throws Exception {
        String wal1 = "ms1-" + UUID.randomUUID();
        String wal2 = "ms2-" + UUID.randomUUID();
        try (KafkaShell one = shell(tmp, 1, wal1); KafkaShell two = shell(tmp, 2, wal2)) {
            String both = one.bootstrapServers() + "," + two.bootstrapServers();
            Properties ap = new Properties();
            ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, one.bootstrapServers());
            try (Admin admin = Admin.create(ap)) {
                admin.createTopics(List.of(new NewTopic("moving", 2, (short) 1))).all().get();
                long deadline = System.currentTimeMillis() + 15_000;
                while (admin.describeCluster().nodes().get().size() < 2 && System.currentTimeMillis() < deadline) {
                    Thread.sleep(100);
                }
                assertThat(admin.describeCluster().nodes().get()).hasSize(2);
                assertThat(leader(admin, "moving", 0)).isEqualTo(1);
            }
            // Shell 2 learns the topic from the manifest and names shell 1 as the leader; it refuses to write it.
            Properties ap2 = new Properties();
            ap2.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, two.bootstrapServers());
            try (Admin admin2 = Admin.create(ap2)) {
                long deadline = System.currentTimeMillis() + 15_000;
                int seen = -1;
                while (seen != 1 && System.currentTimeMillis() < deadline) {
                    try {
                        seen = leader(admin2, "moving", 0);
                    } catch (Exception notYet) {
                        Thread.sleep(100); // unknown topic on shell 2 until its view catches up
                    }
                }
                assertThat(seen).isEqualTo(1);
            }
            try (RawClient raw = new RawClient(two.port())) {
                // Admin may have asked shell 1; ask shell 2 itself until its view has the topic.
                long deadline = System.currentTimeMillis() + 15_000;
                Errors e = raw.produce("moving", 0, RawClient.idempotent(999, (short) 0, 0, 1)).error();
                while (e == Errors.UNKNOWN_TOPIC_OR_PARTITION && System.currentTimeMillis() < deadline) {
                    Thread.sleep(100);
                    e = raw.produce("moving", 0, RawClient.idempotent(999, (short) 0, 0, 1)).error();
                }
                assertThat(e).isEqualTo(Errors.NOT_LEADER_OR_FOLLOWER);
            }

            int n = 3000;
            List<Exception> failures = java.util.Collections.synchronizedList(new ArrayList<>());
            Map<String, Object> pc = new HashMap<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, both,
                    ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName(),
                    ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName(),
                    ProducerConfig.LINGER_MS_CONFIG, 1, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000));
            long moveMs;
            try (KafkaProducer<String, String> p = new KafkaProducer<>(pc); Admin admin = Admin.create(ap)) {
                Thread writer = Thread.ofPlatform().start(() -> {
                    for (int i = 0; i < n; i++) {
                        p.send(new ProducerRecord<>("moving", 0, null, "v" + i), (m, e) -> {
                            if (e != null) {
                                failures.add(e);
                            }
                        });
                        if (i % 100 == 0) {
                            try {
                                Thread.sleep(20);
                            } catch (InterruptedException e) {
                                return;
                            }
                        }
                    }
                });
                Thread.sleep(200);
                long start = System.nanoTime();
                admin.alterPartitionReassignments(Map.of(new TopicPartition("moving", 0),
                        Optional.of(new NewPartitionReassignment(List.of(2))))).all().get();
                long deadline = System.currentTimeMillis() + 20_000;
                while (leader(admin, "moving", 0) != 2 && System.currentTimeMillis() < deadline) {
                    Thread.sleep(10);
                }
                moveMs = (System.nanoTime() - start) / 1_000_000;
                assertThat(leader(admin, "moving", 0)).isEqualTo(2);
                assertThat(leader(admin, "moving", 1)).as("the other partition stays").isEqualTo(1);
                assertThat(admin.listPartitionReassignments().reassignments().get()).isEmpty();
                writer.join();
                p.flush();
            }
            LOG.log(System.Logger.Level.INFO, "partition move took " + moveMs + " ms");
            System.out.println("MOVE_MS " + moveMs);
            assertThat(failures).isEmpty();

            try (RawClient raw = new RawClient(one.port())) {
                assertThat(raw.produce("moving", 0, RawClient.idempotent(998, (short) 0, 0, 1)).error())
                        .isEqualTo(Errors.NOT_LEADER_OR_FOLLOWER);
            }
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, both,
                    ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                    ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()))) {
                c.assign(List.of(new TopicPartition("moving", 0)));
                c.seekToBeginning(c.assignment());
                List<String> values = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 20_000;
                while (values.size() < n && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        values.add(r.value());
                    }
                }
                c.poll(Duration.ofMillis(300)).forEach(r -> values.add(r.value()));
                List<String> expected = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    expected.add("v" + i);
                }
                assertThat(values).as("every record once, in order, across the move").isEqualTo(expected);
            }
        } finally {
            InMemoryWal.clear(wal1);
            InMemoryWal.clear(wal2);
        }
    }
}
