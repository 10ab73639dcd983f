package io.s3stream.kafka.shell;

import io.s3stream.KeyValues;
import io.s3stream.StreamStorage;
import io.s3stream.kafka.shell.config.ShellConfig;
import io.s3stream.kafka.shell.group.GroupApis;
import io.s3stream.kafka.shell.topic.TopicRegistry;
import io.s3stream.testing.MemBackends;
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
import java.util.concurrent.TimeUnit;

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
        return shell(tmp, node, wal, Map.of());
    }

    static KafkaShell shell(Path tmp, int node, String wal, Map<String, String> extra) {
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
        m.putAll(extra);
        return KafkaShell.start(ShellConfig.of(m));
    }

    static int leader(Admin admin, String topic, int partition) throws Exception {
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        var leader = d.partitions().get(partition).leader();
        return leader == null ? -1 : leader.id();
    }

    /**
     * A move that lands on a shell just after it was taken over (the balancer's view of live shells lags the lease by
     * up to a renewal) leaves a partition led by a shell that nobody will fail over again: no lease, no registration.
     * NetworkPartitionIT caught one: the balancer moved a partition to the cut-off shell a moment after its takeover.
     * The lowest live shell hands such a partition to a live one.
     */
    @Test
    void aPartitionLeftWithAShellThatIsGoneIsHandedToALiveOne(@TempDir Path tmp) throws Exception {
        String wal1 = "st1-" + UUID.randomUUID();
        String wal2 = "st2-" + UUID.randomUUID();
        try (KafkaShell one = shell(tmp, 1, wal1); KafkaShell two = shell(tmp, 2, wal2)) {
            Properties ap = new Properties();
            ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, one.bootstrapServers() + "," + two.bootstrapServers());
            try (Admin admin = Admin.create(ap);
                 KafkaProducer<String, String> producer = ProcessBrokerTest.producer(one.bootstrapServers() + ","
                         + two.bootstrapServers(), Map.of())) {
                admin.createTopics(List.of(new NewTopic("stranded", 2, (short) 1))).all().get();
                producer.send(new ProducerRecord<>("stranded", 1, null, "before")).get(30, TimeUnit.SECONDS);

                KeyValues kv = one.keyValuesForTest();
                String key = TopicRegistry.leaderKey("stranded", 1);
                byte[] record = kv.get(key).join().orElseThrow();
                long[] r = TopicRegistry.parseLeader(record);
                assertThat(kv.compareAndSet(key, record, TopicRegistry.leaderRecord(9, r[1], -1)).join()).isTrue();

                long deadline = System.currentTimeMillis() + 20_000;
                int now = 9;
                while ((now != 1 && now != 2) && System.currentTimeMillis() < deadline) {
                    Thread.sleep(100);
                    now = (int) TopicRegistry.parseLeader(kv.get(key).join().orElseThrow())[0];
                }
                assertThat(now).as("partition 1 is led by a live shell again").isIn(1, 2);
                producer.send(new ProducerRecord<>("stranded", 1, null, "after")).get(30, TimeUnit.SECONDS);
            }
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(
                    ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, one.bootstrapServers(),
                    ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                    ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()))) {
                TopicPartition tp = new TopicPartition("stranded", 1);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                List<String> values = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 20_000;
                while (values.size() < 2 && System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(200)).forEach(rec -> values.add(rec.value()));
                }
                assertThat(values).containsExactly("before", "after");
            }
        } finally {
            MemBackends.clearWal(wal1);
            MemBackends.clearWal(wal2);
        }
    }

    /**
     * ChaosIT seed 42: a move was asked (record target = node 2) just before its leader, node 1, died. The restarted
     * node 1 had no handle to close, handed the record over anyway, and its previous instance still held the stream
     * open in the manifest: node 2 was refused ("held open by node 1") for the rest of the run. The restarted shell
     * now closes the stream itself before it names the target. Node 1's death is made by registering node 1 again
     * (as a restart does), which fences the running instance with its stream still open.
     */
    @Test
    void aMoveAskedJustBeforeTheLeaderDiedIsCompletedByItsRestart(@TempDir Path tmp) throws Exception {
        String wal1 = "hd1-" + UUID.randomUUID();
        String wal2 = "hd2-" + UUID.randomUUID();
        KafkaShell one = shell(tmp, 1, wal1, Map.of("s3stream.kafka.balance.interval.ms", "3600000"));
        try (KafkaShell two = shell(tmp, 2, wal2, Map.of("s3stream.kafka.balance.interval.ms", "3600000"))) {
            Properties ap = new Properties();
            ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, one.bootstrapServers());
            try (Admin admin = Admin.create(ap)) {
                admin.createTopics(List.of(new NewTopic("orphaned", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            }
            KeyValues kv = two.keyValuesForTest();
            String key = TopicRegistry.leaderKey("orphaned", 0);
            long deadline = System.currentTimeMillis() + 20_000;
            while (!kv.get(key).join().map(rec -> TopicRegistry.parseLeader(rec)[0] == 1).orElse(false)
                    && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            // Node 1 "dies": a new registration of node 1 fences it, its stream still open in the manifest.
            Map<String, String> fencerSettings = new HashMap<>(Map.of(
                    "listeners", "PLAINTEXT://127.0.0.1:0", "node.id", "1",
                    "s3stream.data.dir", tmp.resolve("node-1-fencer").toString(),
                    "s3stream.wal", "mem://" + wal1 + "-fencer?capacity=8MiB",
                    "s3stream.object.store", tmp.resolve("objects").toUri().toString()));
            try (StreamStorage fencer = StreamStorage.open(ShellConfig.of(fencerSettings).storageConfig())) {
                assertThat(fencer.nodeEpoch()).isGreaterThan(1);
            }
            one.close();
            // The move that was asked just before.
            byte[] record = kv.get(key).join().orElseThrow();
            long[] r = TopicRegistry.parseLeader(record);
            assertThat(kv.compareAndSet(key, record, TopicRegistry.leaderRecord(1, r[1], 2)).join()).isTrue();

            try (KafkaShell restarted = shell(tmp, 1, wal1, Map.of("s3stream.kafka.balance.interval.ms", "3600000"));
                 KafkaProducer<String, String> producer = ProcessBrokerTest.producer(restarted.bootstrapServers()
                         + "," + two.bootstrapServers(), Map.of())) {
                producer.send(new ProducerRecord<>("orphaned", 0, null, "after")).get(30, TimeUnit.SECONDS);
                assertThat(TopicRegistry.parseLeader(kv.get(key).join().orElseThrow())[0]).isEqualTo(2);
            }
        } finally {
            MemBackends.clearWal(wal1);
            MemBackends.clearWal(wal2);
            MemBackends.clearWal(wal1 + "-fencer");
        }
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
            MemBackends.clearWal(wal1);
            MemBackends.clearWal(wal2);
        }
    }

    /**
     * Group coordinators spread over three shells by group id (rendezvous hashing over the live shells): FindCoordinator
     * names the same shell from every shell, a group request sent to another shell gets NOT_COORDINATOR, and consumer
     * groups on each coordinator commit offsets that every coordinator-routed OffsetFetch reads back.
     */
    @Test
    void groupCoordinatorsSpreadOverShellsByGroupId(@TempDir Path tmp) throws Exception {
        List<String> wals = List.of("gc1-" + UUID.randomUUID(), "gc2-" + UUID.randomUUID(), "gc3-" + UUID.randomUUID());
        try (KafkaShell one = shell(tmp, 1, wals.get(0)); KafkaShell two = shell(tmp, 2, wals.get(1));
             KafkaShell three = shell(tmp, 3, wals.get(2))) {
            List<KafkaShell> shells = List.of(one, two, three);
            String all = String.join(",", shells.stream().map(KafkaShell::bootstrapServers).toList());
            Properties ap = new Properties();
            ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, all);
            List<String> groupIds = new ArrayList<>();
            for (int i = 0; i < 9; i++) {
                groupIds.add("spread-" + i);
            }
            Map<String, Integer> expected = new HashMap<>();
            groupIds.forEach(g -> expected.put(g, GroupApis.rendezvous(g, List.of(1, 2, 3))));
            assertThat(new java.util.HashSet<>(expected.values())).as("nine groups land on all three shells")
                    .containsExactlyInAnyOrder(1, 2, 3);
            try (Admin admin = Admin.create(ap)) {
                long deadline = System.currentTimeMillis() + 15_000;
                while (admin.describeCluster().nodes().get().size() < 3 && System.currentTimeMillis() < deadline) {
                    Thread.sleep(100);
                }
                admin.createTopics(List.of(new NewTopic("spread", 1, (short) 1))).all().get();
                try (KafkaProducer<String, String> p = new KafkaProducer<>(Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, all,
                        ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName(),
                        ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName()))) {
                    for (int i = 0; i < 20; i++) {
                        p.send(new ProducerRecord<>("spread", 0, null, "r" + i)).get();
                    }
                }
                for (String g : groupIds) {
                    // Every shell names the same coordinator.
                    for (KafkaShell s : shells) {
                        try (RawClient raw = new RawClient(s.port())) {
                            var found = (org.apache.kafka.common.requests.FindCoordinatorResponse) raw.call(
                                    org.apache.kafka.common.protocol.ApiKeys.FIND_COORDINATOR, (short) 3,
                                    new org.apache.kafka.common.requests.FindCoordinatorRequest.Builder(
                                            new org.apache.kafka.common.message.FindCoordinatorRequestData().setKey(g)
                                                    .setKeyType((byte) 0)).build((short) 3));
                            assertThat(found.data().nodeId()).as("coordinator of " + g + " asked at node "
                                    + s.bootstrapServers()).isEqualTo(expected.get(g));
                        }
                    }
                    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(
                            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, all, ConsumerConfig.GROUP_ID_CONFIG, g,
                            ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                            ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                            ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                            ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()))) {
                        c.subscribe(List.of("spread"));
                        int read = 0;
                        long until = System.currentTimeMillis() + 20_000;
                        while (read < 20 && System.currentTimeMillis() < until) {
                            read += c.poll(Duration.ofMillis(200)).count();
                        }
                        assertThat(read).isEqualTo(20);
                        c.commitSync();
                        var described = admin.describeConsumerGroups(List.of(g)).all().get().get(g);
                        assertThat(described.coordinator().id()).isEqualTo(expected.get(g));
                        assertThat(described.members()).hasSize(1);
                    }
                    assertThat(admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata().get()
                            .get(new TopicPartition("spread", 0)).offset()).isEqualTo(20);
                }
                // A group request at a shell that does not coordinate the group: NOT_COORDINATOR.
                String g = groupIds.getFirst();
                KafkaShell other = shells.get(expected.get(g) % 3); // node id n is shells.get(n - 1); this is the next
                try (RawClient raw = new RawClient(other.port())) {
                    var hb = (org.apache.kafka.common.requests.HeartbeatResponse) raw.call(
                            org.apache.kafka.common.protocol.ApiKeys.HEARTBEAT, (short) 4,
                            new org.apache.kafka.common.requests.HeartbeatRequest.Builder(
                                    new org.apache.kafka.common.message.HeartbeatRequestData().setGroupId(g)
                                            .setMemberId("m").setGenerationId(1)).build((short) 4));
                    assertThat(hb.error()).isEqualTo(Errors.NOT_COORDINATOR);
                }
                assertThat(admin.listGroups().all().get()).extracting(org.apache.kafka.clients.admin.GroupListing::groupId)
                        .as("ListGroups, asked of every shell, lists each group once").containsAll(groupIds)
                        .doesNotHaveDuplicates();
            }
        } finally {
            wals.forEach(MemBackends::clearWal);
        }
    }

    /**
     * A shell joins and takes over its share of groups: a group coordinated by shell 1 while shells 1 and 2 are live
     * moves to shell 3 once it is (rendezvous hashing), while its consumer reads and commits throughout; the consumer
     * follows NOT_COORDINATOR to shell 3, rejoins there, and no committed offset goes backwards or is lost. Shell 1
     * forgets the group (it no longer lists it).
     */
    @Test
    void aJoiningShellTakesOverItsShareOfGroups(@TempDir Path tmp) throws Exception {
        List<String> wals = List.of("gj1-" + UUID.randomUUID(), "gj2-" + UUID.randomUUID(), "gj3-" + UUID.randomUUID());
        String group = null;
        for (int i = 0; group == null; i++) {
            if (GroupApis.rendezvous("moving-group-" + i, List.of(1, 2)) == 1
                    && GroupApis.rendezvous("moving-group-" + i, List.of(1, 2, 3)) == 3) {
                group = "moving-group-" + i;
            }
        }
        String g = group;
        KafkaShell three = null;
        try (KafkaShell one = shell(tmp, 1, wals.get(0)); KafkaShell two = shell(tmp, 2, wals.get(1))) {
            String both = one.bootstrapServers() + "," + two.bootstrapServers();
            Properties ap = new Properties();
            ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, both);
            try (Admin admin = Admin.create(ap); KafkaProducer<String, String> p = new KafkaProducer<>(Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, both,
                    ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName(),
                    ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName()))) {
                admin.createTopics(List.of(new NewTopic("joined", 2, (short) 1))).all().get();
                java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
                java.util.concurrent.atomic.AtomicLong highestCommitted = new java.util.concurrent.atomic.AtomicLong();
                List<Throwable> consumerErrors = java.util.Collections.synchronizedList(new ArrayList<>());
                Thread consumer = Thread.ofPlatform().start(() -> {
                    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(
                            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, both, ConsumerConfig.GROUP_ID_CONFIG, g,
                            ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                            ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                            ConsumerConfig.METADATA_MAX_AGE_CONFIG, 1_000,
                            ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                            ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()))) {
                        c.subscribe(List.of("joined"));
                        long read = 0;
                        while (running.get()) {
                            try {
                                read += c.poll(Duration.ofMillis(100)).count();
                                c.commitSync(Duration.ofSeconds(10));
                                highestCommitted.set(read);
                            } catch (org.apache.kafka.common.errors.RetriableException
                                     | org.apache.kafka.clients.consumer.CommitFailedException e) {
                                // the coordinator moved: the consumer finds the new one and rejoins
                            }
                        }
                    } catch (Throwable e) {
                        consumerErrors.add(e);
                    }
                });
                for (int i = 0; i < 200; i++) {
                    p.send(new ProducerRecord<>("joined", i % 2, null, "r" + i)).get();
                }
                long deadline = System.currentTimeMillis() + 20_000;
                while (highestCommitted.get() < 200 && System.currentTimeMillis() < deadline) {
                    Thread.sleep(50);
                }
                assertThat(admin.describeConsumerGroups(List.of(g)).all().get().get(g).coordinator().id()).isEqualTo(1);

                three = shell(tmp, 3, wals.get(2));
                long joined = System.nanoTime();
                int coordinator = -1;
                int members = 0;
                deadline = System.currentTimeMillis() + 30_000;
                while ((coordinator != 3 || members != 1) && System.currentTimeMillis() < deadline) {
                    var d = admin.describeConsumerGroups(List.of(g)).all().get().get(g);
                    coordinator = d.coordinator().id();
                    members = d.members().size();
                    Thread.sleep(100);
                }
                long movedMs = (System.nanoTime() - joined) / 1_000_000;
                assertThat(coordinator).as("the group's coordinator after shell 3 joined").isEqualTo(3);
                assertThat(members).as("the consumer rejoined at shell 3").isEqualTo(1);
                for (int i = 200; i < 400; i++) {
                    p.send(new ProducerRecord<>("joined", i % 2, null, "r" + i)).get();
                }
                deadline = System.currentTimeMillis() + 20_000;
                while (highestCommitted.get() < 400 && System.currentTimeMillis() < deadline) {
                    Thread.sleep(50);
                }
                running.set(false);
                consumer.join(30_000);
                assertThat(consumerErrors).isEmpty();
                var offsets = admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata().get();
                assertThat(offsets.get(new TopicPartition("joined", 0)).offset()
                        + offsets.get(new TopicPartition("joined", 1)).offset())
                        .as("offsets committed at both coordinators").isEqualTo(400);
                System.out.println("COORDINATOR_MOVE_MS " + movedMs);
                try (RawClient raw = new RawClient(one.port())) {
                    var listed = (org.apache.kafka.common.requests.ListGroupsResponse) raw.call(
                            org.apache.kafka.common.protocol.ApiKeys.LIST_GROUPS, (short) 4,
                            new org.apache.kafka.common.requests.ListGroupsRequest.Builder(
                                    new org.apache.kafka.common.message.ListGroupsRequestData()).build((short) 4));
                    assertThat(listed.data().groups()).as("shell 1 lists only the groups it coordinates")
                            .noneMatch(l -> l.groupId().equals(g));
                }
                deadline = System.currentTimeMillis() + 5_000;
                while (one.groupsForTest().groupIds().get().contains(g) && System.currentTimeMillis() < deadline) {
                    Thread.sleep(50);
                }
                assertThat(one.groupsForTest().groupIds().get()).as("shell 1 forgot the group's members and generation")
                        .doesNotContain(g);
            }
        } finally {
            if (three != null) {
                three.close();
            }
            wals.forEach(MemBackends::clearWal);
        }
    }

    /**
     * The balancer evens out bytes, not just partition counts: four partitions spread two and two by count, then all
     * traffic goes to the two on one shell. The balancer moves one of them to the other shell (by bytes), then evens
     * the counts with a quiet partition, and then leaves the layout alone while the load stays.
     */
    @Test
    void theBalancerEvensOutBytesNotJustPartitionCounts(@TempDir Path tmp) throws Exception {
        List<String> wals = List.of("bb1-" + UUID.randomUUID(), "bb2-" + UUID.randomUUID());
        Map<String, String> fast = Map.of("s3stream.kafka.balance.interval.ms", "300",
                "s3stream.kafka.balance.min.bytes.per.sec", "20000");
        try (KafkaShell one = shell(tmp, 1, wals.get(0), fast); KafkaShell two = shell(tmp, 2, wals.get(1), fast)) {
            String both = one.bootstrapServers() + "," + two.bootstrapServers();
            Properties ap = new Properties();
            ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, both);
            try (Admin admin = Admin.create(ap)) {
                long deadline = System.currentTimeMillis() + 15_000;
                while (admin.describeCluster().nodes().get().size() < 2 && System.currentTimeMillis() < deadline) {
                    Thread.sleep(100);
                }
                admin.createTopics(List.of(new NewTopic("hot", 4, (short) 1))).all().get();
                int[] l = leaders(admin, "hot", 4);
                deadline = System.currentTimeMillis() + 20_000;
                while (count(l, 1) != 2 && System.currentTimeMillis() < deadline) {
                    Thread.sleep(100);
                    l = leaders(admin, "hot", 4);
                }
                assertThat(count(l, 1)).as("an idle cluster is balanced by count").isEqualTo(2);
                // The two partitions shell 1 kept get all the traffic.
                List<Integer> hot = new ArrayList<>();
                for (int p = 0; p < 4; p++) {
                    if (l[p] == 1) {
                        hot.add(p);
                    }
                }
                java.util.concurrent.atomic.AtomicBoolean writing = new java.util.concurrent.atomic.AtomicBoolean(true);
                List<Exception> failures = java.util.Collections.synchronizedList(new ArrayList<>());
                try (KafkaProducer<String, String> p = new KafkaProducer<>(Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, both, ProducerConfig.LINGER_MS_CONFIG, 5,
                        ProducerConfig.METADATA_MAX_AGE_CONFIG, 1_000,
                        ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName(),
                        ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName()))) {
                    String kib = "x".repeat(1024);
                    Thread writer = Thread.ofPlatform().start(() -> {
                        while (writing.get()) {
                            for (int part : hot) { // ~100 KiB/s per hot partition
                                p.send(new ProducerRecord<>("hot", part, null, kib), (m, e) -> {
                                    if (e != null) {
                                        failures.add(e);
                                    }
                                });
                            }
                            try {
                                Thread.sleep(10);
                            } catch (InterruptedException e) {
                                return;
                            }
                        }
                    });
                    long started = System.nanoTime();
                    deadline = System.currentTimeMillis() + 30_000;
                    while ((l[hot.get(0)] == l[hot.get(1)] || count(l, 1) != 2) && System.currentTimeMillis() < deadline) {
                        Thread.sleep(100);
                        l = leaders(admin, "hot", 4);
                    }
                    long evenMs = (System.nanoTime() - started) / 1_000_000;
                    assertThat(l[hot.get(0)]).as("the two busy partitions end on different shells")
                            .isNotEqualTo(l[hot.get(1)]);
                    assertThat(count(l, 1)).as("and the counts are even again").isEqualTo(2);
                    int[] settled = l;
                    Thread.sleep(3_000);
                    assertThat(leaders(admin, "hot", 4)).as("nothing moves while the load stays").isEqualTo(settled);
                    writing.set(false);
                    writer.join();
                    p.flush();
                    System.out.println("BALANCE_BY_BYTES_MS " + evenMs);
                }
                assertThat(failures).isEmpty();
            }
        } finally {
            wals.forEach(MemBackends::clearWal);
        }
    }

    /** Leaders by partition; asked again while the shell answering has not seen the topic yet. */
    private static int[] leaders(Admin admin, String topic, int partitions) throws Exception {
        long deadline = System.currentTimeMillis() + 10_000;
        while (true) {
            try {
                int[] out = new int[partitions];
                for (int p = 0; p < partitions; p++) {
                    out[p] = leader(admin, topic, p);
                }
                return out;
            } catch (java.util.concurrent.ExecutionException e) {
                if (System.currentTimeMillis() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    private static int count(int[] leaders, int node) {
        return (int) java.util.Arrays.stream(leaders).filter(x -> x == node).count();
    }
}
