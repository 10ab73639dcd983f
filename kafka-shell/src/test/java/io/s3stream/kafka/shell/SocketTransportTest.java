package io.s3stream.kafka.shell;

import io.netty.channel.epoll.Epoll;
import io.s3stream.InvalidConfigException;
import io.s3stream.kafka.shell.network.SocketTransport;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Both socket transports under the listeners ({@code s3stream.kafka.network.transport}) serve the Java clients the
 * same records, small and large; {@code auto} is epoll where Netty's native library loads; a wrong name stops the
 * start naming the setting.
 */
@Timeout(120)
class SocketTransportTest {
    @ParameterizedTest
    @EnumSource(SocketTransport.class)
    void eachTransportServesTheSameRecords(SocketTransport transport) throws Exception {
        try (ShellFixture fx = new ShellFixture(Map.of(SocketTransport.SETTING, transport.name().toLowerCase()))) {
            assertThat(fx.shell.transport()).isEqualTo(transport);
            try (Admin admin = fx.admin()) {
                admin.createTopics(List.of(new NewTopic("t", 2, (short) 1))).all().get();
            }
            // Small records in batches of many, and records of 600 KB whose requests take many socket reads and
            // whose fetch responses many writes.
            List<String> sent = new ArrayList<>();
            try (KafkaProducer<String, String> producer = fx.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 5,
                    ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 1_000_000))) {
                List<Future<RecordMetadata>> acks = new ArrayList<>();
                for (int i = 0; i < 2_000; i++) {
                    String value = i % 500 == 7 ? ("L" + i + "-").repeat(200_000).substring(0, 600_000) : "v" + i;
                    sent.add(value);
                    acks.add(producer.send(new ProducerRecord<>("t", i % 2, Integer.toString(i), value)));
                }
                for (Future<RecordMetadata> ack : acks) {
                    ack.get();
                }
            }
            Map<String, String> got = new HashMap<>();
            try (KafkaConsumer<String, String> consumer = fx.consumer("g", Map.of())) {
                consumer.subscribe(List.of("t"));
                long deadline = System.currentTimeMillis() + 60_000;
                while (got.size() < sent.size() && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        assertThat(got.put(r.key(), r.value())).as("record %s read once", r.key()).isNull();
                    }
                }
            }
            assertThat(got).hasSize(sent.size());
            for (int i = 0; i < sent.size(); i++) {
                assertThat(got.get(Integer.toString(i))).as("record %d", i).isEqualTo(sent.get(i));
            }
        }
    }

    @Test
    void autoIsEpollWhereItsNativeLibraryLoads() {
        assertThat(Epoll.isAvailable()).as("Netty's native epoll loads on this platform (%s)",
                Epoll.unavailabilityCause()).isTrue();
        assertThat(SocketTransport.of(null)).isEqualTo(SocketTransport.EPOLL);
        assertThat(SocketTransport.of(" Auto ")).isEqualTo(SocketTransport.EPOLL);
        assertThat(SocketTransport.of("NIO")).isEqualTo(SocketTransport.NIO);
        try (ShellFixture fx = new ShellFixture()) {
            assertThat(fx.shell.transport()).isEqualTo(SocketTransport.EPOLL);
        }
    }

    @Test
    void anUnknownTransportStopsTheStartNamingTheSetting() {
        assertThatThrownBy(() -> new ShellFixture(Map.of(SocketTransport.SETTING, "io_uring")).close())
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("s3stream.kafka.network.transport must be auto, epoll or nio, was 'io_uring'");
    }
}
