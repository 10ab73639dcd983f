package io.s3stream.benchmarks;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * A long run of one kafka-shell under mixed load, checked as it goes and at the end (benchmarks/compare/soak.sh starts
 * the shell, runs this, then stops the shell and runs the leak checker on its bucket):
 * <ul>
 *   <li>an idempotent producer writes {@code soak} (8 partitions, retention.ms 10 min) at a fixed rate; each value
 *       carries its partition's sequence number, so a read shows a lost, duplicated or reordered record;</li>
 *   <li>every 3 minutes a catch-up reader reads every partition from its log start to its end: sequence numbers must be
 *       consecutive up to at least the last acknowledged one (retention only removes a prefix);</li>
 *   <li>a consumer group whose two members leave and rejoin every 20-60 s, committing after each poll; every 30 s the
 *       group's committed offsets are read back and must not be behind any commit acknowledged before;</li>
 *   <li>every 15 s a topic is created, written, read back and deleted;</li>
 *   <li>a compacted topic whose 1,000 keys are rewritten continuously: at the end each key's last value read is the
 *       last one acknowledged;</li>
 *   <li>every 10 s a sample of the shell process (RSS, threads, open files; the direct memory of the engine's caches
 *       from its metrics endpoint; the bytes of its manifest and objects) goes to the samples TSV; after the first third of the run these must
 *       stay flat (last third vs second third).</li>
 * </ul>
 * Usage: {@code Soak <bootstrap> <shell pid> <minutes> <samples.tsv> <objects dir> [metrics url]}. Exit status 0 when
 * every check passed, 1 otherwise; each failure is printed.
 */
public final class Soak {
    private static final int PARTITIONS = 8;
    private static final String TOPIC = "soak";
    private static final String COMPACTED = "soak-compact";
    private static final int KEYS = 1_000;
    /** Runs at least this long are checked for growth after warm-up (see {@link #checkFlat}). */
    private static final Duration JUDGE_GROWTH_FROM = Duration.ofMinutes(10);

    private final String bootstrap;
    private final long pid;
    private final Path objects;
    private final String metricsUrl;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
    /** Per partition of {@link #TOPIC}: the highest acknowledged sequence number (-1: none). */
    private final AtomicLong[] acked = new AtomicLong[PARTITIONS];
    private final AtomicLong produced = new AtomicLong();
    private final AtomicLong catchUps = new AtomicLong();
    private final AtomicLong topicsChurned = new AtomicLong();
    private final AtomicLong rejoins = new AtomicLong();
    /** Per partition: the highest offset the group committed with an acknowledgement. */
    private final Map<TopicPartition, Long> committed = new ConcurrentHashMap<>();
    /** Per key of {@link #COMPACTED}: the last acknowledged version. */
    private final Map<String, Long> lastVersion = new ConcurrentHashMap<>();

    private Soak(String bootstrap, long pid, Path objects, String metricsUrl) {
        this.bootstrap = bootstrap;
        this.pid = pid;
        this.objects = objects;
        this.metricsUrl = metricsUrl;
        for (int p = 0; p < PARTITIONS; p++) {
            acked[p] = new AtomicLong(-1);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: Soak <bootstrap> <shell pid> <minutes> <samples.tsv> <objects dir> [metrics url]");
            System.exit(2);
        }
        Soak soak = new Soak(args[0], Long.parseLong(args[1]), Path.of(args[4]), args.length > 5 ? args[5] : null);
        boolean ok = soak.run(Duration.ofMinutes(Long.parseLong(args[2])), Path.of(args[3]));
        System.exit(ok ? 0 : 1);
    }

    private Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000));
    }

    private KafkaProducer<String, String> producer() {
        return new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                ProducerConfig.LINGER_MS_CONFIG, 5, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000,
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName(),
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName()));
    }

    private KafkaConsumer<String, String> consumer(String group) {
        Map<String, Object> m = new HashMap<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest", ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 2_000,
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()));
        if (group != null) {
            m.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        return new KafkaConsumer<>(m);
    }

    private void fail(String what) {
        failures.add(what);
        System.err.println("FAIL: " + what);
    }

    private boolean run(Duration length, Path samples) throws Exception {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(
                    new NewTopic(TOPIC, PARTITIONS, (short) 1).configs(Map.of("retention.ms", "600000")),
                    new NewTopic(COMPACTED, 2, (short) 1).configs(Map.of("cleanup.policy", "compact",
                            "min.cleanable.dirty.ratio", "0.1", "delete.retention.ms", "60000"))))
                    .all().get(60, TimeUnit.SECONDS);
        }
        List<Thread> threads = new ArrayList<>();
        threads.add(Thread.ofPlatform().name("soak-produce").start(this::produce));
        threads.add(Thread.ofPlatform().name("soak-compacted").start(this::produceCompacted));
        threads.add(Thread.ofPlatform().name("soak-catch-up").start(() -> every(Duration.ofMinutes(3), this::catchUp)));
        threads.add(Thread.ofPlatform().name("soak-churn").start(() -> every(Duration.ofSeconds(15), this::churnTopic)));
        for (int member = 0; member < 2; member++) {
            long seed = member;
            threads.add(Thread.ofPlatform().name("soak-member-" + member).start(() -> groupMember(seed)));
        }
        threads.add(Thread.ofPlatform().name("soak-offsets").start(
                () -> every(Duration.ofSeconds(30), this::checkCommittedOffsets)));
        List<double[]> rows = new ArrayList<>();
        long start = System.nanoTime();
        long end = start + length.toNanos();
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(samples))) {
            out.println("minute\trss_mb\tthreads\tfds\tcache_mb\tmanifest_kb\tobjects_mb\tproduced\tacked_p0\tfailures");
            while (System.nanoTime() < end && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                double[] s = sample((System.nanoTime() - start) / 60e9);
                rows.add(s);
                out.printf(java.util.Locale.ROOT, "%.2f\t%.1f\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%d\t%d\t%d%n", s[0], s[1],
                        s[2], s[3], s[4], s[5], s[6], produced.get(), acked[0].get(), failures.size());
                out.flush();
                Thread.sleep(10_000);
            }
        }
        if (!ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
            fail("the shell (pid " + pid + ") died during the run");
        }
        running.set(false);
        for (Thread t : threads) {
            t.join(120_000);
        }
        catchUp();
        checkCommittedOffsets();
        checkCompacted();
        checkFlat(rows, length.compareTo(JUDGE_GROWTH_FROM) >= 0);
        System.out.printf("soak: %.0f min, %d records produced (%d per partition acknowledged at most), %d catch-up "
                        + "reads, %d topics created and deleted, %d group rejoins, %d failures%n",
                length.toSeconds() / 60.0, produced.get(), acked[0].get() + 1, catchUps.get(), topicsChurned.get(),
                rejoins.get(), failures.size());
        failures.forEach(f -> System.out.println("FAIL " + f));
        return failures.isEmpty();
    }

    private void every(Duration period, Runnable task) {
        long next = System.nanoTime() + period.toNanos();
        while (running.get()) {
            if (System.nanoTime() - next >= 0) {
                try {
                    task.run();
                } catch (RuntimeException e) {
                    fail(Thread.currentThread().getName() + ": " + e);
                }
                next = System.nanoTime() + period.toNanos();
            }
            sleep(200);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** 2,000 records/s of ~512 bytes, round robin over the partitions, each value its partition's next sequence. */
    private void produce() {
        long[] next = new long[PARTITIONS];
        String padding = "x".repeat(480);
        try (KafkaProducer<String, String> p = producer()) {
            long interval = TimeUnit.SECONDS.toNanos(1) / 2_000;
            long due = System.nanoTime();
            int partition = 0;
            while (running.get()) {
                long seq = next[partition]++;
                int part = partition;
                p.send(new ProducerRecord<>(TOPIC, part, null, part + ":" + seq + ":" + padding), (md, e) -> {
                    if (e != null) {
                        fail("produce to " + TOPIC + "-" + part + " seq " + seq + ": " + e);
                    } else {
                        acked[part].accumulateAndGet(seq, Math::max);
                    }
                });
                produced.incrementAndGet();
                partition = (partition + 1) % PARTITIONS;
                due += interval;
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    java.util.concurrent.locks.LockSupport.parkNanos(wait);
                }
            }
            p.flush();
        }
    }

    private void produceCompacted() {
        Random random = new Random(7);
        long version = 0;
        try (KafkaProducer<String, String> p = producer()) {
            while (running.get()) {
                String key = "k" + random.nextInt(KEYS);
                long v = version++;
                p.send(new ProducerRecord<>(COMPACTED, key, key + "=" + v), (md, e) -> {
                    if (e != null) {
                        fail("produce to " + COMPACTED + ": " + e);
                    } else {
                        lastVersion.merge(key, v, Math::max);
                    }
                });
                sleep(5); // ~200 records/s
            }
            p.flush();
        }
    }

    /**
     * Reads every partition of {@link #TOPIC} from its log start to its end as of now: the sequence numbers are
     * consecutive, and reach at least what was acknowledged before the read began.
     */
    private void catchUp() {
        long[] mustReach = new long[PARTITIONS];
        for (int p = 0; p < PARTITIONS; p++) {
            mustReach[p] = acked[p].get();
        }
        try (Admin admin = admin(); KafkaConsumer<String, String> c = consumer(null)) {
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                latest.put(new TopicPartition(TOPIC, p), OffsetSpec.latest());
            }
            Map<TopicPartition, Long> ends = new HashMap<>();
            admin.listOffsets(latest).all().get(60, TimeUnit.SECONDS).forEach((tp, r) -> ends.put(tp, r.offset()));
            c.assign(ends.keySet());
            c.seekToBeginning(ends.keySet());
            long[] last = new long[PARTITIONS];
            long[] lastOffset = new long[PARTITIONS];
            java.util.Arrays.fill(last, Long.MIN_VALUE);
            Map<TopicPartition, Long> positions = new HashMap<>();
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
            while (System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    int p = r.partition();
                    long seq = Long.parseLong(r.value().split(":", 3)[1]);
                    // Offsets of this topic are contiguous; a jump means retention trimmed what the reader was about
                    // to read and it restarted at the new log start: nothing to compare across it.
                    boolean contiguous = last[p] != Long.MIN_VALUE && r.offset() == lastOffset[p] + 1;
                    lastOffset[p] = r.offset();
                    if (contiguous && seq != last[p] + 1) {
                        fail("catch-up read of " + TOPIC + "-" + p + ": sequence " + seq + " after " + last[p]
                                + " at offset " + r.offset() + (seq <= last[p] ? " (duplicate or reordered)" : " (gap)"));
                    }
                    last[p] = seq;
                    positions.put(new TopicPartition(TOPIC, p), r.offset() + 1);
                }
                boolean done = ends.entrySet().stream()
                        .allMatch(e -> positions.getOrDefault(e.getKey(), 0L) >= e.getValue());
                if (done) {
                    break;
                }
            }
            for (int p = 0; p < PARTITIONS; p++) {
                if (last[p] < mustReach[p]) {
                    fail("catch-up read of " + TOPIC + "-" + p + " ended at sequence " + last[p] + " but " + mustReach[p]
                            + " had been acknowledged");
                }
            }
            catchUps.incrementAndGet();
        } catch (Exception e) {
            fail("catch-up read: " + e);
        }
    }

    /** A member of the churning group: polls and commits for 20-60 s, leaves, rejoins. */
    private void groupMember(long seed) {
        Random random = new Random(seed);
        while (running.get()) {
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20 + random.nextInt(41));
            try (KafkaConsumer<String, String> c = consumer("soak-group")) {
                c.subscribe(List.of(TOPIC));
                while (running.get() && System.nanoTime() < until) {
                    var records = c.poll(Duration.ofMillis(500));
                    if (records.isEmpty()) {
                        continue;
                    }
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (TopicPartition tp : records.partitions()) {
                        offsets.put(tp, new OffsetAndMetadata(records.records(tp).getLast().offset() + 1));
                    }
                    try {
                        c.commitSync(offsets, Duration.ofSeconds(30));
                        offsets.forEach((tp, o) -> committed.merge(tp, o.offset(), Math::max));
                    } catch (org.apache.kafka.clients.consumer.CommitFailedException
                             | org.apache.kafka.common.errors.RebalanceInProgressException
                             | org.apache.kafka.common.errors.RetriableException e) {
                        // the other member joined or left (the partitions moved), or the commit is to be retried:
                        // nothing was acknowledged
                    }
                }
            } catch (RuntimeException e) {
                fail("group member " + seed + ": " + e);
            }
            rejoins.incrementAndGet();
        }
    }

    /** The group's committed offsets are never behind a commit acknowledged before they were read. */
    private void checkCommittedOffsets() {
        Map<TopicPartition, Long> before = new HashMap<>(committed);
        try (Admin admin = admin()) {
            Map<TopicPartition, OffsetAndMetadata> stored = admin.listConsumerGroupOffsets("soak-group")
                    .partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
            before.forEach((tp, offset) -> {
                OffsetAndMetadata s = stored.get(tp);
                if (s == null || s.offset() < offset) {
                    fail("committed offset of " + tp + " is " + (s == null ? "missing" : s.offset()) + " after "
                            + offset + " was acknowledged");
                }
            });
        } catch (Exception e) {
            fail("reading the group's committed offsets: " + e);
        }
    }

    /** A topic's whole life: create, write 500 records, read them back, delete. */
    private void churnTopic() {
        String topic = "churn-" + topicsChurned.get();
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get(60, TimeUnit.SECONDS);
            try (KafkaProducer<String, String> p = producer()) {
                for (int i = 0; i < 500; i++) {
                    p.send(new ProducerRecord<>(topic, i % 2, null, "v" + i));
                }
                p.flush();
            }
            int read = 0;
            try (KafkaConsumer<String, String> c = consumer(null)) {
                List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
                c.assign(tps);
                c.seekToBeginning(tps);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (read < 500 && System.nanoTime() < deadline) {
                    read += c.poll(Duration.ofMillis(200)).count();
                }
            }
            if (read != 500) {
                fail(topic + ": read " + read + " of 500 records");
            }
            admin.deleteTopics(List.of(topic)).all().get(60, TimeUnit.SECONDS);
            topicsChurned.incrementAndGet();
        } catch (Exception e) {
            fail("topic churn " + topic + ": " + e);
        }
    }

    /** Each key's last value in the compacted topic is the last one acknowledged. */
    private void checkCompacted() {
        Map<String, Long> seen = new HashMap<>();
        long records = 0;
        try (KafkaConsumer<String, String> c = consumer(null)) {
            List<TopicPartition> tps = List.of(new TopicPartition(COMPACTED, 0), new TopicPartition(COMPACTED, 1));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> ends = c.endOffsets(tps);
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
            while (System.nanoTime() < deadline && tps.stream().anyMatch(tp -> c.position(tp) < ends.get(tp))) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    seen.put(r.key(), Long.parseLong(r.value().substring(r.value().indexOf('=') + 1)));
                    records++;
                }
            }
        }
        lastVersion.forEach((key, v) -> {
            if (!v.equals(seen.get(key))) {
                fail(COMPACTED + ": key " + key + " reads version " + seen.get(key) + ", last acknowledged " + v);
            }
        });
        System.out.printf("compacted topic: %d records read for %d keys%n", records, lastVersion.size());
    }

    /** minute, RSS MiB, threads, open files, cache MiB, manifest KiB, objects MiB. */
    private double[] sample(double minute) throws IOException {
        double rssMb = 0;
        double threads = 0;
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
            if (line.startsWith("VmRSS:")) {
                rssMb = Long.parseLong(line.replaceAll("\\D", "")) / 1024.0;
            } else if (line.startsWith("Threads:")) {
                threads = Long.parseLong(line.replaceAll("\\D", ""));
            }
        }
        double fds;
        try (Stream<Path> s = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            fds = s.count();
        }
        long[] sizes = objectBytes();
        return new double[] {minute, rssMb, threads, fds, cacheMb(), sizes[0] / 1024.0, sizes[1] / 1048576.0};
    }

    /**
     * Bytes of the manifest's objects and of all objects in the store's directory, counted while the shell deletes
     * objects by the thousand (manifest garbage collection, retention, compaction): whatever vanishes under the walk
     * is skipped, not an error.
     */
    private long[] objectBytes() throws IOException {
        long[] sizes = new long[2];
        Files.walkFileTree(objects, new java.nio.file.SimpleFileVisitor<>() {
            @Override
            public java.nio.file.FileVisitResult visitFile(Path file,
                                                           java.nio.file.attribute.BasicFileAttributes attrs) {
                if (attrs.isRegularFile()) {
                    sizes[1] += attrs.size();
                    if (objects.relativize(file).toString().contains("manifest")) {
                        sizes[0] += attrs.size();
                    }
                }
                return java.nio.file.FileVisitResult.CONTINUE;
            }

            @Override
            public java.nio.file.FileVisitResult visitFileFailed(Path file, IOException e) {
                return java.nio.file.FileVisitResult.CONTINUE; // deleted between listing and reading: gone
            }

            @Override
            public java.nio.file.FileVisitResult postVisitDirectory(Path dir, IOException e) {
                return java.nio.file.FileVisitResult.CONTINUE; // a directory deleted while listed
            }
        });
        return sizes;
    }

    /**
     * The direct memory the engine holds in its caches (log cache, block cache, read-ahead), from the shell's
     * Prometheus endpoint; NaN without one. Netty's pooled buffers bypass the JDK's accounting (the JVM's direct
     * buffer meter reads ~0), so RSS is the measure of the whole process.
     */
    private double cacheMb() {
        if (metricsUrl == null) {
            return Double.NaN;
        }
        try {
            String body = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(metricsUrl)).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            double bytes = 0;
            boolean found = false;
            for (String line : body.split("\n")) {
                if (line.startsWith("s3stream_log_cache_bytes") || line.startsWith("s3stream_block_cache_bytes")
                        || line.startsWith("s3stream_read_ahead_bytes")) {
                    bytes += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                    found = true;
                }
            }
            return found ? bytes / 1048576.0 : Double.NaN;
        } catch (IOException | InterruptedException | RuntimeException e) {
            return Double.NaN;
        }
    }

    /**
     * After warm-up (the first third of the run) the process must not grow: the largest value of the last third
     * against the largest of the second third, with an allowance per measure. A run shorter than
     * {@link #JUDGE_GROWTH_FROM} (the few minutes CI runs, to check correctness under churn) is mostly warm-up: its
     * growth is printed, not judged.
     */
    private void checkFlat(List<double[]> rows, boolean judge) {
        if (!judge) {
            System.out.println("growth not judged: a run shorter than " + JUDGE_GROWTH_FROM.toMinutes()
                    + " minutes is mostly warm-up");
        } else if (rows.size() < 9) {
            fail("too few samples (" + rows.size() + ") to judge growth: run for at least 2 minutes");
            return;
        }
        int third = rows.size() / 3;
        String[] names = {"minute", "RSS MiB", "threads", "open files", "cache MiB", "manifest KiB"};
        double[] ratio = {0, 1.15, 1.10, 1.15, 1.25, 1.5};
        double[] slack = {0, 64, 8, 32, 32, 256};
        for (int col = 1; col < names.length; col++) {
            double mid = max(rows.subList(third, 2 * third), col);
            double late = max(rows.subList(2 * third, rows.size()), col);
            if (Double.isNaN(mid) || Double.isNaN(late)) {
                continue;
            }
            boolean grew = judge && late > mid * ratio[col] + slack[col];
            System.out.printf("flat %s: second third max %.1f, last third max %.1f%s%n", names[col], mid, late,
                    grew ? "  GROWING" : "");
            if (grew) {
                fail(names[col] + " grew from " + mid + " to " + late + " after warm-up");
            }
        }
    }

    private static double max(List<double[]> rows, int col) {
        double m = Double.NaN;
        for (double[] r : rows) {
            if (!Double.isNaN(r[col])) {
                m = Double.isNaN(m) ? r[col] : Math.max(m, r[col]);
            }
        }
        return m;
    }
}
