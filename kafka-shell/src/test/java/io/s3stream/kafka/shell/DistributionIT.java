package io.s3stream.kafka.shell;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The binary distribution as an operator gets it: target/s3stream-kafka-shell-<version>.tar.gz (built by package,
 * before failsafe runs this) unpacked into an empty directory and started with its own bin/kafka-shell and
 * config/server.properties, with nothing but a JDK: a Java client produces and reads back, and SIGTERM stops it.
 */
class DistributionIT {

    @Test
    void theUnpackedDistributionServesClientsAndStopsOnSigterm(@TempDir Path dir) throws Exception {
        Path tarball;
        try (Stream<Path> files = Files.list(Path.of("target"))) {
            tarball = files.filter(p -> p.getFileName().toString().matches("s3stream-kafka-shell-.*\\.tar\\.gz"))
                    .findFirst().orElseThrow(() -> new AssertionError("no distribution in target/: run package first"));
        }
        Process untar = new ProcessBuilder("tar", "xzf", tarball.toAbsolutePath().toString(), "-C", dir.toString())
                .inheritIO().start();
        assertThat(untar.waitFor()).isZero();
        Path home;
        try (Stream<Path> entries = Files.list(dir)) {
            home = entries.findFirst().orElseThrow();
        }
        assertThat(home.resolve("bin/kafka-shell")).isExecutable();
        assertThat(home.resolve("config/server.properties")).isRegularFile();
        assertThat(home.resolve("LICENSE")).isRegularFile();
        assertThat(home.resolve("NOTICE")).isRegularFile();

        int port = ProcessBrokerTest.freePort();
        Path log = dir.resolve("shell.log");
        ProcessBuilder pb = new ProcessBuilder(home.resolve("bin/kafka-shell").toString(),
                "--override", "listeners=PLAINTEXT://127.0.0.1:" + port,
                // a small WAL file: the default is a 512 MiB preallocated file
                "--override", "s3stream.wal=blockdev://" + home.toAbsolutePath() + "/data/wal.img?capacity=64MiB")
                .redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().put("PATH", "/usr/bin:/bin"); // nothing of this build on the path: only the JDK it is given
        Process shell = pb.start();
        try {
            long deadline = System.currentTimeMillis() + 60_000;
            while (!Files.readString(log).contains("listening on") && System.currentTimeMillis() < deadline) {
                assertThat(shell.isAlive()).as("the shell exited: %s", Files.readString(log)).isTrue();
                Thread.sleep(100);
            }
            assertThat(Files.readString(log)).contains("listening on 127.0.0.1:" + port);
            String bootstrap = "127.0.0.1:" + port;
            try (KafkaProducer<String, String> p = ProcessBrokerTest.producer(bootstrap, Map.of())) {
                for (int i = 0; i < 10; i++) {
                    p.send(new ProducerRecord<>("dist", "k" + i, "v" + i)).get(30, TimeUnit.SECONDS);
                }
            }
            List<String> read = new ArrayList<>();
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(
                    ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                    ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                    ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()))) {
                c.assign(List.of(new TopicPartition("dist", 0)));
                c.seekToBeginning(c.assignment());
                long until = System.currentTimeMillis() + 30_000;
                while (read.size() < 10 && System.currentTimeMillis() < until) {
                    c.poll(Duration.ofMillis(200)).forEach(r -> read.add(r.value()));
                }
            }
            assertThat(read).containsExactly("v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9");
            assertThat(home.resolve("data/objects")).as("s3stream.data.dir=data of config/server.properties").isDirectory();
        } finally {
            shell.destroy(); // SIGTERM: a clean shutdown
            assertThat(shell.waitFor(60, TimeUnit.SECONDS)).as("stopped on SIGTERM: %s", Files.readString(log))
                    .isTrue();
        }
        assertThat(Files.readString(log)).contains("shutting down");
    }
}
