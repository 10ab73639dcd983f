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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The binary distribution as an operator gets it: target/s3stream-kafka-shell-<version>.tar.gz (built by package,
 * before failsafe runs this) unpacked into an empty directory and started with its own bin/kafka-shell and
 * config/server.properties, with nothing but a JDK: a Java client produces and reads back, and SIGTERM stops it;
 * and the same distribution run with kafka-shell/Dockerfile's command.
 */
class DistributionIT {

    @Test
    void theUnpackedDistributionServesClientsAndStopsOnSigterm(@TempDir Path dir) throws Exception {
        Path home = unpack(dir);
        assertThat(home.resolve("bin/kafka-shell")).isExecutable();
        assertThat(home.resolve("config/server.properties")).isRegularFile();
        assertThat(home.resolve("LICENSE")).isRegularFile();
        assertThat(home.resolve("NOTICE")).isRegularFile();

        int port = ProcessBrokerTest.freePort();
        serveAndStop(dir, port, List.of(home.resolve("bin/kafka-shell").toString(),
                "--override", "listeners=PLAINTEXT://127.0.0.1:" + port,
                // a small WAL file: the default is a 512 MiB preallocated file
                "--override", "s3stream.wal=blockdev://" + home.toAbsolutePath() + "/data/wal.img?capacity=64MiB"));
        assertThat(home.resolve("data/objects")).as("s3stream.data.dir=data of config/server.properties").isDirectory();
    }

    /**
     * {@code bin/kafka-shell --train-aot} in the unpacked distribution: trains the JVM's ahead-of-time cache with a
     * broker it drives through real clients, leaves nothing else behind, and the next start uses the cache: under
     * {@code -XX:AOTMode=on} a cache the JVM cannot use stops it, and the class-loading log shows the broker's classes
     * loaded from the cache (without a cache at all the JVM would start, and the log would show the jars).
     */
    @Test
    void aTrainedAotCacheIsUsedByTheNextStart(@TempDir Path dir) throws Exception {
        Path home = unpack(dir);
        List<Path> before = listing(home);
        Path trainingLog = dir.resolve("training.log");
        ProcessBuilder pb = new ProcessBuilder(home.resolve("bin/kafka-shell").toString(), "--train-aot",
                "--megabytes", "24").redirectErrorStream(true).redirectOutput(trainingLog.toFile());
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().put("PATH", "/usr/bin:/bin");
        Process training = pb.start();
        assertThat(training.waitFor(5, TimeUnit.MINUTES)).as("training ended").isTrue();
        assertThat(training.exitValue()).as("training: %s", Files.readString(trainingLog)).isZero();
        Path cache = home.resolve("lib/kafka-shell.aot");
        assertThat(Files.readString(trainingLog)).contains("wrote " + cache);
        assertThat(Files.size(cache)).isGreaterThan(1 << 20);
        List<Path> after = new ArrayList<>(listing(home));
        after.remove(cache);
        assertThat(after).as("the training's broker data and the partial cache are gone").isEqualTo(before);

        int port = ProcessBrokerTest.freePort();
        Path classLoading = dir.resolve("class-load.log");
        serveAndStop(dir, port, Map.of("KAFKA_SHELL_JAVA_OPTS",
                "-XX:AOTMode=on -Xlog:class+load=info:file=" + classLoading), List.of(
                home.resolve("bin/kafka-shell").toString(),
                "--override", "listeners=PLAINTEXT://127.0.0.1:" + port,
                "--override", "s3stream.wal=blockdev://" + home.toAbsolutePath() + "/data/wal.img?capacity=64MiB"));
        assertThat(Files.readString(classLoading)).as("the broker's classes come from the cache")
                .contains("io.s3stream.kafka.shell.KafkaShell source: shared objects file")
                .contains("io.s3stream.internal.engine.StorageEngine source: shared objects file");

        // A jar replaced after the training: the launcher no longer gives the JVM that cache, which JDK 25.0.3 was
        // seen to serve stale classes from (benchmarks/README.md), and says why.
        Path jar;
        try (var jars = Files.list(home.resolve("lib"))) {
            jar = jars.filter(p -> p.getFileName().toString().startsWith("s3stream-kafka-shell-")).findFirst()
                    .orElseThrow();
        }
        Files.setLastModifiedTime(jar, java.nio.file.attribute.FileTime.fromMillis(
                Files.getLastModifiedTime(cache).toMillis() + 60_000));
        int second = ProcessBrokerTest.freePort();
        serveAndStop(dir, second, Map.of("KAFKA_SHELL_JAVA_OPTS", "-Xlog:class+load=info:file=" + classLoading),
                List.of(home.resolve("bin/kafka-shell").toString(),
                        "--override", "listeners=PLAINTEXT://127.0.0.1:" + second,
                        "--override", "s3stream.data.dir=" + dir.resolve("second"),
                        "--override", "s3stream.wal=blockdev://" + dir.resolve("second") + "/wal.img?capacity=64MiB"));
        assertThat(Files.readString(dir.resolve("shell.log"))).contains("not using the AOT cache " + cache + ": "
                + jar + " is newer");
        assertThat(Files.readString(classLoading)).as("the broker's classes come from the jars")
                .contains("io.s3stream.kafka.shell.KafkaShell source: file:")
                .doesNotContain("io.s3stream.kafka.shell.KafkaShell source: shared objects file");
    }

    /**
     * The image's command without Docker (none here): kafka-shell/Dockerfile's ENTRYPOINT and CMD, read from the
     * file, run against the unpacked distribution, with the image's paths mapped to this test's directories
     * ({@code /opt/kafka-shell}, the volume {@code /var/lib/kafka-shell}) and its port 9092 to a free one. Checks
     * that the command, the settings it overrides and the data directory the volume stands for work together.
     */
    @Test
    void theDockerfileCommandRunsTheDistribution(@TempDir Path dir) throws Exception {
        String dockerfile = Files.readString(Path.of("Dockerfile"));
        Path home = unpack(dir);
        Path volume = Files.createDirectory(dir.resolve("volume"));
        assertThat(dockerfile).contains("ADD s3stream-kafka-shell-${VERSION}.tar.gz /opt/")
                .contains("ln -s /opt/s3stream-kafka-shell-${VERSION} /opt/kafka-shell")
                .contains("VOLUME /var/lib/kafka-shell").contains("EXPOSE 9092");
        assertThat(home.getFileName().toString()).startsWith("s3stream-kafka-shell-");
        int port = ProcessBrokerTest.freePort();
        List<String> command = new ArrayList<>();
        for (String instruction : List.of("ENTRYPOINT", "CMD")) {
            for (String arg : jsonArray(dockerfile, instruction)) {
                command.add(arg.replace("/opt/kafka-shell", home.toAbsolutePath().toString())
                        .replace("/var/lib/kafka-shell", volume.toAbsolutePath().toString())
                        .replace("0.0.0.0:9092", "127.0.0.1:" + port)
                        .replace("localhost:9092", "127.0.0.1:" + port));
            }
        }
        assertThat(command).contains("s3stream.data.dir=" + volume.toAbsolutePath());
        List<Path> image = listing(home);
        command.addAll(List.of("--override", // a small WAL file, as above (the image keeps the 512 MiB default)
                "s3stream.wal=blockdev://" + volume.toAbsolutePath() + "/wal.img?capacity=64MiB"));
        serveAndStop(dir, port, command);
        assertThat(volume.resolve("objects")).as("the data of the image lives in its volume").isDirectory();
        assertThat(listing(home)).as("nothing written into the image (read-only to the user it runs as)")
                .isEqualTo(image);
    }

    /** The arguments of a Dockerfile instruction in JSON (exec) form: {@code CMD ["a", "b"]}. */
    private static List<String> jsonArray(String dockerfile, String instruction) {
        Matcher m = Pattern.compile("(?m)^" + instruction + " \\[(.*)]$").matcher(dockerfile);
        assertThat(m.find()).as("%s in exec form", instruction).isTrue();
        List<String> args = new ArrayList<>();
        Matcher arg = Pattern.compile("\"([^\"]*)\"").matcher(m.group(1));
        while (arg.find()) {
            args.add(arg.group(1));
        }
        return args;
    }

    private static List<Path> listing(Path dir) throws Exception {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.sorted().toList();
        }
    }

    /** Unpacks target/s3stream-kafka-shell-<version>.tar.gz into {@code dir}; returns its top directory. */
    private static Path unpack(Path dir) throws Exception {
        Path tarball;
        try (Stream<Path> files = Files.list(Path.of("target"))) {
            tarball = files.filter(p -> p.getFileName().toString().matches("s3stream-kafka-shell-.*\\.tar\\.gz"))
                    .findFirst().orElseThrow(() -> new AssertionError("no distribution in target/: run package first"));
        }
        Path into = Files.createDirectory(dir.resolve("unpacked"));
        Process untar = new ProcessBuilder("tar", "xzf", tarball.toAbsolutePath().toString(), "-C", into.toString())
                .inheritIO().start();
        assertThat(untar.waitFor()).isZero();
        try (Stream<Path> entries = Files.list(into)) {
            return entries.findFirst().orElseThrow();
        }
    }

    /**
     * Runs {@code command} with nothing but a JDK, waits until it listens on {@code port}, produces ten records with
     * a Java client and reads them back, then stops it with SIGTERM and checks that it shut down cleanly.
     */
    private static void serveAndStop(Path dir, int port, List<String> command) throws Exception {
        serveAndStop(dir, port, Map.of(), command);
    }

    private static void serveAndStop(Path dir, int port, Map<String, String> env, List<String> command)
            throws Exception {
        Path log = dir.resolve("shell.log");
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().put("PATH", "/usr/bin:/bin"); // nothing of this build on the path: only the JDK it is given
        pb.environment().putAll(env);
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
        } finally {
            shell.destroy(); // SIGTERM: a clean shutdown
            assertThat(shell.waitFor(60, TimeUnit.SECONDS)).as("stopped on SIGTERM: %s", Files.readString(log))
                    .isTrue();
        }
        assertThat(Files.readString(log)).contains("shutting down");
    }
}
