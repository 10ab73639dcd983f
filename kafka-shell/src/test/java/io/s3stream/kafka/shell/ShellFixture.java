package io.s3stream.kafka.shell;

import io.s3stream.kafka.shell.config.ShellConfig;
import io.s3stream.testing.MemBackends;
import io.s3stream.testing.TempDirs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A kafka-shell on in-memory backends (WAL, object store, metadata), on an ephemeral port. {@link #restart()} closes
 * the broker cleanly and starts a new one on the same backends, as a process restart on the same data would.
 *
 * <p>Used either in try-with-resources or as a per-test extension: {@code @RegisterExtension final ShellFixture fx =
 * new ShellFixture();} starts a broker for each test and closes it after.
 */
final class ShellFixture implements AutoCloseable, AfterEachCallback {
    final String name = "ks-" + UUID.randomUUID();
    final Path dataDir;
    private final Map<String, String> extra;
    KafkaShell shell;

    ShellFixture() {
        this(Map.of());
    }

    ShellFixture(Map<String, String> extra) {
        this.extra = extra;
        dataDir = TempDirs.create("kafka-shell-test");
        try {
            shell = KafkaShell.start(config());
        } catch (RuntimeException | Error e) { // a refused configuration: nothing to close, the backends to clear
            discardBackends();
            throw e;
        }
    }

    ShellConfig config() {
        Map<String, String> m = new HashMap<>();
        m.put("listeners", "PLAINTEXT://127.0.0.1:" + (shell == null ? 0 : shell.port()));
        m.put("group.initial.rebalance.delay.ms", "0");
        m.put("group.min.session.timeout.ms", "1000");
        m.put("s3stream.data.dir", dataDir.toString());
        m.put("s3stream.wal", "mem://" + name + "-wal?capacity=64MiB");
        m.put("s3stream.object.store", "mem://" + name);
        m.put("s3stream.metadata", "mem://" + name);
        m.put("s3stream.log.cache.bytes", Long.toString(32L << 20));
        m.put("s3stream.block.cache.bytes", Long.toString(8L << 20));
        m.put("s3stream.upload.threshold.bytes", Long.toString(4L << 20));
        m.putAll(extra);
        return ShellConfig.of(m);
    }

    String bootstrap() {
        return shell.bootstrapServers();
    }

    void restart() {
        shell.close();
        shell = KafkaShell.start(config());
    }

    Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        return Admin.create(p);
    }

    KafkaProducer<String, String> producer(Map<String, Object> overrides) {
        Map<String, Object> p = new HashMap<>();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.putAll(overrides);
        return new KafkaProducer<>(p);
    }

    KafkaConsumer<String, String> consumer(String group, Map<String, Object> overrides) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.putAll(overrides);
        return new KafkaConsumer<>(p);
    }

    /** The Prometheus endpoint's text; the shell must have been started with {@code metrics.port}. */
    String scrapeMetrics() throws IOException {
        // HttpURLConnection: the tests compile inside kafka-shell's module, which does not read java.net.http.
        HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + shell.metricsPort() + "/metrics")
                .toURL().openConnection();
        try {
            assertThat(c.getResponseCode()).isEqualTo(200);
            assertThat(c.getContentType()).startsWith("text/plain");
            try (var in = c.getInputStream()) {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
        } finally {
            c.disconnect();
        }
    }

    /** The value of the first sample in {@code body} whose line starts with {@code prefix} (name and labels). */
    static double metric(String body, String prefix) {
        for (String line : body.split("\n")) {
            if (line.startsWith(prefix)) {
                return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        throw new AssertionError("no sample starting with " + prefix + " in:\n" + body);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        close();
    }

    @Override
    public void close() {
        shell.close();
        discardBackends();
    }

    private void discardBackends() {
        MemBackends.clearWal(name + "-wal");
        MemBackends.clearObjectStore(name);
        MemBackends.clearMetadata(name);
        TempDirs.deleteTreeUnchecked(dataDir);
    }
}
