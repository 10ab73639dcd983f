package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DeleteConsumerGroupOffsetsResult;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.GroupSubscribedToTopicException;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * ACLs with Kafka's semantics, checked from real clients over SASL/PLAIN: a user allowed to produce but not consume
 * and one the other way round, group ACLs, prefixed ACLs, DENY overriding ALLOW, Metadata showing only the topics a
 * user may describe, transactional ids (DescribeTransactions listing only the topics a user may describe), the ACL
 * APIs refused to non-admins, and Kafka's own {@code kafka-acls.sh} ({@code org.apache.kafka.tools.AclCommand}, run
 * in its own JVM) adding, listing and removing ACLs.
 */
@Timeout(180)
class AclTest {
    private static final String JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required "
            + "user_admin=\"admin-secret\" user_alice=\"alice-secret\" user_bob=\"bob-secret\" "
            + "user_carol=\"carol-secret\";";

    static Map<String, String> secured() {
        Map<String, String> m = new HashMap<>();
        m.put("listeners", "SASL_PLAINTEXT://127.0.0.1:0");
        m.put("sasl.enabled.mechanisms", "PLAIN");
        m.put("listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS);
        m.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
        m.put("super.users", "User:admin");
        return m;
    }

    private static Map<String, Object> as(String user) {
        Map<String, Object> m = new HashMap<>(SaslTest.client(user, user + "-secret"));
        m.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 15_000);
        return m;
    }

    private static Admin admin(ShellFixture fx, String user) {
        Map<String, Object> m = new HashMap<>(SaslTest.client(user, user + "-secret"));
        m.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, fx.bootstrap());
        m.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
        m.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        return Admin.create(m);
    }

    private static AclBinding acl(ResourceType type, String name, PatternType pattern, String user, AclOperation op,
                                  AclPermissionType permission) {
        return new AclBinding(new ResourcePattern(type, name, pattern),
                new AccessControlEntry("User:" + user, "*", op, permission));
    }

    private static AclBinding allow(ResourceType type, String name, String user, AclOperation op) {
        return acl(type, name, PatternType.LITERAL, user, op, AclPermissionType.ALLOW);
    }

    private static void produce(ShellFixture fx, Map<String, Object> client, String topic, int n) throws Exception {
        try (KafkaProducer<String, String> p = fx.producer(client)) {
            for (int i = 0; i < n; i++) {
                p.send(new ProducerRecord<>(topic, 0, null, topic + "-" + i)).get(15, TimeUnit.SECONDS);
            }
        }
    }

    /** Reads {@code n} records of partition 0 (assigned, no group) or fails with what the poll threw. */
    private static int read(ShellFixture fx, Map<String, Object> client, String group, String topic, int n) {
        try (KafkaConsumer<String, String> c = fx.consumer(group, client)) {
            if (group == null) {
                c.assign(List.of(new TopicPartition(topic, 0)));
            } else {
                c.subscribe(List.of(topic));
            }
            int got = pollUntil(c, n);
            if (group != null) {
                c.commitSync();
            }
            return got;
        }
    }

    private static void createTopics(ShellFixture fx, String... names) throws Exception {
        List<NewTopic> topics = new ArrayList<>();
        for (String n : names) {
            topics.add(new NewTopic(n, 1, (short) 1));
        }
        try (Admin a = admin(fx, "admin")) {
            a.createTopics(topics).all().get();
        }
    }

    private static void grant(ShellFixture fx, AclBinding... bindings) throws Exception {
        try (Admin a = admin(fx, "admin")) {
            a.createAcls(List.of(bindings)).all().get();
        }
    }

    @Test
    void aUserMayProduceButNotConsumeAndAnotherTheOpposite() throws Exception {
        try (ShellFixture fx = new ShellFixture(secured())) {
            createTopics(fx, "orders");
            grant(fx, allow(ResourceType.TOPIC, "orders", "alice", AclOperation.WRITE),
                    allow(ResourceType.TOPIC, "orders", "bob", AclOperation.READ),
                    allow(ResourceType.GROUP, "bob-group", "bob", AclOperation.READ));

            produce(fx, as("alice"), "orders", 10); // idempotent by default: WRITE on a topic gives a producer id
            assertThatThrownBy(() -> read(fx, as("alice"), null, "orders", 10))
                    .isInstanceOf(TopicAuthorizationException.class);

            assertThat(read(fx, as("bob"), "bob-group", "orders", 10)).isEqualTo(10);
            assertThatThrownBy(() -> read(fx, as("bob"), "someone-elses-group", "orders", 10))
                    .isInstanceOf(GroupAuthorizationException.class);
            // Bob's idempotent producer gets no producer id (no WRITE anywhere), his plain one no write to orders.
            assertThatThrownBy(() -> produce(fx, as("bob"), "orders", 1))
                    .hasRootCauseInstanceOf(ClusterAuthorizationException.class);
            Map<String, Object> plain = new HashMap<>(as("bob"));
            plain.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
            assertThatThrownBy(() -> produce(fx, plain, "orders", 1))
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(TopicAuthorizationException.class);

            try (Admin bob = admin(fx, "bob")) {
                // Bob's committed offset, visible to him through his group ACL (DESCRIBE implied by READ).
                assertThat(bob.listConsumerGroupOffsets("bob-group").partitionsToOffsetAndMetadata().get()
                        .get(new TopicPartition("orders", 0)).offset()).isEqualTo(10);
                assertThatThrownBy(() -> bob.deleteConsumerGroups(List.of("bob-group")).all().get())
                        .hasCauseInstanceOf(GroupAuthorizationException.class);
            }
        }
    }

    @Test
    void prefixedAclsDenyOverridingAllowAndTopicVisibility() throws Exception {
        try (ShellFixture fx = new ShellFixture(secured())) {
            createTopics(fx, "logs-app", "logs-secret", "metrics");
            for (String t : List.of("logs-app", "logs-secret", "metrics")) {
                produce(fx, as("admin"), t, 3);
            }
            grant(fx, acl(ResourceType.TOPIC, "logs-", PatternType.PREFIXED, "carol", AclOperation.READ,
                            AclPermissionType.ALLOW),
                    acl(ResourceType.TOPIC, "logs-secret", PatternType.LITERAL, "carol", AclOperation.READ,
                            AclPermissionType.DENY),
                    acl(ResourceType.GROUP, "carol-", PatternType.PREFIXED, "carol", AclOperation.READ,
                            AclPermissionType.ALLOW));

            assertThat(read(fx, as("carol"), "carol-1", "logs-app", 3)).isEqualTo(3);
            assertThatThrownBy(() -> read(fx, as("carol"), "carol-2", "logs-secret", 3))
                    .isInstanceOf(TopicAuthorizationException.class);
            assertThatThrownBy(() -> read(fx, as("carol"), null, "metrics", 3))
                    .isInstanceOf(TopicAuthorizationException.class);

            try (Admin carol = admin(fx, "carol"); Admin alice = admin(fx, "alice")) {
                // DENY READ leaves DESCRIBE (implied by the prefixed READ): logs-secret is listed, metrics is not.
                assertThat(carol.listTopics().names().get()).containsExactlyInAnyOrder("logs-app", "logs-secret");
                assertThat(alice.listTopics().names().get()).isEmpty();
                assertThat(carol.describeTopics(List.of("logs-app"), new DescribeTopicsOptions()
                                .includeAuthorizedOperations(true)).allTopicNames().get().get("logs-app")
                        .authorizedOperations()).containsExactlyInAnyOrder(AclOperation.READ, AclOperation.DESCRIBE);
                assertThatThrownBy(() -> carol.describeTopics(List.of("metrics")).allTopicNames().get())
                        .hasCauseInstanceOf(TopicAuthorizationException.class);
                assertThatThrownBy(() -> carol.createTopics(List.of(new NewTopic("logs-new", 1, (short) 1))).all().get())
                        .hasCauseInstanceOf(TopicAuthorizationException.class);
                assertThatThrownBy(() -> carol.deleteTopics(List.of("logs-app")).all().get())
                        .hasCauseInstanceOf(TopicAuthorizationException.class);
                assertThat(carol.listGroups().all().get()).extracting(g -> g.groupId())
                        .contains("carol-1").doesNotContain("bob-group");
            }
        }
    }

    @Test
    void aTransactionalProducerNeedsWriteOnItsTransactionalId() throws Exception {
        try (ShellFixture fx = new ShellFixture(secured())) {
            createTopics(fx, "payments");
            grant(fx, allow(ResourceType.TOPIC, "payments", "alice", AclOperation.WRITE));
            Map<String, Object> tx = new HashMap<>(as("alice"));
            tx.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "tx-payments-1");
            try (KafkaProducer<String, String> p = fx.producer(tx)) {
                assertThatThrownBy(p::initTransactions).isInstanceOf(TransactionalIdAuthorizationException.class);
            }
            grant(fx, acl(ResourceType.TRANSACTIONAL_ID, "tx-", PatternType.PREFIXED, "alice", AclOperation.WRITE,
                    AclPermissionType.ALLOW));
            try (KafkaProducer<String, String> p = fx.producer(tx)) {
                p.initTransactions();
                p.beginTransaction();
                p.send(new ProducerRecord<>("payments", 0, null, "paid")).get(15, TimeUnit.SECONDS);
                p.commitTransaction();
            }
            Map<String, Object> committed = new HashMap<>(as("admin"));
            committed.put("isolation.level", "read_committed");
            assertThat(read(fx, committed, null, "payments", 1)).isEqualTo(1);
        }
    }

    @Test
    void describeTransactionsShowsOnlyTheTopicsThePrincipalMayDescribe() throws Exception {
        try (ShellFixture fx = new ShellFixture(secured())) {
            createTopics(fx, "orders", "ledger");
            Map<String, Object> tx = new HashMap<>(as("admin"));
            tx.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "tx-orders");
            try (KafkaProducer<String, String> p = fx.producer(tx)) {
                p.initTransactions();
                p.beginTransaction();
                p.send(new ProducerRecord<>("orders", 0, null, "o")).get(15, TimeUnit.SECONDS);
                p.send(new ProducerRecord<>("ledger", 0, null, "l")).get(15, TimeUnit.SECONDS);
                // left open: the description lists both partitions
                try (Admin admin = admin(fx, "admin")) {
                    assertThat(admin.describeTransactions(List.of("tx-orders")).description("tx-orders").get()
                            .topicPartitions()).containsExactlyInAnyOrder(new TopicPartition("orders", 0),
                            new TopicPartition("ledger", 0));
                }
                try (Admin bob = admin(fx, "bob")) {
                    assertThatThrownBy(() -> bob.describeTransactions(List.of("tx-orders")).description("tx-orders")
                            .get()).hasCauseInstanceOf(TransactionalIdAuthorizationException.class);
                    grant(fx, allow(ResourceType.TRANSACTIONAL_ID, "tx-orders", "bob", AclOperation.DESCRIBE),
                            allow(ResourceType.TOPIC, "orders", "bob", AclOperation.DESCRIBE));
                    var seen = bob.describeTransactions(List.of("tx-orders")).description("tx-orders").get();
                    assertThat(seen.state()).isEqualTo(TransactionState.ONGOING);
                    assertThat(seen.topicPartitions()).containsExactly(new TopicPartition("orders", 0));
                }
                p.abortTransaction();
            }
        }
    }

    @Test
    void consumerGroupDescribeHidesAGroupAssignedATopicTheCallerMayNotDescribe() throws Exception {
        try (ShellFixture fx = new ShellFixture(secured())) {
            createTopics(fx, "orders");
            grant(fx, allow(ResourceType.TOPIC, "orders", "bob", AclOperation.READ),
                    allow(ResourceType.GROUP, "g848", "bob", AclOperation.READ),
                    allow(ResourceType.GROUP, "g848", "carol", AclOperation.DESCRIBE));
            produce(fx, as("admin"), "orders", 5);
            Map<String, Object> kip848 = new HashMap<>(as("bob"));
            kip848.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            try (KafkaConsumer<String, String> c = fx.consumer("g848", kip848);
                 Admin admin = admin(fx, "admin"); Admin carol = admin(fx, "carol")) {
                c.subscribe(List.of("orders"));
                assertThat(pollUntil(c, 5)).isEqualTo(5);
                assertThat(admin.describeConsumerGroups(List.of("g848")).all().get().get("g848").members())
                        .singleElement().satisfies(m -> assertThat(m.assignment().topicPartitions())
                                .containsExactly(new TopicPartition("orders", 0)));
                // Carol may describe the group but not the topic it is assigned: as Kafka, no members are shown.
                assertThatThrownBy(() -> carol.describeConsumerGroups(List.of("g848")).all().get())
                        .hasCauseInstanceOf(TopicAuthorizationException.class)
                        .hasMessageContaining("not authorized to describe");
                grant(fx, allow(ResourceType.TOPIC, "orders", "carol", AclOperation.DESCRIBE));
                assertThat(carol.describeConsumerGroups(List.of("g848")).all().get().get("g848").members())
                        .hasSize(1);
            }
        }
    }

    @Test
    void aServerSideRegexSubscriptionGetsOnlyTopicsTheMemberMayDescribe() throws Exception {
        Map<String, String> config = new HashMap<>(secured());
        config.put("group.consumer.heartbeat.interval.ms", "300");
        try (ShellFixture fx = new ShellFixture(config)) {
            createTopics(fx, "orders", "ordinals");
            grant(fx, allow(ResourceType.TOPIC, "orders", "bob", AclOperation.READ),
                    allow(ResourceType.GROUP, "g-re", "bob", AclOperation.READ));
            produce(fx, as("admin"), "orders", 5);
            produce(fx, as("admin"), "ordinals", 5);
            Map<String, Object> kip848 = new HashMap<>(as("bob"));
            kip848.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            try (KafkaConsumer<String, String> c = fx.consumer("g-re", kip848)) {
                // Resolved by the coordinator (KIP-848): as Kafka, only the matching topics bob may describe. Had
                // ordinals been assigned, its fetches would fail and poll would throw TopicAuthorizationException.
                c.subscribe(new SubscriptionPattern("ord.*"));
                assertThat(pollUntil(c, 5)).isEqualTo(5);
                assertThat(c.assignment()).containsExactly(new TopicPartition("orders", 0));
                try (Admin admin = admin(fx, "admin")) {
                    // OffsetDelete counts the expression's topics as resolved for bob: orders, not ordinals.
                    TopicPartition orders = new TopicPartition("orders", 0);
                    TopicPartition ordinals = new TopicPartition("ordinals", 0);
                    DeleteConsumerGroupOffsetsResult deleted = admin.deleteConsumerGroupOffsets("g-re",
                            Set.of(orders, ordinals));
                    deleted.partitionResult(ordinals).get(20, TimeUnit.SECONDS);
                    assertThatThrownBy(() -> deleted.partitionResult(orders).get(20, TimeUnit.SECONDS))
                            .hasCauseInstanceOf(GroupSubscribedToTopicException.class);
                }
                // A grant shows at the member's next heartbeat.
                grant(fx, allow(ResourceType.TOPIC, "ordinals", "bob", AclOperation.READ));
                assertThat(pollUntil(c, 5)).isEqualTo(5);
                assertThat(c.assignment()).containsExactlyInAnyOrder(new TopicPartition("orders", 0),
                        new TopicPartition("ordinals", 0));
            }
        }
    }

    /** Polls until {@code n} more records arrived or 20 s passed; how many did. */
    private static int pollUntil(KafkaConsumer<String, String> c, int n) {
        int got = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (got < n && System.nanoTime() < deadline) {
            got += c.poll(Duration.ofMillis(200)).count();
        }
        return got;
    }

    @Test
    void onlyAdminsManageAclsAndTheyOutliveARestart() throws Exception {
        try (ShellFixture fx = new ShellFixture(secured())) {
            try (Admin alice = admin(fx, "alice")) {
                assertThatThrownBy(() -> alice.createAcls(List.of(allow(ResourceType.TOPIC, "t", "alice",
                        AclOperation.ALL))).all().get()).hasCauseInstanceOf(ClusterAuthorizationException.class);
                assertThatThrownBy(() -> alice.describeAcls(AclBindingFilter.ANY).values().get())
                        .hasCauseInstanceOf(ClusterAuthorizationException.class);
            }
            AclBinding b = allow(ResourceType.TOPIC, "shared", "alice", AclOperation.READ);
            grant(fx, b);
            // Stored in the shared metadata: a new shell on the same store (here, after a restart) reads it.
            fx.restart();
            assertThat(fx.shell.aclsForTest().acls(AclBindingFilter.ANY)).containsExactly(b);
            try (Admin admin = admin(fx, "admin")) {
                assertThat(admin.deleteAcls(List.of(b.toFilter())).all().get()).containsExactly(b);
                assertThat(admin.describeAcls(AclBindingFilter.ANY).values().get()).isEmpty();
            }
        }
    }

    @Test
    void librdkafkaClientsGetKafkasAuthorizationErrors() throws Exception {
        try (ShellFixture fx = new ShellFixture(secured())) {
            createTopics(fx, "orders");
            grant(fx, allow(ResourceType.TOPIC, "orders", "alice", AclOperation.WRITE),
                    allow(ResourceType.TOPIC, "orders", "bob", AclOperation.READ),
                    allow(ResourceType.GROUP, "bob-group", "bob", AclOperation.READ));
            ExternalClients.require("confluent-kafka (" + ExternalClients.PYTHON + ")", ExternalClients.PYTHON, "-c",
                    "import confluent_kafka");
            String script = String.join("\n",
                    "import sys",
                    "from confluent_kafka import Producer, Consumer, KafkaError",
                    "def conf(user): return {'bootstrap.servers': sys.argv[1], 'security.protocol': 'SASL_PLAINTEXT',",
                    "    'sasl.mechanisms': 'PLAIN', 'sasl.username': user, 'sasl.password': user + '-secret'}",
                    "reports = []",
                    "def report(err, msg): reports.append(err)",
                    "alice = Producer(conf('alice'))",
                    "for i in range(5): alice.produce('orders', value=b'py-%d' % i, partition=0, on_delivery=report)",
                    "assert alice.flush(30) == 0 and reports == [None] * 5, reports",
                    "reports.clear()",
                    "bob = Producer(dict(conf('bob'), **{'message.send.max.retries': 0}))",
                    "bob.produce('orders', value=b'x', partition=0, on_delivery=report)",
                    "bob.flush(30)",
                    "assert [e.code() for e in reports] == [KafkaError.TOPIC_AUTHORIZATION_FAILED], reports",
                    "def consume(group):",
                    "    c = Consumer(dict(conf('bob'), **{'group.id': group, 'auto.offset.reset': 'earliest'}))",
                    "    c.subscribe(['orders'])",
                    "    got, errors = 0, []",
                    "    for _ in range(100):",
                    "        m = c.poll(0.2)",
                    "        if m is None: continue",
                    "        if m.error(): errors.append(m.error().code()); break",
                    "        got += 1",
                    "        if got == 5: break",
                    "    c.close()",
                    "    return got, errors",
                    "assert consume('bob-group') == (5, []), consume('bob-group')",
                    "got, errors = consume('not-bobs')",
                    "assert got == 0 and errors == [KafkaError.GROUP_AUTHORIZATION_FAILED], (got, errors)",
                    "print('confluent acl OK')");
            var py = ExternalClients.run(new byte[0], List.of(ExternalClients.PYTHON, "-c", script, fx.bootstrap()));
            assertThat(py.exit()).as(py.output()).isZero();
            assertThat(py.output()).contains("confluent acl OK");
        }
    }

    @Test
    void withoutAnAuthorizerTheAclApisAnswerSecurityDisabled() throws Exception {
        try (ShellFixture fx = new ShellFixture(); Admin admin = fx.admin()) {
            assertThatThrownBy(() -> admin.describeAcls(AclBindingFilter.ANY).values().get())
                    .hasCauseInstanceOf(SecurityDisabledException.class);
            assertThatThrownBy(() -> admin.createAcls(List.of(allow(ResourceType.TOPIC, "t", "a", AclOperation.READ)))
                    .all().get()).hasCauseInstanceOf(SecurityDisabledException.class);
        }
    }

    @Test
    void kafkaAclsToolAddsListsAndRemovesAcls() throws Exception {
        try (ShellFixture fx = new ShellFixture(secured())) {
            createTopics(fx, "events");
            Path config = fx.dataDir.resolve("kafka-acls.properties"); // deleted with the fixture
            Files.writeString(config, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                    + "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" "
                    + "password=\"admin-secret\";\n");
            String bootstrap = fx.bootstrap();
            // kafka-acls.sh --add --allow-principal User:bob --consumer --topic events --group events-
            //   --resource-pattern-type prefixed: READ and DESCRIBE on the topics events*, READ on the groups events*.
            String added = aclCommand("--bootstrap-server", bootstrap, "--command-config", config.toString(), "--add",
                    "--allow-principal", "User:bob", "--consumer", "--topic", "events", "--group", "events-",
                    "--resource-pattern-type", "prefixed");
            assertThat(added).contains("User:bob");
            assertThat(read(fx, as("bob"), "events-reader", "events", 0)).isZero(); // subscribed and committed
            produce(fx, as("admin"), "events", 2);
            assertThat(read(fx, as("bob"), "events-reader", "events", 2)).isEqualTo(2);

            String listed = aclCommand("--bootstrap-server", bootstrap, "--command-config", config.toString(),
                    "--list", "--topic", "events", "--resource-pattern-type", "prefixed");
            assertThat(listed).contains("name=events, patternType=PREFIXED").contains("operation=READ")
                    .contains("operation=DESCRIBE").contains("principal=User:bob");

            aclCommand("--bootstrap-server", bootstrap, "--command-config", config.toString(), "--remove", "--force",
                    "--topic", "events", "--resource-pattern-type", "prefixed");
            try (Admin admin = admin(fx, "admin")) {
                assertThat(admin.describeAcls(AclBindingFilter.ANY).values().get())
                        .extracting(x -> x.pattern().resourceType()).containsOnly(ResourceType.GROUP);
            }
            assertThatThrownBy(() -> read(fx, as("bob"), "events-reader", "events", 2))
                    .isInstanceOf(TopicAuthorizationException.class);
        }
    }

    /** Runs Kafka's AclCommand (what kafka-acls.sh runs) in its own JVM; its output, or a failure with it. */
    private static String aclCommand(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), "org.apache.kafka.tools.AclCommand"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("AclCommand %s:%n%s", Set.of(args), out).isZero();
        return out;
    }
}
