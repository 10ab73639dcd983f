package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** retention.ms and retention.bytes trim partitions on the retention timer; ListOffsets earliest follows. */
@Timeout(60)
class RetentionTest {

    static long earliest(Admin admin, String topic) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        return admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get().offset();
    }

    @Test
    void timeAndSizeRetentionTrimOnTheTimer() throws Exception {
        try (ShellFixture fx = new ShellFixture(Map.of("log.retention.check.interval.ms", "200"));
             Admin admin = fx.admin()) {
            admin.createTopics(List.of(
                    new NewTopic("by-time", 1, (short) 1).configs(Map.of("retention.ms", "3000")),
                    new NewTopic("by-size", 1, (short) 1).configs(Map.of("retention.bytes", "102400")),
                    new NewTopic("keep", 1, (short) 1))).all().get();
            long old = System.currentTimeMillis() - 60_000;
            String value = "x".repeat(1000);
            try (KafkaProducer<String, String> p = fx.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 0))) {
                for (int i = 0; i < 100; i++) { // old timestamps: expired at once
                    p.send(new ProducerRecord<>("by-time", 0, old, null, value)).get();
                }
                for (int i = 0; i < 10; i++) { // fresh
                    p.send(new ProducerRecord<>("by-time", 0, null, null, value)).get();
                }
                for (int i = 0; i < 1000; i++) {
                    p.send(new ProducerRecord<>("by-size", value));
                    p.send(new ProducerRecord<>("keep", value));
                }
                p.flush();
            }
            long deadline = System.currentTimeMillis() + 20_000;
            while (System.currentTimeMillis() < deadline
                    && (earliest(admin, "by-time") < 100 || earliest(admin, "by-size") < 800)) {
                Thread.sleep(100);
            }
            assertThat(earliest(admin, "by-time")).as("the 100 old records expired, the 10 fresh ones stay").isEqualTo(100);
            // ~1.07 KB per record on disk: 102,400 bytes keep roughly the last 95; never less than retention.bytes.
            assertThat(earliest(admin, "by-size")).isBetween(800L, 905L);
            assertThat(earliest(admin, "keep")).isZero();

            // Consumers from the beginning start at the new start offset.
            try (var c = fx.consumer(null, Map.of())) {
                c.assign(List.of(new TopicPartition("by-time", 0)));
                c.seekToBeginning(c.assignment());
                assertThat(c.position(new TopicPartition("by-time", 0))).isEqualTo(100);
            }
            // The fresh records expire too once they are older than retention.ms.
            deadline = System.currentTimeMillis() + 20_000;
            while (System.currentTimeMillis() < deadline && earliest(admin, "by-time") < 110) {
                Thread.sleep(200);
            }
            assertThat(earliest(admin, "by-time")).isEqualTo(110);
        }
    }
}
