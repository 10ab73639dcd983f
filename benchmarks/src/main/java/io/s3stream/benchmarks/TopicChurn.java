package io.s3stream.benchmarks;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;

/**
 * Creates, writes and deletes topics against a broker, in rounds: what a system that makes short-lived topics all day
 * (a test suite, per-job topics, Kafka Streams' internal topics of apps that come and go) does to the broker's
 * metadata. Each round creates {@code perRound} topics of {@code partitions} partitions, writes one acknowledged record
 * of 100 bytes to every partition, and deletes them. {@code benchmarks/compare/topic-churn.sh} runs it against a
 * kafka-shell and reports what its manifest holds afterwards.
 *
 * <p>Usage: {@code TopicChurn <bootstrap> <rounds> <perRound> <partitions>}
 */
public final class TopicChurn {
    private TopicChurn() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: TopicChurn <bootstrap> <rounds> <topics per round> <partitions per topic>");
            System.exit(2);
        }
        String bootstrap = args[0];
        int rounds = Integer.parseInt(args[1]);
        int perRound = Integer.parseInt(args[2]);
        int partitions = Integer.parseInt(args[3]);
        Map<String, Object> common = Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        Map<String, Object> producerConfig = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.LINGER_MS_CONFIG, 5,
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        long started = System.nanoTime();
        try (Admin admin = Admin.create(common);
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig)) {
            byte[] value = new byte[100];
            for (int r = 0; r < rounds; r++) {
                List<NewTopic> topics = new ArrayList<>(perRound);
                for (int i = 0; i < perRound; i++) {
                    topics.add(new NewTopic("churn-" + r + "-" + i, partitions, (short) 1));
                }
                admin.createTopics(topics).all().get();
                List<Future<?>> sent = new ArrayList<>();
                for (NewTopic t : topics) {
                    for (int p = 0; p < partitions; p++) {
                        sent.add(producer.send(new ProducerRecord<>(t.name(), p, null, value)));
                    }
                }
                for (Future<?> f : sent) {
                    f.get(); // a topic just created may need a metadata refresh: the producer retries
                }
                admin.deleteTopics(topics.stream().map(NewTopic::name).toList()).all().get();
            }
        }
        System.out.printf("created, wrote and deleted %d topics of %d partitions in %.1f s%n", rounds * perRound,
                partitions, (System.nanoTime() - started) / 1e9);
    }
}
