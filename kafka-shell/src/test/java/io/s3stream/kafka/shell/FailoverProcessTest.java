package io.s3stream.kafka.shell;

import io.s3stream.kafka.shell.group.GroupApis;
import io.s3stream.testing.LatencyFs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Three kafka-shell processes on one {@code file://} object store, with a shared WAL ({@code objectwal://} in that
 * store, or {@code fsx://} on latencyfs with a mount per shell). An idempotent producer (acks=all) writes across 12
 * partitions spread over the shells and a consumer group reads and commits; then shell 1 — which leads four partitions
 * and coordinates the group — is SIGKILLed, or SIGSTOPped and later SIGCONTed. The survivors notice its lease expire,
 * take over its WAL and its partitions: every partition is writable again, every acknowledged record is read back
 * exactly once, and the group's committed offsets survive. A paused shell, resumed, finds itself fenced and exits
 * without serving.
 */
@Timeout(300)
class FailoverProcessTest {
    private static final int PARTITIONS = 12;
    private static final int RECORDS = 3000;
    private static Path base;
    private static final List<LatencyFs> mounts = new ArrayList<>();

    @BeforeAll
    static void dirs() throws IOException {
        base = Files.createTempDirectory("kafka-failover-");
    }

    @AfterAll
    static void cleanup() throws IOException {
        mounts.forEach(LatencyFs::close);
        try (var walk = Files.walk(base)) {
            walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    private record Shell(ProcessBrokerTest.Broker broker, int id) {
    }

    @ParameterizedTest(name = "{0}, owner {1}, idempotent {2}")
    @CsvSource({"objectwal, KILL, true", "objectwal, STOP, true", "fsx, KILL, true", "objectwal, KILL, false"})
    void survivorsTakeOverADeadOrPausedShell(String walKind, String signal, boolean idempotent) throws Exception {
        Path run = Files.createDirectories(base.resolve(walKind + "-" + signal + "-" + System.nanoTime()));
        failover(run, "file://" + run.resolve("objects"), walKind, signal, idempotent);
    }

    /**
     * The failover scenario on {@code store}: three shells, a producer (idempotent or not) and a consumer group, the
     * shell leading four partitions and coordinating the group killed or paused. Shared with the MinIO variant.
     */
    static void failover(Path run, String store, String walKind, String signal, boolean idempotent) throws Exception {
        Map<Integer, Path> walRoots = new HashMap<>();
        if (walKind.equals("fsx")) {
            for (int id = 1; id <= 3; id++) {
                LatencyFs m = LatencyFs.mount(run.resolve("fsx-backing"), run.resolve("fsx-" + id));
                mounts.add(m);
                walRoots.put(id, m.mountPoint());
            }
            Files.createDirectories(walRoots.get(1).resolve("wal"));
        }
        List<Shell> shells = new ArrayList<>();
        try {
            for (int id = 1; id <= 3; id++) {
                String wal = walKind.equals("fsx")
                        ? "fsx://" + walRoots.get(id).resolve("wal") + "?capacity=64MiB&segmentBytes=16MiB"
                        : "objectwal://?batchMs=5&batchBytes=1MiB&capacity=256MiB";
                shells.add(new Shell(new ProcessBrokerTest.Broker(run.resolve("shell-" + id),
                        ProcessBrokerTest.freePort(), "node.id=" + id, "s3stream.object.store=" + store,
                        "s3stream.wal=" + wal, "s3stream.kafka.reconcile.ms=200"), id));
            }
            String bootstrap = String.join(",", shells.stream().map(s -> s.broker().bootstrap()).toList());
            run(shells, bootstrap, signal, idempotent);
        } finally {
            Path keep = Files.createDirectories(Path.of("target", "failover-logs", walKind + "-" + signal + "-"
                    + (idempotent ? "idempotent" : "plain") + "-" + store.substring(0, store.indexOf(':'))));
            for (Shell s : shells) {
                s.broker().process.destroyForcibly();
                s.broker().process.waitFor(30, TimeUnit.SECONDS);
                Files.copy(s.broker().log, keep.resolve("shell-" + s.id() + ".log"),
                        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }

    private static void run(List<Shell> shells, String bootstrap, String signal, boolean idempotent) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            createSpread(admin, "fo", PARTITIONS); // shell 1 keeps 0-3, shell 2 gets 4-7, shell 3 gets 8-11

            Map<String, Object> config = Map.of(ProducerConfig.ACKS_CONFIG, "all",
                    ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, idempotent, ProducerConfig.LINGER_MS_CONFIG, 2,
                    ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000, ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000,
                    ProducerConfig.METADATA_MAX_AGE_CONFIG, 1_000);
            Set<String> acked = ConcurrentHashMap.newKeySet();
            ConcurrentLinkedQueue<Exception> failures = new ConcurrentLinkedQueue<>();
            AtomicInteger sent = new AtomicInteger();
            AtomicBoolean consuming = new AtomicBoolean(true);
            Map<TopicPartition, Long> groupCommitted = new ConcurrentHashMap<>();
            String group = coordinatedBy(1); // the victim coordinates the group
            Thread consumer = Thread.ofPlatform().start(() -> consumeGroup(bootstrap, group, consuming, groupCommitted));
            try (KafkaProducer<String, String> producer = ProcessBrokerTest.producer(bootstrap, config)) {
                Thread writer = startWriter(producer, "fo", PARTITIONS, "v", RECORDS, 3,
                        new Writes(acked, failures, sent, new AtomicBoolean()));
                while (sent.get() < RECORDS / 3) {
                    Thread.sleep(10);
                }
                Shell victim = shells.getFirst();
                long killed = System.nanoTime();
                signal(victim.broker().process, signal);
                long writable = awaitAllWritable(bootstrap);
                System.out.printf("failover (%s): every partition writable again %d ms after the signal%n", signal,
                        TimeUnit.NANOSECONDS.toMillis(writable - killed));
                awaitLeaders(admin, leaders -> !leaders.containsValue(1), "no partition led by shell 1");
                if (signal.equals("STOP")) {
                    signal(victim.broker().process, "CONT");
                    assertThat(victim.broker().process.waitFor(30, TimeUnit.SECONDS))
                            .as("the resumed shell exits once it finds itself fenced").isTrue();
                    assertThat(victim.broker().process.exitValue()).isEqualTo(3);
                    assertThat(Files.readString(victim.broker().log)).contains("FENCED");
                }
                writer.join();
                producer.flush();
            }
            assertThat(failures).as(() -> "no send failed\n" + diagnostics(failures, shells.stream()
                    .map(sh -> sh.broker().log).toList())).isEmpty();
            assertThat(acked).hasSize(RECORDS);

            String survivor = shells.get(1).broker().bootstrap() + "," + shells.get(2).broker().bootstrap();
            List<String> values = new ArrayList<>();
            ProcessBrokerTest.readAll(survivor, "fo", RECORDS).forEach(r -> {
                if (!r.value().equals("probe")) {
                    values.add(r.value());
                }
            });
            if (idempotent) {
                assertThat(values).as("every acknowledged record exactly once").hasSize(RECORDS)
                        .containsExactlyInAnyOrderElementsOf(acked);
            } else {
                // Without idempotence a retry whose first attempt landed is stored twice: at least once.
                assertThat(values).as("every acknowledged record at least once").containsAll(acked);
                System.out.printf("failover without idempotence: %d records read for %d acknowledged%n",
                        values.size(), acked.size());
            }

            consuming.set(false);
            consumer.join(60_000);
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            for (Map.Entry<TopicPartition, Long> e : groupCommitted.entrySet()) {
                assertThat(committed.get(e.getKey())).as("committed offset of " + e.getKey() + " survives")
                        .isNotNull();
                assertThat(committed.get(e.getKey()).offset()).isGreaterThanOrEqualTo(e.getValue());
            }
            assertThat(groupCommitted).as("the group committed on every partition").hasSize(PARTITIONS);
        }
    }

    /**
     * Self-balancing and a rolling restart: shell 1 creates 8 partitions (it leads them all); the balancer moves half to
     * shell 2; shell 3 joins and gets its share; then each shell in turn is stopped with SIGTERM (it drains its
     * partitions to the others first) and restarted, and gets partitions back. An idempotent producer writes
     * throughout: nothing acknowledged is lost or duplicated, no send fails.
     */
    @org.junit.jupiter.api.Test
    void theBalancerSpreadsPartitionsAndARollingRestartDrainsThem() throws Exception {
        Path run = Files.createDirectories(base.resolve("balance-" + System.nanoTime()));
        String store = "file://" + run.resolve("objects");
        String[] common = {"s3stream.object.store=" + store, "s3stream.wal=objectwal://?batchMs=5&batchBytes=1MiB",
                "s3stream.kafka.reconcile.ms=200", "s3stream.kafka.balance.interval.ms=500"};
        Map<Integer, ProcessBrokerTest.Broker> shells = new java.util.TreeMap<>();
        Map<Integer, Integer> ports = new HashMap<>();
        java.util.function.IntFunction<ProcessBrokerTest.Broker> start = id -> {
            try {
                ports.putIfAbsent(id, ProcessBrokerTest.freePort());
                List<String> o = new ArrayList<>(List.of(common));
                o.add("node.id=" + id);
                return new ProcessBrokerTest.Broker(run.resolve("shell-" + id), ports.get(id), o.toArray(String[]::new));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        };
        try {
            shells.put(1, start.apply(1));
            shells.put(2, start.apply(2));
            String bootstrap = shells.get(1).bootstrap() + "," + shells.get(2).bootstrap();
            try (Admin admin = admin(bootstrap)) {
                admin.createTopics(List.of(new NewTopic("bal", 8, (short) 1))).all().get(60, TimeUnit.SECONDS);
                Set<String> acked = ConcurrentHashMap.newKeySet();
                ConcurrentLinkedQueue<Exception> failures = new ConcurrentLinkedQueue<>();
                AtomicInteger sent = new AtomicInteger();
                try (KafkaProducer<String, String> producer = ProcessBrokerTest.producer(bootstrap + ","
                        + "127.0.0.1:" + reservePort(ports, 3), Map.of(ProducerConfig.ACKS_CONFIG, "all",
                        ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true, ProducerConfig.LINGER_MS_CONFIG, 2,
                        ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000, ProducerConfig.METADATA_MAX_AGE_CONFIG,
                        1_000))) {
                    AtomicBoolean stop = new AtomicBoolean();
                    Thread writer = startWriter(producer, "bal", 8, "b", Integer.MAX_VALUE, 4,
                            new Writes(acked, failures, sent, stop));
                    long t0 = System.nanoTime();
                    awaitLeaders(admin, "bal", l -> count(l, 1) == 4 && count(l, 2) == 4, "4 + 4");
                    long even2 = System.nanoTime();
                    shells.put(3, start.apply(3));
                    long joined = System.nanoTime();
                    awaitLeaders(admin, "bal", l -> spread(l, List.of(1, 2, 3)) <= 1 && count(l, 3) > 0,
                            "spread over three");
                    long even3 = System.nanoTime();
                    // A rolling restart: each shell in turn is stopped with SIGTERM (it drains) and started again.
                    List<String> rolled = new ArrayList<>();
                    for (int id = 1; id <= 3; id++) {
                        int restarting = id;
                        ProcessBrokerTest.Broker old = shells.remove(id);
                        long stopping = System.nanoTime();
                        old.close(); // SIGTERM: drains, then exits
                        long stopped = System.nanoTime();
                        awaitLeaders(admin, "bal", l -> count(l, restarting) == 0, "none on the stopped shell " + id);
                        shells.put(id, start.apply(id));
                        awaitLeaders(admin, "bal", l -> spread(l, List.of(1, 2, 3)) <= 1 && count(l, restarting) > 0,
                                "spread again after restarting shell " + id);
                        rolled.add("shell " + id + " drained in " + ms(stopped - stopping) + " ms, even again "
                                + ms(System.nanoTime() - stopped) + " ms after");
                    }
                    stop.set(true);
                    writer.join();
                    producer.flush();
                    System.out.printf("balancer: 8 partitions even over 2 shells after %d ms; a third shell got its share "
                                    + "%d ms after it started; rolling restart: %s; %d records sent%n", ms(even2 - t0),
                            ms(even3 - joined), rolled, sent.get());
                }
                assertThat(failures).as(() -> "no send failed during balancing and the rolling restart\n"
                        + diagnostics(failures, logsOf(run))).isEmpty();
                List<String> values = new ArrayList<>();
                ProcessBrokerTest.readAll(shells.get(2).bootstrap(), "bal", acked.size()).forEach(r -> values.add(r.value()));
                assertThat(values).as("every acknowledged record exactly once").hasSize(acked.size())
                        .containsExactlyInAnyOrderElementsOf(acked);
                assertThat(Files.readString(one(run))).as("shell 1 drained its partitions at SIGTERM")
                        .containsPattern("kafka-shell: drained [1-9]\\d* partitions");
            }
        } finally {
            Path keep = Files.createDirectories(Path.of("target", "failover-logs", "balance"));
            for (Map.Entry<Integer, ProcessBrokerTest.Broker> e : shells.entrySet()) {
                e.getValue().process.destroyForcibly();
                e.getValue().process.waitFor(30, TimeUnit.SECONDS);
                Files.copy(e.getValue().log, keep.resolve("shell-" + e.getKey() + ".log"),
                        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }

    /** An admin client with short timeouts, for clusters whose shells come and go. */
    static Admin admin(String bootstrap) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 3_000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
                10_000, AdminClientConfig.METADATA_MAX_AGE_CONFIG, 1_000));
    }

    /**
     * Waits for three registered shells, creates {@code topic} (on the shell asked) and moves its second and last
     * thirds of partitions to shells 2 and 3, then waits until Metadata shows the three leaders.
     */
    static void createSpread(Admin admin, String topic, int partitions) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (admin.describeCluster().nodes().get(10, TimeUnit.SECONDS).size() < 3) {
            assertThat(System.nanoTime()).as("three shells registered").isLessThan(deadline);
            Thread.sleep(100);
        }
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(60, TimeUnit.SECONDS);
        Map<TopicPartition, Optional<NewPartitionReassignment>> moves = new HashMap<>();
        int third = partitions / 3;
        for (int p = third; p < partitions; p++) {
            moves.put(new TopicPartition(topic, p), Optional.of(new NewPartitionReassignment(List.of(p < 2 * third ? 2 : 3))));
        }
        admin.alterPartitionReassignments(moves).all().get(60, TimeUnit.SECONDS);
        awaitLeaders(admin, topic, leaders -> leaders.values().stream().distinct().count() == 3, "spread over 3 shells");
    }

    /** What a writer thread acknowledged, what failed, how many it sent; {@code stop} ends it early. */
    record Writes(Set<String> acked, ConcurrentLinkedQueue<Exception> failures, AtomicInteger sent, AtomicBoolean stop) {
        Writes() {
            this(ConcurrentHashMap.newKeySet(), new ConcurrentLinkedQueue<>(), new AtomicInteger(), new AtomicBoolean());
        }
    }

    /**
     * Starts a thread sending {@code prefix + i} to partition {@code i % partitions}, one every {@code pauseMs}, until
     * {@code limit} records are sent or {@code w.stop()} is set; acknowledgements and failures go to {@code w}.
     */
    static Thread startWriter(KafkaProducer<String, String> producer, String topic, int partitions, String prefix,
                              int limit, long pauseMs, Writes w) {
        return Thread.ofPlatform().start(() -> {
            for (int i = 0; i < limit && !w.stop().get(); i++) {
                String v = prefix + i;
                producer.send(new ProducerRecord<>(topic, i % partitions, null, v), (md, e) -> {
                    if (e == null) {
                        w.acked().add(v);
                    } else {
                        w.failures().add(e);
                    }
                });
                w.sent().incrementAndGet();
                try {
                    Thread.sleep(pauseMs);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
    }

    /**
     * The Kafka client's own account (its producer and consumer log through JUL here), kept so that a failed run says in
     * its assertion message why a send failed: the report of a CI run shows that message, not the test's output.
     */
    private static final java.util.concurrent.ConcurrentLinkedDeque<String> CLIENT_LOG =
            new java.util.concurrent.ConcurrentLinkedDeque<>();
    private static final java.util.logging.Logger CLIENT_LOGGER = java.util.logging.Logger.getLogger("org.apache.kafka");

    static {
        CLIENT_LOGGER.addHandler(new java.util.logging.Handler() {
            private final java.util.logging.SimpleFormatter format = new java.util.logging.SimpleFormatter();

            @Override
            public void publish(java.util.logging.LogRecord r) {
                CLIENT_LOG.addLast(java.time.Instant.ofEpochMilli(r.getMillis()) + " " + r.getLevel() + " "
                        + format.formatMessage(r));
                while (CLIENT_LOG.size() > 20_000) {
                    CLIENT_LOG.pollFirst();
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        });
    }

    /**
     * What a failed send assertion prints: the client's log lines about each failed partition and about producer ids
     * and epochs, and the shells' warnings and errors.
     */
    private static String diagnostics(java.util.Collection<Exception> failures, List<Path> shellLogs) {
        Set<String> partitions = new java.util.TreeSet<>();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("for ([\\w.-]+-\\d+):")
                .matcher(failures.toString());
        while (m.find()) {
            partitions.add(m.group(1));
        }
        StringBuilder out = new StringBuilder("client log about " + partitions + " and producer ids:\n");
        CLIENT_LOG.stream().filter(line -> line.contains("roducerId") || line.contains("epoch")
                        && line.contains("Producer") || partitions.stream().anyMatch(p -> line.contains(p + " ")
                        || line.contains(p + ",") || line.contains(p + "=")))
                .map(line -> line.length() > 400 ? line.substring(0, 400) : line)
                .reduce((a, b) -> a + "\n" + b).ifPresent(s -> out.append(tail(s, 60)).append('\n'));
        for (Path log : shellLogs) {
            try {
                String warnings = Files.readAllLines(log).stream()
                        .filter(l -> l.startsWith("WARNING") || l.startsWith("SEVERE") || l.contains("FENCED")
                                || partitions.stream().anyMatch(l::contains))
                        .map(l -> l.length() > 300 ? l.substring(0, 300) : l)
                        .reduce((a, b) -> a + "\n" + b).orElse("");
                out.append(log.getFileName()).append(":\n").append(tail(warnings, 25)).append('\n');
            } catch (IOException e) {
                out.append(log).append(": ").append(e).append('\n');
            }
        }
        return out.toString();
    }

    private static String tail(String lines, int n) {
        List<String> all = List.of(lines.split("\n"));
        return String.join("\n", all.subList(Math.max(0, all.size() - n), all.size()));
    }

    private static List<Path> logsOf(Path run) {
        try (var logs = Files.list(run)) {
            return logs.filter(f -> f.getFileName().toString().endsWith(".log")).sorted().toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    private static Path one(Path run) throws IOException {
        try (var logs = Files.list(run)) {
            return logs.filter(f -> f.getFileName().toString().startsWith("shell-1-broker-")).sorted().findFirst()
                    .orElseThrow();
        }
    }

    private static int reservePort(Map<Integer, Integer> ports, int id) throws IOException {
        ports.putIfAbsent(id, ProcessBrokerTest.freePort());
        return ports.get(id);
    }

    private static long ms(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }

    private static int count(Map<Integer, Integer> leaders, int id) {
        return (int) leaders.values().stream().filter(v -> v == id).count();
    }

    private static int spread(Map<Integer, Integer> leaders, List<Integer> ids) {
        int max = ids.stream().mapToInt(id -> count(leaders, id)).max().orElse(0);
        int min = ids.stream().mapToInt(id -> count(leaders, id)).min().orElse(0);
        return max - min;
    }

    /** A group id that shell {@code node} coordinates while shells 1, 2 and 3 are live. */
    private static String coordinatedBy(int node) {
        for (int i = 0; ; i++) {
            if (GroupApis.rendezvous("fo-group-" + i, List.of(1, 2, 3)) == node) {
                return "fo-group-" + i;
            }
        }
    }

    /** Consumes with a group (its coordinator is shell 1 until it dies), committing synchronously every poll. */
    private static void consumeGroup(String bootstrap, String group, AtomicBoolean running,
                                     Map<TopicPartition, Long> committed) {
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest", ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000, ConsumerConfig.METADATA_MAX_AGE_CONFIG, 1_000,
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()))) {
            c.subscribe(List.of("fo"));
            while (running.get()) {
                try {
                    var records = c.poll(Duration.ofMillis(200));
                    if (!records.isEmpty()) {
                        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                        for (TopicPartition tp : records.partitions()) {
                            var list = records.records(tp);
                            offsets.put(tp, new OffsetAndMetadata(list.getLast().offset() + 1));
                        }
                        c.commitSync(offsets, Duration.ofSeconds(20));
                        offsets.forEach((tp, o) -> committed.merge(tp, o.offset(), Math::max));
                    }
                } catch (org.apache.kafka.common.errors.RetriableException
                         | org.apache.kafka.clients.consumer.CommitFailedException e) {
                    // the coordinator moved: the consumer rediscovers it and rejoins
                }
            }
        }
    }

    private static long awaitAllWritable(String bootstrap) throws Exception {
        return awaitAllWritable(bootstrap, "fo", PARTITIONS);
    }

    /** Sends a probe record to each partition until all have accepted one; returns when the last did. */
    static long awaitAllWritable(String bootstrap, String topic, int partitions) throws Exception {
        Map<String, Object> config = Map.of(ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.LINGER_MS_CONFIG, 0,
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000, ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 2_000,
                ProducerConfig.METADATA_MAX_AGE_CONFIG, 500, ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 50);
        try (KafkaProducer<String, String> probe = ProcessBrokerTest.producer(bootstrap, config)) {
            Set<Integer> done = new HashSet<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (done.size() < partitions && System.nanoTime() < deadline) {
                List<java.util.concurrent.Future<?>> sends = new ArrayList<>();
                List<Integer> tried = new ArrayList<>();
                for (int p = 0; p < partitions; p++) {
                    if (!done.contains(p)) {
                        sends.add(probe.send(new ProducerRecord<>(topic, p, null, "probe")));
                        tried.add(p);
                    }
                }
                for (int i = 0; i < sends.size(); i++) {
                    try {
                        sends.get(i).get(120, TimeUnit.SECONDS);
                        done.add(tried.get(i));
                    } catch (java.util.concurrent.ExecutionException e) {
                        // not yet
                    }
                }
            }
            assertThat(done).as("every partition writable again").hasSize(partitions);
            return System.nanoTime();
        }
    }

    private static void awaitLeaders(Admin admin, java.util.function.Predicate<Map<Integer, Integer>> ok, String what)
            throws Exception {
        awaitLeaders(admin, "fo", ok, what);
    }

    static void awaitLeaders(Admin admin, String topic, java.util.function.Predicate<Map<Integer, Integer>> ok,
                                     String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Map<Integer, Integer> leaders = Map.of();
        while (System.nanoTime() < deadline) {
            TopicDescription d;
            try {
                d = admin.describeTopics(List.of(topic)).allTopicNames().get(15, TimeUnit.SECONDS).get(topic);
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                Thread.sleep(200); // asked a dead shell: ask again
                continue;
            }
            leaders = new HashMap<>();
            for (TopicPartitionInfo p : d.partitions()) {
                leaders.put(p.partition(), p.leader() == null ? -1 : p.leader().id());
            }
            if (ok.test(leaders)) {
                return;
            }
            Thread.sleep(200);
        }
        throw new AssertionError("leaders never " + what + ": " + leaders);
    }

    static void signal(Process p, String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).inheritIO().start();
        assertThat(kill.waitFor()).as("kill -" + signal).isZero();
    }
}
