package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Client quotas: AlterClientQuotas and DescribeClientQuotas through Admin (named and default entities, filters,
 * validation, survival of a restart), and real enforcement: a producer and a consumer over their byte-rate quota get
 * throttle times (the Java client's throttle-time metrics) while a client without a quota is not throttled.
 */
@Timeout(120)
class ClientQuotasTest {
    private static ClientQuotaEntity client(String id) {
        Map<String, String> m = new HashMap<>();
        m.put(ClientQuotaEntity.CLIENT_ID, id);
        return new ClientQuotaEntity(m);
    }

    /** The largest value of a client metric over its non-per-node instances. */
    static double metric(Map<MetricName, ? extends Metric> metrics, String name) {
        return metrics.entrySet().stream().filter(e -> e.getKey().name().equals(name)
                        && !e.getKey().tags().containsKey("node-id"))
                .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue()).max().orElse(Double.NaN);
    }

    @Test
    void quotasAreStoredDescribedAndValidated() throws Exception {
        try (ShellFixture fx = new ShellFixture(); Admin admin = fx.admin()) {
            admin.alterClientQuotas(List.of(
                    new ClientQuotaAlteration(client("app-1"), List.of(
                            new ClientQuotaAlteration.Op("producer_byte_rate", 1_048_576.0),
                            new ClientQuotaAlteration.Op("consumer_byte_rate", 2_097_152.0))),
                    new ClientQuotaAlteration(client(null), List.of(
                            new ClientQuotaAlteration.Op("producer_byte_rate", 524_288.0))))).all().get();
            var all = admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get();
            assertThat(all).containsEntry(client("app-1"), Map.of("producer_byte_rate", 1_048_576.0,
                    "consumer_byte_rate", 2_097_152.0)).containsEntry(client(null), Map.of("producer_byte_rate", 524_288.0));
            var exact = admin.describeClientQuotas(ClientQuotaFilter.containsOnly(List.of(
                    ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, "app-1")))).entities().get();
            assertThat(exact).containsOnlyKeys(client("app-1"));
            var defaults = admin.describeClientQuotas(ClientQuotaFilter.containsOnly(List.of(
                    ClientQuotaFilterComponent.ofDefaultEntity(ClientQuotaEntity.CLIENT_ID)))).entities().get();
            assertThat(defaults).containsOnlyKeys(client(null));

            assertThatThrownBy(() -> admin.alterClientQuotas(List.of(new ClientQuotaAlteration(client("x"),
                    List.of(new ClientQuotaAlteration.Op("bytes_per_fortnight", 1.0))))).all().get())
                    .cause().isInstanceOf(InvalidRequestException.class).hasMessageContaining("bytes_per_fortnight");
            assertThatThrownBy(() -> admin.alterClientQuotas(List.of(new ClientQuotaAlteration(client("x"),
                    List.of(new ClientQuotaAlteration.Op("producer_byte_rate", -5.0))))).all().get())
                    .cause().isInstanceOf(InvalidRequestException.class).hasMessageContaining("positive");
            assertThatThrownBy(() -> admin.alterClientQuotas(List.of(new ClientQuotaAlteration(
                    new ClientQuotaEntity(Map.of(ClientQuotaEntity.IP, "10.0.0.1")),
                    List.of(new ClientQuotaAlteration.Op("connection_creation_rate", 5.0))))).all().get())
                    .cause().isInstanceOf(InvalidRequestException.class);

            // Removing a key; the rest survives a restart.
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(client("app-1"),
                    List.of(new ClientQuotaAlteration.Op("consumer_byte_rate", null))))).all().get();
            fx.restart();
            try (Admin again = fx.admin()) {
                assertThat(again.describeClientQuotas(ClientQuotaFilter.all()).entities().get())
                        .containsEntry(client("app-1"), Map.of("producer_byte_rate", 1_048_576.0));
            }
        }
    }

    @Test
    void producersAndConsumersOverTheirQuotaAreThrottled() throws Exception {
        try (ShellFixture fx = new ShellFixture(); Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("q", 1, (short) 1))).all().get();
            admin.alterClientQuotas(List.of(
                    new ClientQuotaAlteration(client("slow-writer"), List.of(
                            new ClientQuotaAlteration.Op("producer_byte_rate", 100_000.0))),
                    new ClientQuotaAlteration(client("slow-reader"), List.of(
                            new ClientQuotaAlteration.Op("consumer_byte_rate", 100_000.0))))).all().get();
            byte[] value = new byte[10_000];
            // 1.5 MB at once: 150 KB/s over the 10 s minimum window, 1.5x the quota: about 5 s of throttle.
            try (KafkaProducer<String, byte[]> slow = new KafkaProducer<>(Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, fx.bootstrap(), ProducerConfig.CLIENT_ID_CONFIG, "slow-writer",
                    ProducerConfig.LINGER_MS_CONFIG, 5, ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
                    "org.apache.kafka.common.serialization.StringSerializer", ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                    "org.apache.kafka.common.serialization.ByteArraySerializer"));
                 KafkaProducer<String, byte[]> fast = new KafkaProducer<>(Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, fx.bootstrap(), ProducerConfig.CLIENT_ID_CONFIG, "fast-writer",
                    ProducerConfig.LINGER_MS_CONFIG, 5, ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
                    "org.apache.kafka.common.serialization.StringSerializer", ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                    "org.apache.kafka.common.serialization.ByteArraySerializer"))) {
                for (int i = 0; i < 150; i++) {
                    slow.send(new ProducerRecord<>("q", value));
                    fast.send(new ProducerRecord<>("q", value));
                }
                slow.flush();
                fast.flush();
                assertThat(metric(slow.metrics(), "produce-throttle-time-max")).as("throttled").isGreaterThan(0);
                assertThat(metric(fast.metrics(), "produce-throttle-time-max")).as("not throttled").isZero();
            }
            Map<String, Object> reader = new HashMap<>(Map.of(ConsumerConfig.CLIENT_ID_CONFIG, "slow-reader",
                    ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                    "org.apache.kafka.common.serialization.ByteArrayDeserializer",
                    ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                    "org.apache.kafka.common.serialization.ByteArrayDeserializer"));
            reader.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, fx.bootstrap());
            try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(reader)) {
                TopicPartition tp = new TopicPartition("q", 0);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                long deadline = System.currentTimeMillis() + 60_000;
                while (c.position(tp) < 300 && System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(200));
                }
                assertThat(c.position(tp)).isEqualTo(300);
                assertThat(metric(c.metrics(), "fetch-throttle-time-max")).as("throttled").isGreaterThan(0);
            }
        }
    }
}
