package io.s3stream.kafka.shell;

import io.s3stream.kafka.shell.log.TimeIndex;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ListOffsets by timestamp through the Java consumer's {@code offsetsForTimes} and the Admin client's
 * {@code OffsetSpec.forTimestamp}, on a partition with the time index: timestamps that grow with some late records
 * among them, answered as a scan of the whole partition would (the first record at or above the target), before and
 * after a restart, with appends after it; max timestamp, also once the indexed maximum is gone; DeleteTopics removes
 * the index's checkpoint.
 */
@Timeout(120)
class TimestampLookupTest {
    private static final long T0 = 1_700_000_000_000L;

    @RegisterExtension
    final ShellFixture fx = new ShellFixture();

    private final long seed = System.nanoTime();
    private final Random random = new Random(seed);
    private final List<Long> timestamps = new ArrayList<>(); // by offset

    private void produce(TopicPartition tp, int count) throws Exception {
        try (KafkaProducer<String, String> p = fx.producer(Map.of(ProducerConfig.BATCH_SIZE_CONFIG, 65_536,
                ProducerConfig.LINGER_MS_CONFIG, 20, ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1))) {
            String value = "x".repeat(1_000);
            for (int i = 0; i < count; i++) {
                int n = timestamps.size();
                long ts = n % 500 == 499 ? T0 + random.nextInt(10 * n + 1) : T0 + 10L * n; // a few late ones
                timestamps.add(ts);
                p.send(new ProducerRecord<>(tp.topic(), tp.partition(), ts, null, value));
            }
            p.flush();
        }
    }

    private long expected(long target) {
        for (int offset = 0; offset < timestamps.size(); offset++) {
            if (timestamps.get(offset) >= target) {
                return offset;
            }
        }
        return -1;
    }

    private void assertLookups(TopicPartition tp) throws Exception {
        List<Long> targets = new ArrayList<>(List.of(T0 - 1, T0, T0 + 5, T0 + 10L * timestamps.size() + 1));
        for (int i = 0; i < 40; i++) {
            targets.add(T0 + random.nextLong(10L * timestamps.size() + 10));
        }
        try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of()); Admin admin = fx.admin()) {
            for (long target : targets) {
                OffsetAndTimestamp found = c.offsetsForTimes(Map.of(tp, target)).get(tp);
                long want = expected(target);
                if (want < 0) {
                    assertThat(found).as("target %d (seed %d)", target, seed).isNull();
                    continue;
                }
                assertThat(found).as("target %d (seed %d)", target, seed).isNotNull();
                assertThat(found.offset()).as("target %d (seed %d)", target, seed).isEqualTo(want);
                assertThat(found.timestamp()).isEqualTo(timestamps.get((int) want));
            }
            long max = timestamps.stream().mapToLong(Long::longValue).max().orElseThrow();
            assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.maxTimestamp())).partitionResult(tp)
                    .get(30, TimeUnit.SECONDS).offset()).as("max timestamp (seed %d)", seed)
                    .isEqualTo(timestamps.indexOf(max));
            long target = targets.get(5);
            assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.forTimestamp(target))).partitionResult(tp)
                    .get(30, TimeUnit.SECONDS).offset()).as("the Admin client, target %d (seed %d)", target, seed)
                    .isEqualTo(expected(target));
        }
    }

    /** The index's largest maximum belongs to a record DeleteRecords removed: the answer is the largest left. */
    @Test
    void maxTimestampFindsTheLargestLeftWhenTheIndexedMaximumIsGone() throws Exception {
        TopicPartition tp = new TopicPartition("max", 0);
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("max", 1, (short) 1))).all().get();
        }
        try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
            for (int i = 0; i < 3_000; i++) {
                long ts = i == 100 ? T0 + 1_000_000_000L : i == 2_000 ? T0 + 500_000_000L : T0 + i;
                p.send(new ProducerRecord<>("max", 0, ts, null, "x".repeat(1_000)));
            }
            p.flush();
        }
        try (Admin admin = fx.admin()) {
            assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.maxTimestamp())).partitionResult(tp)
                    .get(30, TimeUnit.SECONDS).offset()).isEqualTo(100);
            admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(500)))
                    .all().get(30, TimeUnit.SECONDS);
            var found = admin.listOffsets(Map.of(tp, OffsetSpec.maxTimestamp())).partitionResult(tp)
                    .get(30, TimeUnit.SECONDS);
            assertThat(found.offset()).as("the largest timestamp left").isEqualTo(2_000);
            assertThat(found.timestamp()).isEqualTo(T0 + 500_000_000L);
        }
    }

    @Test
    void lookupsByTimestampFindTheFirstRecordAtOrAboveTheTargetAcrossARestart() throws Exception {
        TopicPartition tp = new TopicPartition("times", 0);
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("times", 1, (short) 1))).all().get();
        }
        produce(tp, 12_000);
        assertLookups(tp);

        fx.restart();
        Map<String, byte[]> stored = new HashMap<>(fx.shell.keyValuesForTest().list(TimeIndex.PREFIX)
                .get(10, TimeUnit.SECONDS));
        assertThat(stored).as("the stopping shell checkpointed the partition's time index").hasSize(1);
        assertThat(stored.values().iterator().next().length).as("with entries").isGreaterThan(100);
        assertLookups(tp);
        produce(tp, 3_000);
        assertLookups(tp);

        try (Admin admin = fx.admin()) {
            admin.deleteTopics(List.of("times")).all().get();
        }
        assertThat(fx.shell.keyValuesForTest().list(TimeIndex.PREFIX).get(10, TimeUnit.SECONDS))
                .as("DeleteTopics removes the checkpoint").isEmpty();
    }
}
