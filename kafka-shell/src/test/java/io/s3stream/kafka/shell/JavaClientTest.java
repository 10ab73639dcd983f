package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/** The Java producer (default settings: idempotent, acks=all) and consumer against an in-process shell. */
@Timeout(60)
class JavaClientTest {
    @RegisterExtension
    final ShellFixture fx = new ShellFixture();

    @Test
    void producesAndConsumesWithDefaultProducerSettings() throws Exception {
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("orders", 3, (short) 1))).all().get();
        }
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> producer = fx.producer(Map.of())) {
            for (int i = 0; i < 1000; i++) {
                ProducerRecord<String, String> r = new ProducerRecord<>("orders", "k" + (i % 7), "v" + i);
                r.headers().add("h", ("x" + i).getBytes(StandardCharsets.UTF_8));
                sent.add(producer.send(r));
            }
            producer.flush();
        }
        long[] perPartition = new long[3];
        for (Future<RecordMetadata> f : sent) {
            RecordMetadata m = f.get();
            assertThat(m.offset()).isEqualTo(perPartition[m.partition()]++);
        }
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = fx.consumer("g1", Map.of())) {
            consumer.subscribe(List.of("orders"));
            long deadline = System.currentTimeMillis() + 30_000;
            while (got.size() < 1000 && System.currentTimeMillis() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(got::add);
            }
            consumer.commitSync();
            assertThat(consumer.committed(Set.of(new TopicPartition("orders", 0))).get(new TopicPartition("orders", 0)).offset())
                    .isEqualTo(perPartition[0]);
        }
        assertThat(got).hasSize(1000);
        for (ConsumerRecord<String, String> r : got) {
            int i = Integer.parseInt(r.value().substring(1));
            assertThat(r.key()).isEqualTo("k" + (i % 7));
            assertThat(new String(r.headers().lastHeader("h").value(), StandardCharsets.UTF_8)).isEqualTo("x" + i);
        }
    }

    @Test
    void autoCreatesTopicsAndLongPolls() throws Exception {
        try (KafkaConsumer<String, String> consumer = fx.consumer(null, Map.of());
             KafkaProducer<String, String> producer = fx.producer(Map.of("acks", "1"))) {
            producer.send(new ProducerRecord<>("auto", "a")).get();
            TopicPartition tp = new TopicPartition("auto", 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            ConsumerRecords<String, String> first = ConsumerRecords.empty();
            long deadline = System.currentTimeMillis() + 20_000;
            while (first.isEmpty() && System.currentTimeMillis() < deadline) {
                first = consumer.poll(Duration.ofMillis(200));
            }
            assertThat(first.count()).isEqualTo(1);
            Thread sender = Thread.ofPlatform().start(() -> {
                try {
                    Thread.sleep(300);
                    producer.send(new ProducerRecord<>("auto", "b")).get();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            long t0 = System.nanoTime();
            ConsumerRecords<String, String> second = consumer.poll(Duration.ofSeconds(10));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            sender.join();
            assertThat(second.count()).isEqualTo(1);
            assertThat(second.iterator().next().offset()).isEqualTo(1);
            assertThat(ms).isLessThan(5_000);
        }
    }
}
