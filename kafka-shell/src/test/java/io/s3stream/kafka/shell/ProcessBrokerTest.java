package io.s3stream.kafka.shell;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** kafka-shell as a separate JVM process: the Java clients against it, SIGTERM, and SIGKILL during production. */
@Timeout(120)
class ProcessBrokerTest {

    static final class Broker implements AutoCloseable {
        final Process process;
        final String host;
        final int port;
        final Path log;

        Broker(Path dataDir, int port, String... extra) throws IOException, InterruptedException {
            this(dataDir, "127.0.0.1", port, List.of(), extra);
        }

        /** A broker listening on {@code host}, its command prefixed by {@code launcher} (e.g. ip netns exec NS). */
        Broker(Path dataDir, String host, int port, List<String> launcher, String... extra)
                throws IOException, InterruptedException {
            this.host = host;
            this.port = port;
            this.log = dataDir.resolveSibling(dataDir.getFileName() + "-broker-" + System.nanoTime() + ".log");
            List<String> cmd = new ArrayList<>(launcher);
            cmd.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-XX:MaxDirectMemorySize=256m",
                    "-cp", System.getProperty("java.class.path"), KafkaShell.class.getName(),
                    "--override", "listeners=PLAINTEXT://" + host + ":" + port,
                    "--override", "s3stream.data.dir=" + dataDir,
                    // The default WAL kind (a preallocated file), sized for this test's 32 MiB log cache rather than
                    // the 512 MiB default, so each test does not write half a gigabyte of zeros first.
                    "--override", "s3stream.wal=blockdev://" + dataDir.toAbsolutePath() + "/wal.img?capacity=64MiB",
                    "--override", "s3stream.log.cache.bytes=" + (32L << 20),
                    "--override", "s3stream.block.cache.bytes=" + (8L << 20),
                    "--override", "s3stream.upload.threshold.bytes=" + (4L << 20),
                    "--override", "group.initial.rebalance.delay.ms=0"));
            for (String e : extra) {
                cmd.add("--override");
                cmd.add(e);
            }
            process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            long deadline = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < deadline) {
                if (Files.exists(log) && Files.readString(log).contains("listening on")) {
                    return;
                }
                if (!process.isAlive()) {
                    throw new Exited(process.exitValue(), Files.readString(log));
                }
                Thread.sleep(100);
            }
            throw new IllegalStateException("broker did not start: " + Files.readString(log));
        }

        /** The broker process ended before it listened; {@code status} is its exit status. */
        static final class Exited extends IllegalStateException {
            private static final long serialVersionUID = 1L;
            final int status;

            Exited(int status, String log) {
                super("broker exited with status " + status + ": " + log);
                this.status = status;
            }
        }

        String bootstrap() {
            return host + ":" + port;
        }

        @Override
        public void close() {
            process.destroy(); // SIGTERM
            try {
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static KafkaProducer<String, String> producer(String bootstrap, Map<String, Object> overrides) {
        Map<String, Object> p = new HashMap<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName(),
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName()));
        p.putAll(overrides);
        return new KafkaProducer<>(p);
    }

    static List<ConsumerRecord<String, String>> readAll(String bootstrap, String topic, int expected) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ConsumerConfig.GROUP_ID_CONFIG, "reader-" + System.nanoTime(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()))) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            // Until the end of every partition: a count alone stops early when retries stored duplicates.
            while (System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(got::add);
                if (got.size() >= expected && !c.assignment().isEmpty()) {
                    Map<org.apache.kafka.common.TopicPartition, Long> ends = c.endOffsets(c.assignment());
                    if (ends.entrySet().stream().allMatch(e -> c.position(e.getKey()) >= e.getValue())) {
                        break;
                    }
                }
            }
        }
        return got;
    }

    @Test
    void javaClientsAgainstASeparateProcessAndCleanShutdown(@TempDir Path tmp) throws Exception {
        // The embedded default: a preallocated WAL file, the manifest and objects under file://.
        try (Broker broker = new Broker(tmp.resolve("data"), freePort())) {
            try (KafkaProducer<String, String> p = producer(broker.bootstrap(), Map.of())) {
                for (int i = 0; i < 500; i++) {
                    p.send(new ProducerRecord<>("proc", "k" + i, "v" + i));
                }
                p.flush();
            }
            List<ConsumerRecord<String, String>> got = readAll(broker.bootstrap(), "proc", 500);
            assertThat(got).hasSize(500);
            assertThat(got.getLast().value()).isEqualTo("v499");
            broker.process.destroy();
            assertThat(broker.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(Files.readString(broker.log)).contains("shutting down (uploading the log cache)");
            try (var objects = Files.walk(tmp.resolve("data").resolve("objects"))) {
                assertThat(objects.filter(Files::isRegularFile).count()).as("the log cache was uploaded on SIGTERM").isPositive();
            }
        }
    }

    /** SIGKILL during acks=all production, {@value #KILLS} times: no acknowledged record is lost. */
    @Test
    void sigkillDuringAcksAllLosesNoAcknowledgedRecord(@TempDir Path tmp) throws Exception {
        Path data = tmp.resolve("data");
        int port = freePort();
        Set<String> acknowledged = java.util.concurrent.ConcurrentHashMap.newKeySet();
        Broker broker = new Broker(data, port);
        try (KafkaProducer<String, String> p = producer(broker.bootstrap(), Map.of(
                ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false",
                ProducerConfig.RETRIES_CONFIG, Integer.MAX_VALUE, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000,
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1))) {
            java.util.concurrent.atomic.AtomicInteger sent = new java.util.concurrent.atomic.AtomicInteger();
            Thread writer = pacedWriter(p, "crash", "r", sent, (v, e) -> {
                if (e == null) {
                    acknowledged.add(v);
                }
            });
            broker = killAndRestart(broker, data, port, sent::get);
            writer.join();
            p.flush();
        } finally {
            broker.close();
        }
        assertThat(acknowledged).hasSizeGreaterThan(1000);
        try (Broker again = new Broker(data, port)) {
            Set<String> read = new HashSet<>();
            readAll(again.bootstrap(), "crash", acknowledged.size()).forEach(r -> read.add(r.value()));
            assertThat(read).containsAll(acknowledged);
        }
    }

    static final int KILLS = 3;

    /** Records per test, sent at about {@link #RATE} per second so that the kills land mid-stream. */
    static final int RECORDS = 24_000;
    static final int RATE = 4_000;

    /** Sends {@link #RECORDS} values {@code prefix + i}, paced; {@code sent} counts them. */
    static Thread pacedWriter(KafkaProducer<String, String> p, String topic, String prefix,
                              java.util.concurrent.atomic.AtomicInteger sent,
                              java.util.function.BiConsumer<String, Exception> done) {
        return Thread.ofPlatform().start(() -> {
            long start = System.nanoTime();
            for (int i = 0; i < RECORDS; i++) {
                String v = prefix + i;
                p.send(new ProducerRecord<>(topic, v), (m, e) -> done.accept(v, e));
                sent.incrementAndGet();
                long due = start + i * 1_000_000_000L / RATE;
                long wait = due - System.nanoTime();
                if (wait > 1_000_000) {
                    java.util.concurrent.locks.LockSupport.parkNanos(wait);
                }
            }
        });
    }

    /** SIGKILLs the broker {@link #KILLS} times, evenly spread over the records sent, restarting it each time. */
    private static Broker killAndRestart(Broker broker, Path data, int port, java.util.function.IntSupplier sent)
            throws Exception {
        for (int k = 0; k < KILLS; k++) {
            int at = (k + 1) * RECORDS / (KILLS + 1);
            long deadline = System.currentTimeMillis() + 30_000;
            while (sent.getAsInt() < at && System.currentTimeMillis() < deadline) {
                Thread.sleep(5);
            }
            broker.process.destroyForcibly(); // SIGKILL
            broker.process.waitFor();
            broker = new Broker(data, port);
        }
        return broker;
    }

    /**
     * The Java client's default producer (idempotent, acks=all, five requests in flight) across SIGKILLs: batches
     * that were durable but unacknowledged at the kill are retried after the restart and must not be stored twice;
     * nothing may be missing. Read back, the partition holds exactly v0..v(n-1) in order.
     */
    @Test
    void idempotentProducerAcrossSigkillsHasNoDuplicatesAndNoGaps(@TempDir Path tmp) throws Exception {
        Path data = tmp.resolve("data");
        int port = freePort();
        int n = RECORDS;
        java.util.concurrent.atomic.AtomicInteger acked = new java.util.concurrent.atomic.AtomicInteger();
        ConcurrentLinkedQueue<Exception> failures = new ConcurrentLinkedQueue<>();
        Broker broker = new Broker(data, port, "num.partitions=1");
        try (KafkaProducer<String, String> p = producer(broker.bootstrap(), Map.of(
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000, ProducerConfig.LINGER_MS_CONFIG, 2))) {
            java.util.concurrent.atomic.AtomicInteger sent = new java.util.concurrent.atomic.AtomicInteger();
            Thread writer = pacedWriter(p, "idem", "v", sent, (v, e) -> {
                if (e == null) {
                    acked.incrementAndGet();
                } else {
                    failures.add(e);
                }
            });
            broker = killAndRestart(broker, data, port, sent::get);
            writer.join();
            p.flush();

        } finally {
            broker.close();
        }
        assertThat(failures).isEmpty();
        assertThat(acked.get()).isEqualTo(n);
        // How often a kill hit a batch that was durable but not yet acknowledged (its retry is then deduplicated):
        // reported, not asserted, since it depends on timing. ProducerStateTest covers that path deterministically.
        long dedups = 0;
        try (var logs = Files.list(tmp)) {
            for (Path l : logs.filter(f -> f.getFileName().toString().contains("-broker-")).toList()) {
                dedups += Files.readAllLines(l).stream().filter(x -> x.contains("duplicate batch of producer")).count();
            }
        }
        System.out.println("idempotent SIGKILL test: " + dedups + " retried batch(es) deduplicated after restarts");
        try (Broker again = new Broker(data, port)) {
            List<String> values = new ArrayList<>();
            readAll(again.bootstrap(), "idem", n).forEach(r -> values.add(r.value()));
            List<String> expected = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                expected.add("v" + i);
            }
            assertThat(values).as("no duplicates, no gaps, in order").isEqualTo(expected);
        }
    }
}
