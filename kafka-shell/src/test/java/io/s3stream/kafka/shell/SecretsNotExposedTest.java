package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A shell whose configuration holds secrets (a JAAS password here; credentials in an {@code s3://} URI in
 * {@code SecretsNotExposedMinioIT}) never shows them: not in any log line or on stderr during a start, produce and
 * stop, not in DescribeConfigs (Kafka's sensitive keys come back without a value, URI credentials masked), not in the
 * metrics endpoint; nor does a store that refuses its URI repeat the URI's credentials.
 */
@Timeout(60)
class SecretsNotExposedTest {
    private static final String JAAS_SECRET = "hunter2jaas";

    /** Start, describe, produce, scrape and stop a shell configured with {@code extra}; none of {@code secrets} shows. */
    static Config assertSecretsAppearNowhere(Map<String, String> extra, List<String> secrets) throws Exception {
        StringBuilder logs = new StringBuilder();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord r) {
                logs.append(r.getLoggerName()).append(' ').append(r.getMessage()).append(' ')
                        .append(java.util.Arrays.toString(r.getParameters())).append(' ').append(r.getThrown()).append('\n');
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger root = Logger.getLogger("");
        root.addHandler(capture);
        PrintStream stderr = System.err;
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        String body;
        Config broker;
        Map<String, String> config = new java.util.HashMap<>(extra);
        config.put("metrics.port", "0");
        config.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" "
                + "password=\"" + JAAS_SECRET + "\";");
        try (ShellFixture fx = new ShellFixture(config)) {
            try (Admin admin = fx.admin()) {
                admin.createTopics(List.of(new NewTopic("s", 1, (short) 1))).all().get();
                ConfigResource r = new ConfigResource(ConfigResource.Type.BROKER, "0");
                broker = admin.describeConfigs(List.of(r)).all().get().get(r);
            }
            try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
                p.send(new ProducerRecord<>("s", "v")).get();
            }
            HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + fx.shell.metricsPort() + "/metrics")
                    .toURL().openConnection();
            try (var in = c.getInputStream()) {
                body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
        } finally {
            root.removeHandler(capture);
            System.setErr(stderr);
        }
        ConfigEntry jaas = broker.get("sasl.jaas.config");
        assertThat(jaas.isSensitive()).isTrue();
        assertThat(jaas.value()).isNull();
        StringBuilder described = new StringBuilder();
        broker.entries().forEach(e -> described.append(e.name()).append('=').append(e.value()).append('\n'));
        assertThat(logs).as("log records").isNotEmpty();
        List<String> all = new java.util.ArrayList<>(secrets);
        all.add(JAAS_SECRET);
        for (String secret : all) {
            assertThat(described.toString()).as("DescribeConfigs").doesNotContain(secret);
            assertThat(logs.toString()).as("log records").doesNotContain(secret);
            assertThat(err.toString(StandardCharsets.UTF_8)).as("stderr").doesNotContain(secret);
            assertThat(body).as("metrics").doesNotContain(secret);
        }
        return broker;
    }

    @Test
    void aJaasPasswordAppearsNowhere() throws Exception {
        assertSecretsAppearNowhere(Map.of(), List.of());
    }

    /** A store that refuses its URI says why without repeating the URI's query. */
    @Test
    void aRefusedStoreUriIsReportedWithoutItsCredentials() {
        String secret = "SuperSecretValue123";
        assertThatThrownBy(() -> new ShellFixture(Map.of("s3stream.object.store",
                "mem://refused-" + UUID.randomUUID() + "?accessKey=AKIAEXAMPLEKEY77&secretKey=" + secret)).close())
                .satisfies(e -> {
                    for (Throwable t = e; t != null; t = t.getCause()) {
                        assertThat(String.valueOf(t.getMessage())).doesNotContain(secret).doesNotContain("AKIAEXAMPLEKEY77");
                    }
                })
                .hasMessageContaining("unknown setting 'accessKey'");
    }
}
