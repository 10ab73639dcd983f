package io.s3stream.kafka.shell;

import io.s3stream.testing.S3Server;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The cluster's end-to-end consistency check (issue 20). Three shells run as processes on one MinIO bucket, their WALs
 * in it too ({@code objectwal://}), so a survivor can take over a dead shell's partitions. Clients reach each shell, and
 * the shells reach MinIO, through {@link FaultProxy}s. While an idempotent producer writes per-partition sequence
 * numbers and a consumer group of two reads and commits, a seeded nemesis injects one fault at a time: SIGKILL and
 * restart, SIGSTOP for up to 9 s (long enough for the others to take over; the resumed shell must find itself fenced
 * and exit, and is restarted), object-store latency and connection resets, a client-side partition of one shell, and
 * client-side latency with resets. Then everything heals and a checker reads every partition from the start and
 * verifies, against the history the clients recorded:
 * <ul>
 *   <li>every acknowledged record is at its acknowledged offset with its value (nothing acknowledged lost);</li>
 *   <li>nothing is read that was not produced, and no value twice (the producer is idempotent);</li>
 *   <li>per partition, offsets and sequence numbers increase together, and a sequence number missing from the log is
 *       one whose send failed;</li>
 *   <li>every record the group read is the one the final log holds at that offset (no read of data later lost);</li>
 *   <li>committed offsets never went back: each OffsetFetch sampled during the run, and the final one, is at or
 *       above every commit acknowledged before it was asked.</li>
 * </ul>
 * Seeded and repeatable in its choices: {@code -Dchaos.seed=N} replays a run's fault schedule (the seed is printed
 * and is in every failure message); {@code -Dchaos.seconds} sets the length (60 in CI; the documented long run used
 * 1,800). Network faults are made in user space because these machines' kernels have no {@code netem} (see
 * {@link FaultProxy}).
 */
@Timeout(2_400)
class ChaosIT {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    private static final int SHELLS = 3;
    private static final int PARTITIONS = 6;
    private static final String TOPIC = "chaos";
    private static final String GROUP = "chaos-group";
    private static final int RATE = 400; // records per second

    private final long seed = Long.getLong("chaos.seed", System.nanoTime() & 0xFFFF_FFFFL);
    private final int seconds = Integer.getInteger("chaos.seconds", 60);
    private final Random random = new Random(seed);

    /** A shell: its node id, its fixed port, the proxy its clients use, its current process. */
    private static final class Node {
        final int id;
        final int port;
        final FaultProxy clients;
        volatile ProcessBrokerTest.Broker broker;
        int starts;

        Node(int id, int port, FaultProxy clients) {
            this.id = id;
            this.port = port;
            this.clients = clients;
        }
    }

    private record Ack(int partition, long offset, String value) {
    }

    private record Read(int partition, long offset, String value) {
    }

    private final Set<String> sent = ConcurrentHashMap.newKeySet();
    private final Map<String, Ack> acked = new ConcurrentHashMap<>();
    private final Set<String> failedSends = ConcurrentHashMap.newKeySet();
    /** Why sends failed, by exception class: availability, which the checker does not judge, in the summary. */
    private final Map<String, AtomicLong> sendErrors = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Read> groupReads = new ConcurrentLinkedQueue<>();
    /** Per partition: the highest offset whose commit was acknowledged. */
    private final Map<TopicPartition, Long> commitAcked = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
    private final Map<String, AtomicLong> faults = new ConcurrentHashMap<>();
    private final AtomicLong offsetSamples = new AtomicLong();

    private void violation(String what) {
        violations.add(what);
        System.err.println("chaos VIOLATION (seed " + seed + "): " + what);
    }

    private void count(String fault) {
        faults.computeIfAbsent(fault, k -> new AtomicLong()).incrementAndGet();
    }

    @Test
    void noAcknowledgedRecordIsLostAndNothingIsInventedUnderRandomFaults() throws Exception {
        System.out.printf("chaos: seed %d (replay with -Dchaos.seed=%d), %d s%n", seed, seed, seconds);
        Path run = Files.createTempDirectory("kafka-chaos-");
        S3Server.Running minio = S3.server();
        int minioPort = java.net.URI.create(minio.endpoint()).getPort();
        List<Node> nodes = new ArrayList<>();
        try (FaultProxy store = new FaultProxy("store", "127.0.0.1", minioPort, random.nextLong())) {
            String storeUri = new S3Server.Running("minio via fault proxy", null, "http://127.0.0.1:" + store.port(),
                    minio.accessKey(), minio.secretKey(), minio.bucket(), minio.region()).uri("chaos-" + seed + "-"
                    + System.nanoTime());
            try {
                for (int id = 1; id <= SHELLS; id++) {
                    int port = ProcessBrokerTest.freePort();
                    Node n = new Node(id, port, new FaultProxy("shell-" + id, "127.0.0.1", port, random.nextLong()));
                    nodes.add(n);
                    start(n, run, storeUri);
                }
                String bootstrap = String.join(",", nodes.stream().map(n -> "127.0.0.1:" + n.clients.port()).toList());
                runWorkload(nodes, store, run, storeUri, bootstrap);
            } finally {
                Path keep = Files.createDirectories(Path.of("target", "chaos-logs", Long.toString(seed)));
                for (Node n : nodes) {
                    if (n.broker != null) {
                        n.broker.process.destroyForcibly();
                        n.broker.process.waitFor(30, TimeUnit.SECONDS);
                    }
                    n.clients.close();
                }
                try (var logs = Files.list(run)) {
                    for (Path log : logs.filter(p -> p.toString().endsWith(".log")).toList()) {
                        Files.copy(log, keep.resolve(log.getFileName()), StandardCopyOption.REPLACE_EXISTING);
                    }
                }
            }
        } finally {
            try (var walk = Files.walk(run)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    /**
     * Starts a shell. A start may outlast the lease of the instance it replaces (store latency slows its recovery),
     * and another shell then takes it over: the starting process exits fenced (status 3), as a serving one does,
     * and is started again (a few times: a shell fenced at every start is a failure).
     */
    private void start(Node n, Path run, String storeUri) throws Exception {
        for (int attempt = 1; ; attempt++) {
            n.starts++;
            try {
                n.broker = new ProcessBrokerTest.Broker(run.resolve("shell-" + n.id), n.port,
                        "node.id=" + n.id, "advertised.listeners=PLAINTEXT://127.0.0.1:" + n.clients.port(),
                        "s3stream.object.store=" + storeUri,
                        "s3stream.wal=objectwal://?batchMs=5&batchBytes=1MiB&capacity=256MiB",
                        "s3stream.kafka.reconcile.ms=200");
                return;
            } catch (ProcessBrokerTest.Broker.Exited e) {
                if (e.status != 3 || attempt == 5) {
                    throw e;
                }
                count("fenced while starting");
            }
        }
    }

    private void runWorkload(List<Node> nodes, FaultProxy store, Path run, String storeUri, String bootstrap)
            throws Exception {
        try (Admin admin = FailoverProcessTest.admin(bootstrap)) {
            admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get(60, TimeUnit.SECONDS);
        }
        AtomicBoolean producing = new AtomicBoolean(true);
        AtomicBoolean consuming = new AtomicBoolean(true);
        AtomicBoolean sampling = new AtomicBoolean(true);
        Map<String, Object> producerConfig = Map.of(ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true, ProducerConfig.LINGER_MS_CONFIG, 5,
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000, ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000,
                ProducerConfig.METADATA_MAX_AGE_CONFIG, 1_000);
        List<Thread> clients = new ArrayList<>();
        try (KafkaProducer<String, String> producer = ProcessBrokerTest.producer(bootstrap, producerConfig)) {
            clients.add(Thread.ofPlatform().name("chaos-producer").start(() -> produce(producer, producing)));
            for (int m = 0; m < 2; m++) {
                clients.add(Thread.ofPlatform().name("chaos-member-" + m).start(() -> consume(bootstrap, consuming)));
            }
            clients.add(Thread.ofPlatform().name("chaos-offsets").start(() -> sampleOffsets(bootstrap, sampling)));

            nemesis(nodes, store, run, storeUri);

            producing.set(false);
            clients.getFirst().join();
            producer.flush(); // every send is acknowledged or failed now
        }
        // Let the group catch up on what was written, then stop it and the sampler.
        Thread.sleep(5_000);
        consuming.set(false);
        sampling.set(false);
        for (Thread t : clients) {
            t.join(60_000);
        }
        check(bootstrap);
        System.out.printf("chaos: seed %d, %d s: %d sent, %d acknowledged, %d failed sends %s, %d records read by the "
                        + "group, %d offset samples; faults %s; proxy resets: store %d, clients %d; shell starts %s%n",
                seed, seconds, sent.size(), acked.size(), failedSends.size(), new TreeMap<>(sendErrors),
                groupReads.size(), offsetSamples.get(),
                new TreeMap<>(faults), store.resets.get(), nodes.stream().mapToLong(n -> n.clients.resets.get()).sum(),
                nodes.stream().map(n -> n.id + ":" + n.starts).toList());
        assertThat(violations).as("consistency violations with seed %d (replay: -Dchaos.seed=%d)", seed, seed)
                .isEmpty();
        assertThat(acked).as("the run acknowledged records").isNotEmpty();
        assertThat(commitAcked).as("the group committed offsets").isNotEmpty();
    }

    // ---------------------------------------------------------------- the nemesis

    private void nemesis(List<Node> nodes, FaultProxy store, Path run, String storeUri) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        Thread.sleep(3_000); // the clients settle first
        while (System.nanoTime() < end) {
            Node n = nodes.get(random.nextInt(nodes.size()));
            int kind = random.nextInt(6);
            int lengthMs = 2_000 + random.nextInt(7_000);
            switch (kind) {
                case 0 -> {
                    if (signalIfAlive(n.broker.process, "KILL")) {
                        count("kill");
                        n.broker.process.waitFor(30, TimeUnit.SECONDS);
                        Thread.sleep(lengthMs);
                        start(n, run, storeUri);
                    }
                }
                case 1 -> {
                    if (signalIfAlive(n.broker.process, "STOP")) {
                        count("pause");
                        Thread.sleep(lengthMs);
                        signalIfAlive(n.broker.process, "CONT");
                    }
                }
                case 2 -> {
                    count("store latency");
                    store.delay(50 + random.nextInt(350));
                    Thread.sleep(lengthMs);
                }
                case 3 -> {
                    count("store resets");
                    store.resets(0.02 + random.nextDouble() * 0.08);
                    Thread.sleep(lengthMs);
                }
                case 4 -> {
                    count("client partition");
                    n.clients.partition();
                    Thread.sleep(lengthMs);
                }
                default -> {
                    count("client latency and resets");
                    n.clients.delay(20 + random.nextInt(180));
                    n.clients.resets(0.01);
                    Thread.sleep(lengthMs);
                }
            }
            store.heal();
            nodes.forEach(x -> x.clients.heal());
            Thread.sleep(1_000 + random.nextInt(3_000));
            restartExited(nodes, run, storeUri);
        }
        Thread.sleep(10_000); // a shell resumed from the last pause finds itself fenced (if it was) within a renewal
        restartExited(nodes, run, storeUri);
    }

    /**
     * Sends {@code signal} to a shell; false when the shell had already exited by itself (a fenced exit racing the
     * nemesis: {@code kill} then finds no such process), which {@link #restartExited} handles.
     */
    private static boolean signalIfAlive(Process p, String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).inheritIO().start();
        int status = kill.waitFor();
        if (status != 0 && !p.isAlive()) {
            return false;
        }
        assertThat(status).as("kill -" + signal + " of a live shell").isZero();
        return true;
    }

    /**
     * Restarts a shell that exited by itself. The only acceptable way is the fenced exit (status 3) of a shell that
     * was paused while the others took over; anything else is a violation.
     */
    private void restartExited(List<Node> nodes, Path run, String storeUri) throws Exception {
        for (Node n : nodes) {
            Process p = n.broker.process;
            if (!p.isAlive()) {
                int status = p.exitValue();
                if (status == 3) {
                    count("fenced exit");
                } else if (status != 137) { // 137: our own SIGKILL
                    violation("shell " + n.id + " exited with status " + status + " (see its log " + n.broker.log
                            + ")");
                }
                start(n, run, storeUri);
            }
        }
    }

    // ---------------------------------------------------------------- the clients

    private void produce(KafkaProducer<String, String> producer, AtomicBoolean running) {
        long[] next = new long[PARTITIONS];
        long started = System.nanoTime();
        for (long i = 0; running.get(); i++) {
            int p = (int) (i % PARTITIONS);
            String value = "p" + p + "-" + next[p]++;
            sent.add(value);
            producer.send(new ProducerRecord<>(TOPIC, p, null, value), (md, e) -> {
                if (e == null) {
                    acked.put(value, new Ack(p, md.offset(), value));
                } else {
                    failedSends.add(value);
                    sendErrors.computeIfAbsent(e.getClass().getSimpleName(), k -> new AtomicLong()).incrementAndGet();
                }
            });
            long due = started + (i + 1) * 1_000_000_000L / RATE;
            long wait = due - System.nanoTime();
            if (wait > 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(wait);
            }
        }
    }

    private void consume(String bootstrap, AtomicBoolean running) {
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ConsumerConfig.GROUP_ID_CONFIG, GROUP,
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest", ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000, ConsumerConfig.METADATA_MAX_AGE_CONFIG, 1_000,
                ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000,
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()))) {
            c.subscribe(List.of(TOPIC));
            while (running.get()) {
                try {
                    var records = c.poll(Duration.ofMillis(200));
                    if (records.isEmpty()) {
                        continue;
                    }
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (TopicPartition tp : records.partitions()) {
                        for (ConsumerRecord<String, String> r : records.records(tp)) {
                            groupReads.add(new Read(tp.partition(), r.offset(), r.value()));
                        }
                        offsets.put(tp, new OffsetAndMetadata(records.records(tp).getLast().offset() + 1));
                    }
                    c.commitSync(offsets, Duration.ofSeconds(20));
                    offsets.forEach((tp, o) -> commitAcked.merge(tp, o.offset(), Math::max));
                } catch (org.apache.kafka.common.KafkaException e) {
                    // A failed or timed-out commit, a coordinator that moved, a rebalance: the member goes on; its
                    // uncommitted records are read again by whoever owns the partition next.
                }
            }
        }
    }

    /** Every second: the group's committed offsets must be at or above every commit acknowledged before asking. */
    private void sampleOffsets(String bootstrap, AtomicBoolean running) {
        try (Admin admin = FailoverProcessTest.admin(bootstrap)) {
            while (running.get()) {
                Map<TopicPartition, Long> before = new HashMap<>(commitAcked);
                try {
                    Map<TopicPartition, OffsetAndMetadata> now = admin.listConsumerGroupOffsets(GROUP)
                            .partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
                    offsetSamples.incrementAndGet();
                    compareCommitted(before, now, "during the run");
                } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                    // the coordinator is down or moving: ask again
                }
                Thread.sleep(1_000);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void compareCommitted(Map<TopicPartition, Long> before, Map<TopicPartition, OffsetAndMetadata> now,
                                  String when) {
        before.forEach((tp, offset) -> {
            OffsetAndMetadata there = now.get(tp);
            if (there == null || there.offset() < offset) {
                violation("committed offset of " + tp + " went back " + when + ": " + offset
                        + " was acknowledged, OffsetFetch answered " + (there == null ? "none" : there.offset()));
            }
        });
    }

    // ---------------------------------------------------------------- the checker

    private void check(String bootstrap) throws Exception {
        Map<Integer, TreeMap<Long, String>> log = readEverything(bootstrap);
        Map<String, Long> seen = new HashMap<>();
        for (Map.Entry<Integer, TreeMap<Long, String>> e : log.entrySet()) {
            int p = e.getKey();
            long lastSeq = -1;
            for (Map.Entry<Long, String> r : e.getValue().entrySet()) {
                String value = r.getValue();
                if (!sent.contains(value)) {
                    violation("partition " + p + " offset " + r.getKey() + " holds '" + value + "', never produced");
                    continue;
                }
                Long earlier = seen.put(value, r.getKey());
                if (earlier != null) {
                    violation("'" + value + "' stored twice, at offsets " + earlier + " and " + r.getKey());
                }
                if (!value.startsWith("p" + p + "-")) {
                    violation("'" + value + "' is in partition " + p);
                    continue;
                }
                long seq = Long.parseLong(value.substring(value.indexOf('-') + 1));
                if (seq <= lastSeq) {
                    violation("partition " + p + " out of order: sequence " + seq + " at offset " + r.getKey()
                            + " after " + lastSeq);
                }
                for (long missing = lastSeq + 1; missing < seq; missing++) {
                    String gap = "p" + p + "-" + missing;
                    if (!failedSends.contains(gap)) {
                        violation("partition " + p + " lacks '" + gap + "' before offset " + r.getKey()
                                + (acked.containsKey(gap) ? " (acknowledged at " + acked.get(gap).offset() + ")" : ""));
                    }
                }
                lastSeq = Math.max(lastSeq, seq);
            }
        }
        for (Ack a : acked.values()) {
            String there = log.getOrDefault(a.partition(), new TreeMap<>()).get(a.offset());
            if (!a.value().equals(there)) {
                violation("acknowledged '" + a.value() + "' at partition " + a.partition() + " offset " + a.offset()
                        + ", the log holds " + (there == null ? "nothing" : "'" + there + "'") + " there");
            }
        }
        for (Read r : groupReads) {
            String there = log.getOrDefault(r.partition(), new TreeMap<>()).get(r.offset());
            if (!r.value().equals(there)) {
                violation("the group read '" + r.value() + "' at partition " + r.partition() + " offset " + r.offset()
                        + ", the final log holds " + (there == null ? "nothing" : "'" + there + "'") + " there");
            }
        }
        try (Admin admin = FailoverProcessTest.admin(bootstrap)) {
            compareCommitted(new HashMap<>(commitAcked), admin.listConsumerGroupOffsets(GROUP)
                    .partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS), "at the end");
        }
    }

    /** Every partition from its start to its end offset, by offset. */
    private static Map<Integer, TreeMap<Long, String>> readEverything(String bootstrap) {
        Map<Integer, TreeMap<Long, String>> out = new TreeMap<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()))) {
            List<TopicPartition> all = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                all.add(new TopicPartition(TOPIC, p));
                out.put(p, new TreeMap<>());
            }
            c.assign(all);
            c.seekToBeginning(all);
            Map<TopicPartition, Long> ends = c.endOffsets(all, Duration.ofSeconds(60));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (all.stream().anyMatch(tp -> c.position(tp, Duration.ofSeconds(60)) < ends.get(tp))) {
                assertThat(System.nanoTime()).as("read every partition to its end %s", ends).isLessThan(deadline);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    out.get(r.partition()).put(r.offset(), r.value());
                }
            }
        }
        return out;
    }
}
