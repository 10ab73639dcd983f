package io.s3stream.kafka.shell;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
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
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** kafka-shell as a separate JVM process: the Java clients against it, SIGTERM, and SIGKILL during production. */
@Timeout(120)
class ProcessBrokerTest {

    static final class Broker implements AutoCloseable {
        final Process process;
        final int port;
        final Path log;

        Broker(Path dataDir, int port, String... extra) throws IOException, InterruptedException {
            this.port = port;
            this.log = dataDir.resolveSibling(dataDir.getFileName() + "-broker-" + System.nanoTime() + ".log");
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-XX:MaxDirectMemorySize=256m",
                    "-cp", System.getProperty("java.class.path"), KafkaShell.class.getName(),
                    "--override", "listeners=PLAINTEXT://127.0.0.1:" + port,
                    "--override", "s3stream.data.dir=" + dataDir,
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
                    throw new IllegalStateException("broker exited: " + Files.readString(log));
                }
                Thread.sleep(100);
            }
            throw new IllegalStateException("broker did not start: " + Files.readString(log));
        }

        String bootstrap() {
            return "127.0.0.1:" + port;
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
            while (got.size() < expected && System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(got::add);
            }
        }
        return got;
    }

    @Test
    void javaClientsAgainstASeparateProcessAndCleanShutdown(@TempDir Path tmp) throws Exception {
        // Metadata and WAL are in-memory until the manifest and wal-blockdev land; objects go to file://.
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

    /**
     * SIGKILL during acks=all production loses no acknowledged record. Needs a WAL and metadata that survive the
     * process: enable when wal-blockdev (default WAL {@code blockdev://<dataDir>/wal.img}) and the durable manifest are
     * dependencies of kafka-shell. Today's fallback WAL is in memory, so this test would fail by design.
     */
    @Test
    void sigkillDuringAcksAllLosesNoAcknowledgedRecord(@TempDir Path tmp) throws Exception {
        Path data = tmp.resolve("data");
        int port = freePort();
        Set<String> acknowledged = java.util.concurrent.ConcurrentHashMap.newKeySet();
        Broker broker = new Broker(data, port);
        ConcurrentLinkedQueue<Future<RecordMetadata>> inFlight = new ConcurrentLinkedQueue<>();
        try (KafkaProducer<String, String> p = producer(broker.bootstrap(), Map.of(
                ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false",
                ProducerConfig.RETRIES_CONFIG, Integer.MAX_VALUE, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000,
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1))) {
            Thread writer = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 20_000 && !Thread.currentThread().isInterrupted(); i++) {
                    String v = "r" + i;
                    inFlight.add(p.send(new ProducerRecord<>("crash", v), (m, e) -> {
                        if (e == null) {
                            acknowledged.add(v);
                        }
                    }));
                }
            });
            Thread.sleep(1500);
            broker.process.destroyForcibly(); // SIGKILL
            broker.process.waitFor();
            broker = new Broker(data, port);
            writer.join();
            p.flush();
        } finally {
            broker.close();
        }
        try (Broker again = new Broker(data, port)) {
            Set<String> read = new HashSet<>();
            readAll(again.bootstrap(), "crash", acknowledged.size()).forEach(r -> read.add(r.value()));
            assertThat(read).containsAll(acknowledged);
        }
    }
}
