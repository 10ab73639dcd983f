package io.s3stream.kafka.shell;

import io.s3stream.RecordBatch;
import io.s3stream.Stream;
import io.s3stream.StreamInfo;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.StorageConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A shell that stopped between creating a topic's streams and recording the topic left streams that nothing names.
 * A running shell destroys them once the grace has passed; a stream the other node still holds open waits for it, and
 * the topics that exist keep every record.
 */
@Timeout(120)
class UnfinishedTopicCreationTest {

    private static Set<Long> ids(StreamStorage view) throws Exception {
        view.keyValues().sync().get(10, TimeUnit.SECONDS); // caught up with the shell's commits
        return view.listStreams().get(10, TimeUnit.SECONDS).stream().map(StreamInfo::streamId)
                .collect(Collectors.toSet());
    }

    private static Set<Long> awaitGone(StreamStorage view, long id) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        Set<Long> ids = ids(view);
        while (ids.contains(id) && System.nanoTime() < deadline) {
            Thread.sleep(200);
            ids = ids(view);
        }
        return ids;
    }

    private static Stream half(StreamStorage other, int partition) throws Exception {
        Stream s = other.createStream(StreamOptions.builder()
                .tags(Map.of("kafka.topic", "half", "kafka.partition", Integer.toString(partition))).build())
                .get(10, TimeUnit.SECONDS);
        s.append(RecordBatch.of(1, ByteBuffer.wrap(new byte[1000]))).get(10, TimeUnit.SECONDS);
        return s;
    }

    @Test
    void streamsNoTopicRecordedAreDestroyedAfterTheGraceAndLiveTopicsKeepTheirRecords() throws Exception {
        try (ShellFixture fx = new ShellFixture(Map.of("s3stream.kafka.orphan.stream.grace.ms", "2000"));
             Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("live", 2, (short) 1))).all().get();
            try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
                for (int i = 0; i < 200; i++) {
                    p.send(new ProducerRecord<>("live", i % 2, null, "v" + i));
                }
                p.flush();
            }

            // Node 9 on the same store: a shell that created two streams of topic "half" and then stopped before it
            // recorded the topic. One stream it released (a takeover closed it), the other it still holds open.
            StorageConfig.Builder node9 = StorageConfig.builder().nodeId(9)
                    .dataDir(Files.createTempDirectory(fx.dataDir, "node9"))
                    .wal("mem://" + fx.name + "-wal9?capacity=64MiB").objectStore("mem://" + fx.name)
                    .metadata("mem://" + fx.name);
            long released;
            long held;
            try (StreamStorage other = StreamStorage.open(node9.build())) {
                Stream a = half(other, 0);
                Stream b = half(other, 1);
                a.close().get(10, TimeUnit.SECONDS);
                released = a.streamId();
                held = b.streamId();
                assertThat(ids(other)).contains(released, held);

                Set<Long> left = awaitGone(other, released);
                assertThat(left).as("the released stream is destroyed after the grace").doesNotContain(released);
                Thread.sleep(3_000); // more sweeps than the grace needs
                assertThat(ids(other)).as("a stream its node still holds open is left to it").contains(held);
            } // node 9 stops cleanly: it closes the stream it held
            try (StreamStorage restarted = StreamStorage.open(node9.build())) {
                assertThat(awaitGone(restarted, held)).doesNotContain(held);
                assertThat(restarted.listStreams().get(10, TimeUnit.SECONDS))
                        .as("the live topic's two streams are all that is left")
                        .extracting(s -> s.tags().get("kafka.topic")).containsExactly("live", "live");
            }

            try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of())) {
                List<TopicPartition> parts = List.of(new TopicPartition("live", 0), new TopicPartition("live", 1));
                c.assign(parts);
                c.seekToBeginning(parts);
                int read = 0;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (read < 200 && System.nanoTime() < deadline) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        assertThat(r.value()).startsWith("v");
                        read++;
                    }
                }
                assertThat(read).isEqualTo(200);
            }
        }
    }
}
