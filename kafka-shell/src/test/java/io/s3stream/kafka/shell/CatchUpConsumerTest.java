package io.s3stream.kafka.shell;

import io.s3stream.StorageMetrics;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real Kafka consumer replaying a partition from objects is recognised by the library as one sequential reader: it
 * is read ahead for and throttled as catch-up traffic. The consumer's byte limit makes the shell leave out the batch
 * that would overflow it, so each fetch starts inside the data the one before returned, not at its end (until
 * 2026-11-27 the library only recognised exact continuations, and no Kafka consumer was ever read ahead for).
 */
@Timeout(120)
class CatchUpConsumerTest {
    private static final int RECORDS = 14_000;

    /** One upload at the restart: the partition lies in one object, so each Kafka fetch is one library fetch. */
    @RegisterExtension
    final ShellFixture fx = new ShellFixture(Map.of(
            "s3stream.upload.threshold.bytes", Long.toString(16L << 20), "s3stream.upload.interval.ms", "600000"));

    @Test
    void aConsumerReplayingObjectsIsReadAheadFor() throws Exception {
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("backlog", 1, (short) 1))).all().get();
        }
        String value = "x".repeat(1000);
        try (KafkaProducer<String, String> p = fx.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 50,
                ProducerConfig.BATCH_SIZE_CONFIG, 128 * 1024))) {
            for (int i = 0; i < RECORDS; i++) {
                p.send(new ProducerRecord<>("backlog", 0, Integer.toString(i), value));
            }
            p.flush();
        }
        fx.restart(); // a clean close uploads the log cache: the new broker reads the partition from objects only
        StorageMetrics before = fx.shell.metrics();

        TopicPartition tp = new TopicPartition("backlog", 0);
        // The consumer's defaults (1 MiB per partition) and ProducerPerformance's batches of 128 KiB: the ninth
        // batch of each library fetch would overflow the megabyte, so the shell leaves it out.
        try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of())) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long next = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (next < RECORDS && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    assertThat(r.offset()).isEqualTo(next);
                    assertThat(r.key()).isEqualTo(Long.toString(next));
                    next++;
                }
            }
            assertThat(next).as("records read back").isEqualTo(RECORDS);
        }

        StorageMetrics after = fx.shell.metrics();
        System.out.printf("catch-up consumer: fetches from objects %d, read-ahead blocks %d, hits %d, GETs %d%n",
                after.reads().fromObjects() - before.reads().fromObjects(),
                after.readAhead().blocks() - before.readAhead().blocks(), after.readAhead().hits() - before.readAhead().hits(),
                after.objectStore().requests().get("GET") - before.objectStore().requests().get("GET"));
        assertThat(after.reads().fromObjects() - before.reads().fromObjects()).as("fetches from objects").isPositive();
        assertThat(after.readAhead().blocks() - before.readAhead().blocks()).as("blocks read ahead").isPositive();
        assertThat(after.readAhead().hits() - before.readAhead().hits()).as("fetches served by read-ahead")
                .isPositive();
    }
}
