package io.s3stream.kafka.shell;

import io.s3stream.kafka.shell.log.ReadRecords;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.RequestHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataOutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fetch responses are sent from the storage library's buffers, which stay allocated until the connection has written
 * them: every path must give them back. Consumers read everything byte for byte (plaintext and TLS), long polls read
 * and discard while they wait for more, a response over its byte budget drops partitions' reads, and raw clients close
 * their connection with responses queued or still being written; then all of it again with no memory allowed to be
 * held (every read copied to the heap). Afterwards no read holds library memory.
 */
@Timeout(120)
class FetchHeldMemoryTest {
    private static final int RECORDS = 3_000;

    @Test
    void everyFetchGivesTheLibrarysMemoryBack(@TempDir Path dir) throws Exception {
        try (ShellFixture fx = new ShellFixture()) {
            exercise(fx, Map.of(), fx.shell.port());
        }
        Path keyStore = TlsTest.keyStore(dir, "broker");
        Path trust = TlsTest.trustStore(dir, "broker");
        try (ShellFixture fx = new ShellFixture(Map.of("listeners", "SSL://127.0.0.1:0", "ssl.keystore.location",
                keyStore.toString(), "ssl.keystore.password", TlsTest.PASSWORD))) {
            exercise(fx, new HashMap<>(TlsTest.sslClient(trust)), -1);
        }
        // With no memory allowed to wait in the library's buffers, every read is copied: same answers.
        long copiedBefore = ReadRecords.copiedReads();
        try (ShellFixture fx = new ShellFixture(Map.of("s3stream.kafka.fetch.held.max.bytes", "0"))) {
            exercise(fx, Map.of(), fx.shell.port());
        } finally {
            ReadRecords.maxHeldBytes(64L << 20);
        }
        assertThat(ReadRecords.copiedReads()).isGreaterThan(copiedBefore);
        long deadline = System.currentTimeMillis() + 10_000;
        while (ReadRecords.heldReads() != 0 && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        assertThat(ReadRecords.heldReads()).as("reads still holding library memory").isZero();
        assertThat(ReadRecords.heldBytes()).isZero();
    }

    /** Produces, then reads in every way that ends a fetch; {@code rawPort} > 0 also runs the abandoning clients. */
    private static void exercise(ShellFixture fx, Map<String, Object> client, int rawPort) throws Exception {
        String topic = "held-" + Uuid.randomUuid();
        Map<String, Object> admin = new HashMap<>(client);
        admin.put("bootstrap.servers", fx.bootstrap());
        try (Admin a = Admin.create(admin)) {
            a.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
        }
        String value = "v".repeat(1000);
        try (KafkaProducer<String, String> p = fx.producer(client)) {
            for (int i = 0; i < RECORDS; i++) {
                p.send(new ProducerRecord<>(topic, i % 2, null, i + ":" + value));
            }
            p.flush();
        }
        // Everything, byte for byte, in order per partition; small responses so that budgets drop partitions' reads.
        Map<String, Object> small = new HashMap<>(client);
        small.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 20_000);
        small.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 16_384);
        try (KafkaConsumer<String, String> c = fx.consumer(null, small)) {
            List<TopicPartition> both = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
            c.assign(both);
            c.seekToBeginning(both);
            Map<Integer, List<Integer>> seen = new LinkedHashMap<>();
            long deadline = System.currentTimeMillis() + 60_000;
            int count = 0;
            while (count < RECORDS && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    String[] kv = r.value().split(":", 2);
                    assertThat(kv[1]).isEqualTo(value);
                    seen.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(Integer.parseInt(kv[0]));
                    count++;
                }
            }
            assertThat(count).isEqualTo(RECORDS);
            seen.forEach((partition, ids) -> assertThat(ids).isSorted().allMatch(i -> i % 2 == partition));
        }
        // A long poll at the end of the log: each attempt reads, finds too little and waits; trickled records wake it.
        Map<String, Object> waiting = new HashMap<>(client);
        waiting.put(ConsumerConfig.FETCH_MIN_BYTES_CONFIG, 1 << 20);
        waiting.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 300);
        try (KafkaConsumer<String, String> c = fx.consumer(null, waiting);
             KafkaProducer<String, String> p = fx.producer(client)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seek(tp, RECORDS / 2 - 10);
            int got = 0;
            for (int i = 0; i < 20; i++) {
                p.send(new ProducerRecord<>(topic, 0, null, "late-" + i));
                got += c.poll(Duration.ofMillis(100)).count();
            }
            p.flush();
            long deadline = System.currentTimeMillis() + 10_000;
            while (got < 30 && System.currentTimeMillis() < deadline) {
                got += c.poll(Duration.ofMillis(100)).count();
            }
            assertThat(got).isEqualTo(30);
        }
        if (rawPort > 0) {
            abandon(rawPort, topic);
        }
    }

    /**
     * Clients that pipeline large fetches and close without reading: their responses are queued or half written
     * (a small receive buffer) when the connection goes.
     */
    private static void abandon(int port, String topic) throws Exception {
        for (int client = 0; client < 5; client++) {
            try (Socket s = new Socket()) {
                s.setReceiveBufferSize(4096);
                s.connect(new java.net.InetSocketAddress("127.0.0.1", port));
                DataOutputStream out = new DataOutputStream(s.getOutputStream());
                for (int i = 0; i < 8; i++) {
                    Map<TopicPartition, FetchRequest.PartitionData> partitions = new LinkedHashMap<>();
                    for (int p = 0; p < 2; p++) {
                        partitions.put(new TopicPartition(topic, p), new FetchRequest.PartitionData(Uuid.ZERO_UUID,
                                0, -1, 1 << 20, Optional.empty()));
                    }
                    FetchRequest request = FetchRequest.Builder.forConsumer((short) 12, 0, 1, partitions)
                            .setMaxBytes(4 << 20).build((short) 12);
                    ByteBuffer bytes = request.serializeWithHeader(new RequestHeader(ApiKeys.FETCH, (short) 12,
                            "abandoning", i));
                    out.writeInt(bytes.remaining());
                    out.write(bytes.array(), bytes.arrayOffset() + bytes.position(), bytes.remaining());
                }
                out.flush();
                Thread.sleep(client * 40L); // closed at different points of the answers
            }
        }
    }
}
