package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Kafka Streams with {@code processing.guarantee=exactly_once_v2}: a word count (a repartition and an in-memory store
 * restored from its changelog) through a restart of the application and a restart of the shell. The counts read
 * back with read_committed are exact, and each word's counts only ever grow (nothing processed twice is visible).
 *
 * <p>The store's changelog is the compacted topic Streams creates by default: before the second instance starts, with
 * no local state, the changelog is compacted down to one record per word, and its commit markers down to those of the
 * transactions that still hold a record (its {@code delete.retention.ms} is 1 s here), and the store restored from
 * it holds the exact counts.
 */
@Timeout(240)
class StreamsExactlyOnceTest {
    private static final int PARTITIONS = 3;

    @RegisterExtension
    final ShellFixture fx = new ShellFixture(Map.of("s3stream.kafka.transaction.sweep.ms", "200",
            "s3stream.upload.interval.ms", "200", "s3stream.compaction.interval.ms", "300",
            "s3stream.kafka.reconcile.ms", "100"));

    private KafkaStreams start(Path stateDir) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "wc-eos");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, fx.bootstrap());
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.topicPrefix(TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG), "0.01");
        p.put(StreamsConfig.topicPrefix(TopicConfig.DELETE_RETENTION_MS_CONFIG), "1000");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("lines")
                .flatMapValues(line -> Arrays.asList(line.split(" ")))
                .groupBy((k, word) -> word)
                .count(Materialized.as(Stores.inMemoryKeyValueStore("word-counts")))
                .toStream()
                .to("counts", Produced.with(Serdes.String(), Serdes.Long()));
        KafkaStreams streams = new KafkaStreams(b.build(), p);
        streams.start();
        return streams;
    }

    private static String line(int i) {
        return "w" + (i % 7) + " x" + (i % 11) + " all";
    }

    private void produceLines(int from, int to) {
        try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
            for (int i = from; i < to; i++) {
                p.send(new ProducerRecord<>("lines", null, "k" + i, line(i)));
            }
        }
    }

    private static Map<String, Long> expected(int lines) {
        Map<String, Long> m = new TreeMap<>();
        for (int i = 0; i < lines; i++) {
            for (String w : line(i).split(" ")) {
                m.merge(w, 1L, Long::sum);
            }
        }
        return m;
    }

    /** Every count emitted so far, per word in offset order, read with read_committed. */
    private Map<String, List<Long>> readCounts() {
        return readCommitted("counts");
    }

    /** Every record of {@code topic}'s values per key in offset order, read with read_committed. */
    private Map<String, List<Long>> readCommitted(String topic) {
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, fx.bootstrap(),
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName()))) {
            List<TopicPartition> tps = IntStream.range(0, PARTITIONS).mapToObj(p -> new TopicPartition(topic, p)).toList();
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            Map<String, List<Long>> out = new TreeMap<>();
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp)) && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(100)).forEach(r -> out.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value()));
            }
            return out;
        }
    }

    private Map<String, List<Long>> awaitCounts(Map<String, Long> expected) throws InterruptedException {
        long deadline = System.nanoTime() + 120_000_000_000L;
        Map<String, List<Long>> counts;
        while (true) {
            counts = readCounts();
            Map<String, Long> latest = new TreeMap<>();
            counts.forEach((w, values) -> latest.put(w, values.getLast()));
            if (latest.equals(expected) || System.nanoTime() > deadline) {
                break;
            }
            Thread.sleep(500);
        }
        return counts;
    }

    private static void assertCounts(Map<String, List<Long>> counts, Map<String, Long> expected) {
        Map<String, Long> latest = new TreeMap<>();
        counts.forEach((w, values) -> {
            latest.put(w, values.getLast());
            for (int i = 1; i < values.size(); i++) {
                assertThat(values.get(i)).as("counts of %s in order: %s", w, values).isGreaterThan(values.get(i - 1));
            }
        });
        assertThat(latest).isEqualTo(expected);
    }

    @Test
    void wordCountIsExactThroughRestartsOfTheApplicationAndTheShell(@TempDir Path state) throws Exception {
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("lines", PARTITIONS, (short) 1),
                    new NewTopic("counts", PARTITIONS, (short) 1))).all().get();
        }
        produceLines(0, 100);
        KafkaStreams streams = start(state.resolve("a"));
        try {
            // The rest in small steps, so that the changelog gets many commits (and markers) per word.
            for (int i = 100; i < 300; i += 10) {
                produceLines(i, i + 10);
                Thread.sleep(150);
            }
            assertCounts(awaitCounts(expected(300)), expected(300));
        } finally {
            streams.close(Duration.ofSeconds(30));
        }
        // The changelog is compacted: one record per word once compaction ran (reads after a restart of the shell
        // come from objects, not from its log cache of recent appends).
        String changelog = "wc-eos-word-counts-changelog";
        try (Admin admin = fx.admin()) {
            var resource = new org.apache.kafka.common.config.ConfigResource(
                    org.apache.kafka.common.config.ConfigResource.Type.TOPIC, changelog);
            assertThat(admin.describeConfigs(List.of(resource)).all().get().get(resource)
                    .get(TopicConfig.CLEANUP_POLICY_CONFIG).value()).isEqualTo(TopicConfig.CLEANUP_POLICY_COMPACT);
        }
        int records = Integer.MAX_VALUE;
        for (int attempt = 0; attempt < 20 && records > expected(300).size(); attempt++) {
            Thread.sleep(1_000);
            fx.restart();
            records = readCommitted(changelog).values().stream().mapToInt(List::size).sum();
        }
        assertThat(records).as("changelog records after compaction").isEqualTo(expected(300).size());
        // Its commit markers go once their transactions hold no record and delete.retention.ms has passed: at most
        // one is left per record (a marker left is that of a transaction holding a record).
        long deadline = System.nanoTime() + 30_000_000_000L;
        List<String> counted;
        while (true) {
            counted = new ArrayList<>();
            try (RawClient raw = new RawClient(fx.shell.port())) {
                for (int p = 0; p < PARTITIONS; p++) {
                    List<MutableRecordBatch> batches = raw.batches(changelog, p, 0);
                    long markers = batches.stream().filter(b -> b.isControlBatch() && b.countOrNull() > 0).count();
                    long kept = batches.stream().filter(b -> !b.isControlBatch()).mapToLong(b -> b.countOrNull()).sum();
                    if (markers > kept) {
                        counted.add("partition " + p + ": " + markers + " markers, " + kept + " records");
                    }
                }
            }
            if (counted.isEmpty() || System.nanoTime() > deadline) {
                break;
            }
            Thread.sleep(500);
        }
        assertThat(counted).as("changelog partitions with spent commit markers").isEmpty();

        // A new instance, with no local state: the store is restored from its compacted changelog.
        streams = start(state.resolve("b"));
        try {
            produceLines(300, 450);
            fx.restart();
            produceLines(450, 600);
            assertCounts(awaitCounts(expected(600)), expected(600));
            assertThat(streams.state()).isIn(KafkaStreams.State.RUNNING, KafkaStreams.State.REBALANCING);
        } finally {
            streams.close(Duration.ofSeconds(30));
        }
    }
}
