package io.s3stream.kafka.shell;

import io.s3stream.InvalidConfigException;
import io.s3stream.kafka.shell.network.InterShellSecurity;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
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
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
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
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Two shells whose client listener authenticates and authorizes (ACLs): a transaction over partitions led by both
 * commits, which needs the coordinator's shell to write markers on the other shell over the inter-broker listener:
 * a second, PLAINTEXT listener for each other ({@code inter.broker.listener.name}; each client is answered with the
 * endpoints of the listener it came in on), or the one secured listener itself, the shells logging in with SCRAM over
 * TLS or presenting their certificate (mutual TLS) as Kafka's brokers do.
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
                spreadOverBoth(a);
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
            commitAcrossBoth(both, SaslTest.client("admin", "admin-secret"));
        }
    }

    /**
     * Shells with one listener, SASL_SSL, log in to each other over it as a Kafka broker would: TLS trusting the
     * listener's trust store and checking the host name, then SCRAM-SHA-256 as the JAAS config's own user (a super
     * user), whose credential is created through the shells like any other; clients use PLAIN on the same listener.
     */
    @Test
    void shellsLogInToEachOtherWithScramOverTls(@TempDir Path tmp) throws Exception {
        Path keys = Files.createDirectories(tmp.resolve("keys"));
        Path keyStore = TlsTest.keyStore(keys, "shell");
        Path trustStore = TlsTest.trustStore(keys, "shell");
        Map<String, String> secured = new HashMap<>(AclTest.secured());
        secured.remove("listener.name.sasl_plaintext.plain.sasl.jaas.config");
        secured.put("listeners", "SASL_SSL://127.0.0.1:0");
        secured.put("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256");
        secured.put("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-256");
        secured.put("listener.name.sasl_ssl.plain.sasl.jaas.config", "org.apache.kafka.common.security.plain."
                + "PlainLoginModule required user_admin=\"admin-secret\";");
        secured.put("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config", "org.apache.kafka.common.security.scram."
                + "ScramLoginModule required username=\"admin\" password=\"shell-secret\";");
        secured.put("ssl.keystore.location", keyStore.toString());
        secured.put("ssl.keystore.password", TlsTest.PASSWORD);
        secured.put("ssl.truststore.location", trustStore.toString());
        secured.put("ssl.truststore.password", TlsTest.PASSWORD);
        Map<String, Object> client = new HashMap<>(SaslTest.client("admin", "admin-secret"));
        client.putAll(TlsTest.sslClient(trustStore));
        client.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_SSL");
        try (KafkaShell one = MultiShellTest.shell(tmp, 1, "scram1-" + UUID.randomUUID(), secured);
             KafkaShell two = MultiShellTest.shell(tmp, 2, "scram2-" + UUID.randomUUID(), secured)) {
            String both = one.bootstrapServers() + "," + two.bootstrapServers();
            Map<String, Object> admin = new HashMap<>(client);
            admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, both);
            try (Admin a = Admin.create(admin)) {
                a.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion("admin",
                        new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), "shell-secret"))).all().get();
                spreadOverBoth(a);
            }
            commitAcrossBoth(both, client);
        }
    }

    /** Shells with one SASL_PLAINTEXT listener log in to each other with PLAIN as their JAAS config's own user. */
    @Test
    void shellsLogInToEachOtherWithPlain(@TempDir Path tmp) throws Exception {
        Map<String, String> secured = new HashMap<>(AclTest.secured());
        secured.put("listener.name.sasl_plaintext.plain.sasl.jaas.config", "org.apache.kafka.common.security.plain."
                + "PlainLoginModule required username=\"admin\" password=\"admin-secret\" "
                + "user_admin=\"admin-secret\";");
        try (KafkaShell one = MultiShellTest.shell(tmp, 1, "plain1-" + UUID.randomUUID(), secured);
             KafkaShell two = MultiShellTest.shell(tmp, 2, "plain2-" + UUID.randomUUID(), secured)) {
            String both = one.bootstrapServers() + "," + two.bootstrapServers();
            Map<String, Object> admin = new HashMap<>(SaslTest.client("admin", "admin-secret"));
            admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, both);
            try (Admin a = Admin.create(admin)) {
                spreadOverBoth(a);
            }
            commitAcrossBoth(both, SaslTest.client("admin", "admin-secret"));
        }
    }

    /**
     * Shells whose one listener requires client certificates present their own key store to each other: their
     * principal is their certificate's subject, a super user.
     */
    @Test
    void shellsPresentTheirCertificateToEachOtherOverMutualTls(@TempDir Path tmp) throws Exception {
        Path keys = Files.createDirectories(tmp.resolve("keys"));
        Path keyStore = TlsTest.keyStore(keys, "shell");
        Path trustStore = TlsTest.trustStore(keys, "shell");
        Map<String, String> secured = new HashMap<>();
        secured.put("listeners", "SSL://127.0.0.1:0");
        secured.put("ssl.client.auth", "required");
        secured.put("ssl.keystore.location", keyStore.toString());
        secured.put("ssl.keystore.password", TlsTest.PASSWORD);
        secured.put("ssl.truststore.location", trustStore.toString());
        secured.put("ssl.truststore.password", TlsTest.PASSWORD);
        secured.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
        secured.put("super.users", "User:CN=shell");
        Map<String, Object> client = new HashMap<>(TlsTest.sslClient(trustStore));
        client.put(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG, keyStore.toString());
        client.put(SslConfigs.SSL_KEYSTORE_PASSWORD_CONFIG, TlsTest.PASSWORD);
        client.put(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PKCS12");
        try (KafkaShell one = MultiShellTest.shell(tmp, 1, "mtls1-" + UUID.randomUUID(), secured);
             KafkaShell two = MultiShellTest.shell(tmp, 2, "mtls2-" + UUID.randomUUID(), secured)) {
            String both = one.bootstrapServers() + "," + two.bootstrapServers();
            Map<String, Object> admin = new HashMap<>(client);
            admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, both);
            try (Admin a = Admin.create(admin)) {
                spreadOverBoth(a);
            }
            commitAcrossBoth(both, client);
        }
    }

    /**
     * A SASL inter-broker listener whose JAAS config has no login of the shell's own serves (a single shell needs
     * none) and says why markers to other shells would fail, without quoting a password; a mechanism the shells
     * cannot log in with stops the start.
     */
    @Test
    void theShellsOwnLoginIsCheckedAtStart() {
        Map<String, String> secured = new HashMap<>(AclTest.secured()); // PLAIN users only, no username/password
        InterShellSecurity noLogin = InterShellSecurity.forListener("SASL_PLAINTEXT", "SASL_PLAINTEXT", secured::get);
        assertThat(noLogin.problem()).hasValueSatisfying(p -> assertThat(p)
                .contains("the shells log in to each other's listener SASL_PLAINTEXT with PLAIN as the username and "
                        + "password of listener.name.sasl_plaintext.plain.sasl.jaas.config")
                .contains("no username or no password option").doesNotContain("admin-secret"));
        secured.put("sasl.mechanism.inter.broker.protocol", "OAUTHBEARER");
        assertThatThrownBy(() -> InterShellSecurity.forListener("SASL_PLAINTEXT", "SASL_PLAINTEXT", secured::get))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("sasl.mechanism.inter.broker.protocol=OAUTHBEARER is not supported");
        secured.put("sasl.mechanism.inter.broker.protocol", "PLAIN");
        secured.put("listener.name.sasl_plaintext.plain.sasl.jaas.config", "org.apache.kafka.common.security.plain."
                + "PlainLoginModule required username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\";");
        assertThat(InterShellSecurity.forListener("SASL_PLAINTEXT", "SASL_PLAINTEXT", secured::get).problem()).isEmpty();
    }

    /** Creates topic "spread" with its two partitions led by shells 1 and 2. */
    private static void spreadOverBoth(Admin a) throws Exception {
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
    }

    /**
     * Commits a transaction over both partitions of "spread" (one per shell: the coordinator's shell writes a marker on
     * the other over the inter-broker listener) and reads both records back with read_committed.
     */
    private static void commitAcrossBoth(String both, Map<String, Object> client) throws Exception {
        Map<String, Object> p = new HashMap<>(client);
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
        Map<String, Object> c = new HashMap<>(client);
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
