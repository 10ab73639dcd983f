package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.s3stream.kafka.shell.ShellFixture.metric;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Prometheus endpoint ({@code metrics.port}) scraped over HTTP after real clients produced and consumed: broker
 * metrics per topic and per API, the engine's counters and the JVM's; and every query of the Grafana dashboard in
 * the repository names a metric the endpoint serves.
 */
@Timeout(60)
class MetricsEndpointTest {
    @RegisterExtension
    final ShellFixture fx = new ShellFixture(Map.of("metrics.port", "0"));

    @Test
    void brokerEngineAndJvmMetricsAreServed() throws Exception {
        assertThat(fx.shell.metricsPort()).isPositive();
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("metered", 1, (short) 1))).all().get();
        }
        try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
            for (int i = 0; i < 50; i++) {
                p.send(new ProducerRecord<>("metered", 0, null, "v" + i)).get();
            }
        }
        try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of())) {
            TopicPartition tp = new TopicPartition("metered", 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            int read = 0;
            long deadline = System.currentTimeMillis() + 10_000;
            while (read < 50 && System.currentTimeMillis() < deadline) {
                read += c.poll(Duration.ofMillis(100)).count();
            }
            assertThat(read).isEqualTo(50);
            // The consumer's connection (at least) is open while it lives.
            assertThat(metric(fx.scrapeMetrics(), "kafka_server_connections{node_id=\"0\"}")).isPositive();
        }
        Thread.sleep(200); // the engine's snapshot is cached for 100 ms
        String body = fx.scrapeMetrics();
        assertThat(metric(body, "kafka_server_messages_in_total{node_id=\"0\",topic=\"metered\"}")).isEqualTo(50);
        assertThat(metric(body, "kafka_server_bytes_in_bytes_total{node_id=\"0\",topic=\"metered\"}")).isPositive();
        assertThat(metric(body, "kafka_server_bytes_out_bytes_total{node_id=\"0\",topic=\"metered\"}")).isPositive();
        assertThat(metric(body, "kafka_request_latency_seconds_count{api=\"Produce\",node_id=\"0\"}")).isEqualTo(50);
        assertThat(body).contains("kafka_request_latency_seconds_bucket{api=\"Fetch\"");
        assertThat(metric(body, "s3stream_appends_batches_total{node_id=\"0\"}")).isGreaterThanOrEqualTo(50);
        assertThat(metric(body, "s3stream_log_cache_capacity_bytes{node_id=\"0\"}")).isEqualTo(32L << 20);
        assertThat(body).contains("s3stream_object_store_requests_total{kind=\"PUT\"").contains("jvm_memory_used_bytes");

        // The dashboard in the repository queries only what is served.
        String dashboard = Files.readString(Path.of("grafana/kafka-shell-dashboard.json"));
        Matcher m = Pattern.compile("\\b((?:kafka|s3stream|jvm|process|system)_[a-z_]+)").matcher(dashboard);
        int names = 0;
        while (m.find()) {
            names++;
            assertThat(body).as("the dashboard's metric %s", m.group(1)).contains(m.group(1));
        }
        assertThat(names).isGreaterThan(10);
    }

    @Test
    void offByDefault() {
        try (ShellFixture plain = new ShellFixture()) {
            assertThat(plain.shell.metricsPort()).isEqualTo(-1);
        }
    }
}
