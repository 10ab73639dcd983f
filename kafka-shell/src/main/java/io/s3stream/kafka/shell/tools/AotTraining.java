package io.s3stream.kafka.shell.tools;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Trains kafka-shell's ahead-of-time cache (JDK 25, JEP 483: classes loaded and linked ahead of time): runs a broker
 * under {@code -XX:AOTCacheOutput} on a temporary data directory, drives it with real Kafka clients through what a
 * broker does all day (produce unthrottled and at a steady rate, on one and on sixteen partitions; a transactional
 * producer; consumer groups that commit; a catch-up read of data that only the object store still holds, read twice
 * so the second read hits the block cache), then stops it with SIGTERM, which makes the JVM write the cache. A broker
 * started with {@code -XX:AOTCache} finds the classes of those paths already loaded and linked and listens in about
 * half the time. With {@code --profiles} the cache also holds the JIT's method profiles (JEP 515), so the hot methods
 * are compiled at once: the first minutes of traffic cost half the CPU, but the steady state measured here cost more
 * (benchmarks/README.md, "A faster start from an AOT cache"), so profiles are not the default.
 *
 * <p>{@code bin/kafka-shell --train-aot} runs this with the broker command it would itself run (the same JVM options:
 * a cache is refused by a JVM whose heap layout differs, for instance under another collector):
 * <pre>
 * AotTraining &lt;cache file&gt; [--megabytes N] [--profiles] --
 *     &lt;java&gt; &lt;jvm options...&gt; -cp &lt;class path&gt; io.s3stream.kafka.shell.KafkaShell
 * </pre>
 * The broker gets {@code listeners=PLAINTEXT://127.0.0.1:0} and a data directory of its own, deleted afterwards: the
 * training never touches a real WAL or store. The cache is written next to its final name and moved there only once
 * the JVM has written it whole, so a failed training leaves any previous cache in place. Exit status 0 on success,
 * 1 when the broker or a client failed (the broker's last lines are printed), 2 on bad arguments.
 */
public final class AotTraining {
    private static final Pattern LISTENING = Pattern.compile("kafka-shell: listening on ([^ :]+):(\\d+)");
    private static final int RECORD_BYTES = 1024;
    private static final Duration STEP_TIMEOUT = Duration.ofMinutes(3);
    // kafka-clients logs through slf4j-jdk14 into java.util.logging: keep the training's output to its own lines
    private static final Logger KAFKA_LOGS = Logger.getLogger("org.apache.kafka");

    private final String bootstrap;
    private final long megabytes;
    private final byte[] value = new byte[RECORD_BYTES];

    private AotTraining(String bootstrap, long megabytes) {
        this.bootstrap = bootstrap;
        this.megabytes = megabytes;
        new Random(17).nextBytes(value);
    }

    public static void main(String[] args) throws Exception {
        KAFKA_LOGS.setLevel(Level.WARNING);
        int dashes = List.of(args).indexOf("--");
        if (dashes < 1 || dashes == args.length - 1) {
            System.err.println("usage: AotTraining <cache file> [--megabytes N] [--profiles] -- <java> "
                    + "<jvm options...> -cp <class path> io.s3stream.kafka.shell.KafkaShell");
            System.exit(2);
        }
        Path cache = Path.of(args[0]).toAbsolutePath();
        long megabytes = 256;
        boolean profiles = false;
        for (int i = 1; i < dashes; i++) {
            if (args[i].equals("--megabytes") && i + 1 < dashes) {
                megabytes = parsePositive(args[++i]);
            } else if (args[i].equals("--profiles")) {
                profiles = true;
            } else {
                System.err.println("kafka-shell AOT training: unknown argument '" + args[i] + "'");
                System.exit(2);
            }
        }
        List<String> broker = List.of(args).subList(dashes + 1, args.length);
        System.exit(train(cache, megabytes, profiles, broker) ? 0 : 1);
    }

    private static long parsePositive(String s) {
        try {
            long v = Long.parseLong(s);
            if (v > 0) {
                return v;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        System.err.println("kafka-shell AOT training: --megabytes needs a positive number, was '" + s + "'");
        System.exit(2);
        return 0;
    }

    /**
     * Trains {@code cache} with the broker that {@code brokerCommand} starts, with the JIT's method profiles in it or
     * not; false (with the reason printed) on failure.
     */
    static boolean train(Path cache, long megabytes, boolean profiles, List<String> brokerCommand) throws Exception {
        Files.createDirectories(cache.getParent());
        Path data = Files.createTempDirectory(cache.getParent(), ".aot-training-");
        Path partial = cache.resolveSibling(cache.getFileName() + ".partial");
        Files.deleteIfExists(partial);
        List<String> command = new ArrayList<>(brokerCommand);
        // JVM options go before the main class, which is the command's last element. Method profiles (JEP 515) only
        // when asked for: they halve the CPU of the first minutes, but a broker compiled from the training's profiles
        // kept recompiling and used 1.36x the CPU of one without a cache at a steady 10,000 rec/s
        // (benchmarks/README.md, "A faster start from an AOT cache").
        command.addAll(command.size() - 1, List.of("-XX:AOTCacheOutput=" + partial,
                "-XX:+UnlockDiagnosticVMOptions", "-XX:" + (profiles ? "+" : "-") + "AOTRecordTraining"));
        command.addAll(List.of("--override", "listeners=PLAINTEXT://127.0.0.1:0",
                "--override", "s3stream.data.dir=" + data));
        long started = System.nanoTime();
        Process broker = new ProcessBuilder(command).redirectErrorStream(true).start();
        BrokerOutput output = new BrokerOutput(broker);
        try {
            String bootstrap = output.awaitListening(Duration.ofMinutes(2));
            System.err.println("kafka-shell AOT training: broker up on " + bootstrap + ", driving it with "
                    + megabytes + " MB of records");
            new AotTraining(bootstrap, megabytes).run();
            // SIGTERM: the shell shuts down cleanly and the JVM writes the cache on exit, in a child JVM that writes to
            // the same output. Through the ProcessHandle: Process.destroy() also closes our end of that pipe, and a
            // write into a closed pipe kills the child before it has written the cache.
            broker.toHandle().destroy();
            if (!broker.waitFor(5, TimeUnit.MINUTES)) {
                throw new TimeoutException("the broker did not exit within 5 minutes of SIGTERM");
            }
            output.join();
            if (broker.exitValue() != 0 && broker.exitValue() != 128 + 15) { // a JVM ended by SIGTERM exits with 143
                throw new IOException("the broker exited with status " + broker.exitValue());
            }
            if (!Files.isRegularFile(partial) || Files.size(partial) == 0) {
                throw new IOException("the JVM wrote no AOT cache to " + partial);
            }
            Files.move(partial, cache, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            System.err.printf("kafka-shell AOT training: wrote %s (%.1f MB) in %d s; bin/kafka-shell uses it from its "
                    + "next start%n", cache, Files.size(cache) / 1e6,
                    TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started));
            return true;
        } catch (Exception e) {
            System.err.println("kafka-shell AOT training failed: " + e);
            System.err.println("the broker's last lines:");
            output.lastLines().forEach(line -> System.err.println("  " + line));
            return false;
        } finally {
            broker.destroyForcibly();
            Files.deleteIfExists(partial);
            Files.deleteIfExists(partial.resolveSibling(partial.getFileName() + ".config")); // the JVM's, if it stopped
            deleteRecursively(data);
        }
    }

    private void run() throws Exception {
        String one = "aot-training-1";
        String sixteen = "aot-training-16";
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(one, 1, (short) 1), new NewTopic(sixteen, 16, (short) 1)))
                    .all().get(STEP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            admin.describeCluster().nodes().get(STEP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        }
        long records = megabytes * 1_000_000 / RECORD_BYTES;
        // Most of it into one partition, unthrottled: more than the default log cache (128 MiB) holds, so the
        // beginning is read back from objects below.
        produce(one, records * 3 / 4, 0);
        produce(sixteen, records / 4, 0);
        produce(one, 20_000, 5_000); // a steady rate: small batches, the latency path
        transactions(one);
        consume(one, "aot-training-a");
        consume(sixteen, "aot-training-a");
        consume(one, "aot-training-b"); // the same data again: block-cache hits
    }

    private Map<String, Object> producerSettings() {
        Map<String, Object> settings = new HashMap<>();
        settings.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        settings.put(ProducerConfig.ACKS_CONFIG, "all");
        settings.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        settings.put(ProducerConfig.BATCH_SIZE_CONFIG, 131_072);
        settings.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        settings.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return settings;
    }

    /** Sends {@code count} records to {@code topic}, at {@code perSecond} (0: as fast as the broker takes them). */
    private void produce(String topic, long count, int perSecond) throws Exception {
        ArrayDeque<CompletableFuture<Void>> pending = new ArrayDeque<>();
        long start = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerSettings())) {
            for (long i = 0; i < count; i++) {
                if (perSecond > 0) {
                    long due = start + i * 1_000_000_000L / perSecond;
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        TimeUnit.NANOSECONDS.sleep(wait);
                    }
                }
                CompletableFuture<Void> sent = new CompletableFuture<>();
                producer.send(new ProducerRecord<>(topic, value), (metadata, error) -> {
                    if (error != null) {
                        sent.completeExceptionally(error);
                    } else {
                        sent.complete(null);
                    }
                });
                pending.add(sent);
                while (pending.size() > 10_000 || (!pending.isEmpty() && pending.peek().isDone())) {
                    pending.poll().get(STEP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                }
            }
            producer.flush();
            for (CompletableFuture<Void> f : pending) {
                f.get(STEP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            }
        }
    }

    /** A few committed and one aborted transaction: the coordinator, markers and the read-committed fetch. */
    private void transactions(String topic) throws Exception {
        Map<String, Object> settings = producerSettings();
        settings.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "aot-training");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(settings)) {
            producer.initTransactions();
            for (int t = 0; t < 20; t++) {
                producer.beginTransaction();
                for (int i = 0; i < 50; i++) {
                    producer.send(new ProducerRecord<>(topic, value));
                }
                if (t == 10) {
                    producer.abortTransaction();
                } else {
                    producer.commitTransaction();
                }
            }
        }
    }

    /** Reads {@code topic} from the beginning to its end in group {@code group}, committing after each poll. */
    private void consume(String topic, String group) throws Exception {
        Map<String, Object> settings = new HashMap<>();
        settings.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        settings.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        settings.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        settings.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        settings.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        settings.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        settings.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings)) {
            consumer.subscribe(List.of(topic));
            Map<TopicPartition, Long> ends = null;
            long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
            while (ends == null || !reached(consumer, ends)) {
                if (System.nanoTime() - deadline > 0) {
                    throw new TimeoutException("reading " + topic + " in group " + group + " did not reach its end "
                            + ends + " within " + STEP_TIMEOUT);
                }
                ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(500));
                if (!polled.isEmpty()) {
                    consumer.commitSync();
                }
                if (ends == null && !consumer.assignment().isEmpty()) {
                    ends = consumer.endOffsets(consumer.assignment());
                }
            }
        }
    }

    private static boolean reached(KafkaConsumer<?, ?> consumer, Map<TopicPartition, Long> ends) {
        for (Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
            if (consumer.position(end.getKey()) < end.getValue()) {
                return false;
            }
        }
        return true;
    }

    private static void deleteRecursively(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** Reads the broker's output (so it never blocks on a full pipe), finds its port, keeps its last lines. */
    private static final class BrokerOutput extends Thread {
        private final Process broker;
        private final ArrayDeque<String> last = new ArrayDeque<>();
        private final CompletableFuture<String> listening = new CompletableFuture<>();

        BrokerOutput(Process broker) {
            super("aot-training-broker-output");
            this.broker = broker;
            setDaemon(true);
            start();
        }

        @Override
        public void run() {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(broker.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    synchronized (last) {
                        last.addLast(line);
                        if (last.size() > 40) {
                            last.removeFirst();
                        }
                    }
                    Matcher m = LISTENING.matcher(line);
                    if (m.find()) {
                        listening.complete(m.group(1) + ":" + m.group(2));
                    }
                }
            } catch (IOException ignored) {
                // the broker is gone: awaitListening() and the exit status report it
            }
            listening.completeExceptionally(new IOException("the broker exited before it listened"));
        }

        String awaitListening(Duration timeout) throws Exception {
            try {
                return listening.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (ExecutionException e) {
                throw e.getCause() instanceof Exception cause ? cause : e;
            }
        }

        List<String> lastLines() {
            synchronized (last) {
                return List.copyOf(last);
            }
        }
    }
}
