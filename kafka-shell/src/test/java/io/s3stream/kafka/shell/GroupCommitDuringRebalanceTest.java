package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Offsets committed while a group rebalances. Kafka's classic coordinator accepts a commit from a member of the
 * current generation while the group prepares a rebalance (it refuses only between JoinGroup and SyncGroup), so that
 * consumers can commit in {@code onPartitionsRevoked}; a refusal there makes the next owner re-consume everything the
 * old one had processed.
 */
@Timeout(120)
class GroupCommitDuringRebalanceTest {
    private static final int PARTITIONS = 4;
    private static final int PER_PARTITION = 100;

    @RegisterExtension
    final ShellFixture fx = new ShellFixture();

    @BeforeEach
    void createTopic() throws Exception {
        try (Admin admin = fx.admin();
             KafkaProducer<String, String> producer = fx.producer(Map.of())) {
            admin.createTopics(List.of(new NewTopic("events", PARTITIONS, (short) 1))).all().get();
            for (int i = 0; i < PARTITIONS * PER_PARTITION; i++) {
                producer.send(new ProducerRecord<>("events", i % PARTITIONS, null, "v" + i));
            }
            producer.flush();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(classes = {RangeAssignor.class, CooperativeStickyAssignor.class})
    void javaConsumerCommitsInOnPartitionsRevoked(Class<?> assignor) throws Exception {
        Map<String, Object> config = Map.of("partition.assignment.strategy", assignor.getName(),
                "enable.auto.commit", "false", "session.timeout.ms", "6000", "heartbeat.interval.ms", "100",
                "max.poll.interval.ms", "20000");
        List<String> failures = new CopyOnWriteArrayList<>();
        Map<TopicPartition, Long> committedOnRevoke = new HashMap<>();
        try (KafkaConsumer<String, String> first = fx.consumer("g", config);
             KafkaConsumer<String, String> second = fx.consumer("g", config)) {
            first.subscribe(List.of("events"), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    Map<TopicPartition, OffsetAndMetadata> offsets = partitions.stream().collect(Collectors.toMap(
                            tp -> tp, tp -> new OffsetAndMetadata(first.position(tp))));
                    try {
                        first.commitSync(offsets);
                        offsets.forEach((tp, o) -> committedOnRevoke.put(tp, o.offset()));
                    } catch (RuntimeException e) {
                        failures.add(e.toString());
                    }
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                }
            });
            int consumed = 0;
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (consumed < PARTITIONS * PER_PARTITION && System.nanoTime() < deadline) {
                consumed += first.poll(Duration.ofMillis(100)).count();
            }
            assertThat(consumed).as("the first member read everything").isEqualTo(PARTITIONS * PER_PARTITION);

            second.subscribe(List.of("events"));
            int reconsumed = 0;
            deadline = System.nanoTime() + Duration.ofSeconds(40).toNanos();
            while ((first.assignment().size() != PARTITIONS / 2 || second.assignment().size() != PARTITIONS / 2)
                    && System.nanoTime() < deadline) {
                first.poll(Duration.ofMillis(50));
                reconsumed += second.poll(Duration.ofMillis(50)).count();
            }
            assertThat(second.assignment()).as("the group rebalanced").hasSize(PARTITIONS / 2);
            for (int i = 0; i < 10; i++) { // the second member's first fetches after its assignment
                reconsumed += second.poll(Duration.ofMillis(50)).count();
            }

            assertThat(failures).as("commits in onPartitionsRevoked").isEmpty();
            assertThat(committedOnRevoke).as("the listener ran and committed").containsKeys(
                    second.assignment().toArray(TopicPartition[]::new));
            Set<TopicPartition> all = IntStream.range(0, PARTITIONS).mapToObj(p -> new TopicPartition("events", p))
                    .collect(Collectors.toSet());
            first.committed(all).forEach((tp, o) -> {
                if (committedOnRevoke.containsKey(tp)) {
                    assertThat(o.offset()).as("committed offset of %s", tp).isEqualTo(PER_PARTITION);
                }
            });
            assertThat(reconsumed).as("records the new owner read again").isZero();
        }
    }

    @Test
    void confluentKafkaConsumersCommitInOnRevoke() throws Exception {
        ExternalClients.require("confluent-kafka (" + ExternalClients.PYTHON + ")", ExternalClients.PYTHON, "-c",
                "import confluent_kafka");
        Path script = Path.of("src/test/python/confluent_commit_on_revoke.py").toAbsolutePath();
        for (String strategy : List.of("range", "cooperative-sticky")) {
            var r = ExternalClients.run(new byte[0], List.of(ExternalClients.PYTHON, script.toString(), fx.bootstrap(), "events",
                    Integer.toString(PARTITIONS), Integer.toString(PER_PARTITION), strategy));
            assertThat(r.exit()).as(r.output()).isZero();
            assertThat(r.output()).contains("commit-on-revoke OK " + strategy);
        }
    }
}
