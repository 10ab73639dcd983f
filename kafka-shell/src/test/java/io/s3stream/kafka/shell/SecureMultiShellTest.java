package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two shells whose client listener authenticates (SASL) and authorizes (ACLs), with a second, PLAINTEXT listener for
 * each other ({@code inter.broker.listener.name}): a transaction over partitions led by both commits, which needs the
 * coordinator's shell to write markers on the other shell over that listener; each client is answered with the
 * endpoints of the listener it came in on.
 */
@Timeout(120)
class SecureMultiShellTest {

    @Test
    void aTransactionOverBothShellsCommits(@TempDir Path tmp) throws Exception {
        Map<String, String> secured = new HashMap<>(AclTest.secured());
        secured.put("listeners", "SASL_PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0");
        secured.put("listener.security.protocol.map", "SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:PLAINTEXT");
        secured.put("inter.broker.listener.name", "INTERNAL");
        try (KafkaShell one = MultiShellTest.shell(tmp, 1, "sec1-" + UUID.randomUUID(), secured);
             KafkaShell two = MultiShellTest.shell(tmp, 2, "sec2-" + UUID.randomUUID(), secured)) {
            String both = one.bootstrapServers() + "," + two.bootstrapServers();
            Map<String, Object> admin = new HashMap<>(SaslTest.client("admin", "admin-secret"));
            admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, both);
            try (Admin a = Admin.create(admin)) {
                a.createTopics(List.of(new NewTopic("spread", 2, (short) 1))).all().get();
                long deadline = System.currentTimeMillis() + 20_000;
                Set<Integer> leaders = new HashSet<>();
                while (leaders.size() < 2 && System.currentTimeMillis() < deadline) {
                    a.alterPartitionReassignments(Map.of(new TopicPartition("spread", 1), java.util.Optional.of(
                            new org.apache.kafka.clients.admin.NewPartitionReassignment(List.of(2))))).all().get();
                    Thread.sleep(300);
                    leaders.clear();
                    a.describeTopics(List.of("spread")).allTopicNames().get().get("spread").partitions()
                            .forEach(p -> leaders.add(p.leader() == null ? -1 : p.leader().id()));
                }
                assertThat(leaders).containsExactlyInAnyOrder(1, 2);
                // Clients of the SASL listener are told the SASL listeners' ports, never the internal ones.
                assertThat(a.describeCluster().nodes().get()).extracting(n -> n.port())
                        .containsExactlyInAnyOrder(one.port(), two.port());
                // Shells reach each other as ANONYMOUS on the internal listener; writing markers is all it may do.
                a.createAcls(List.of(new AclBinding(new ResourcePattern(ResourceType.CLUSTER, "kafka-cluster",
                        PatternType.LITERAL), new AccessControlEntry("User:ANONYMOUS", "127.0.0.1",
                        AclOperation.CLUSTER_ACTION, AclPermissionType.ALLOW)))).all().get();
            }
            try (Admin internal = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                    "127.0.0.1:" + one.port("internal")))) {
                assertThat(internal.describeCluster().nodes().get()).extracting(n -> n.port())
                        .containsExactlyInAnyOrder(one.port("INTERNAL"), two.port("INTERNAL"));
                // ANONYMOUS may write markers, not topics.
                assertThat(internal.listTopics().names().get()).isEmpty();
            }
            Map<String, Object> p = new HashMap<>(SaslTest.client("admin", "admin-secret"));
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, both);
            p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "spread-tx");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                producer.initTransactions();
                producer.beginTransaction();
                producer.send(new ProducerRecord<>("spread", 0, null, "a")).get(20, TimeUnit.SECONDS);
                producer.send(new ProducerRecord<>("spread", 1, null, "b")).get(20, TimeUnit.SECONDS);
                producer.commitTransaction();
            }
            Map<String, Object> c = new HashMap<>(SaslTest.client("admin", "admin-secret"));
            c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, both);
            c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
                consumer.assign(List.of(new TopicPartition("spread", 0), new TopicPartition("spread", 1)));
                Set<String> seen = new HashSet<>();
                long deadline = System.currentTimeMillis() + 20_000;
                while (seen.size() < 2 && System.currentTimeMillis() < deadline) {
                    consumer.poll(Duration.ofMillis(200)).forEach(r -> seen.add(r.value()));
                }
                assertThat(seen).as("both committed records, each after its marker").containsExactlyInAnyOrder("a", "b");
            }
        }
    }
}
