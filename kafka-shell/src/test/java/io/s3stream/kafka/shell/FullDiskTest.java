package io.s3stream.kafka.shell;

import io.s3stream.kafka.shell.config.ShellConfig;
import io.s3stream.testing.SmallFileSystem;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The scenario on a real file system of 96 MiB holding the shell's data directory: its WAL file and its
 * {@code file://} objects. A topic fills the disk; uploads fail; deleting that topic (a user's first remedy) answers
 * within the Admin call's timeout, its space comes back, and the other topic's acknowledged records are uploaded by
 * themselves and read back after a restart.
 */
@Timeout(240)
class FullDiskTest {
    @TempDir
    Path tmp;

    private static KafkaShell shell(Path dir) {
        return KafkaShell.start(ShellConfig.of(settings(dir)));
    }

    /** Small WAL, caches and uploads, quick compaction and deletion: a few dozen MiB fill a small store. */
    static Map<String, String> settings(Path dir) {
        Map<String, String> m = new HashMap<>();
        m.put("listeners", "PLAINTEXT://127.0.0.1:0");
        m.put("s3stream.data.dir", dir.toString());
        m.put("s3stream.wal", "blockdev://" + dir.resolve("wal.img") + "?capacity=24MiB");
        m.put("s3stream.log.cache.bytes", Long.toString(48L << 20));
        m.put("s3stream.block.cache.bytes", Long.toString(4L << 20));
        m.put("s3stream.upload.threshold.bytes", Long.toString(2L << 20));
        m.put("s3stream.max.batch.bytes", Long.toString(1L << 20));
        m.put("s3stream.upload.interval.ms", "500");
        m.put("s3stream.compaction.interval.ms", "500");
        m.put("s3stream.object.deletion.grace.period.ms", "1000");
        return m;
    }

    private static KafkaProducer<byte[], byte[]> producer(KafkaShell shell) {
        return new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, shell.bootstrapServers(),
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName(),
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName(),
                ProducerConfig.LINGER_MS_CONFIG, 5, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000));
    }

    /** Sends {@code records} records of 16 KiB to partition 0, record i filled with byte i, and waits for the acks. */
    static void produce(KafkaShell shell, String topic, int records) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = producer(shell)) {
            List<Future<?>> acks = new ArrayList<>();
            for (int i = 0; i < records; i++) {
                byte[] value = new byte[16 * 1024];
                java.util.Arrays.fill(value, (byte) i);
                acks.add(p.send(new ProducerRecord<>(topic, 0, null, value)));
            }
            for (Future<?> f : acks) {
                f.get(120, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void deletingTheTopicThatFilledTheDiskHealsIt() throws Exception {
        try (SmallFileSystem fs = SmallFileSystem.mount(tmp.resolve("fs"), 96)) {
            Path dir = Files.createDirectories(fs.path().resolve("kafka-shell"));
            KafkaShell shell = shell(dir);
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, shell.bootstrapServers(),
                    AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000))) {
                admin.createTopics(List.of(new NewTopic("big", 1, (short) 1), new NewTopic("small", 1, (short) 1)))
                        .all().get();
                produce(shell, "big", 2_560); // 40 MiB, uploaded
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (shell.metrics().uploads().bytes() < (40L << 20) && System.nanoTime() < deadline) {
                    Thread.sleep(100);
                }
                // Other files keep the disk full, leaving 1 MiB: compaction may free some space meanwhile (it merges
                // the uploaded objects and deletes its inputs), which they take at once.
                SmallFileSystem.Filler filler = fs.keepFull(1L << 20);
                Thread.sleep(500);
                long uploaded = shell.metrics().uploads().bytes();
                produce(shell, "small", 256); // 4 MiB: acknowledged (in the WAL), its upload fails for lack of space
                Thread.sleep(2_000);
                // Usually the upload of those records is failing now; compaction can free space quickly enough for it to
                // get through first (seen in CI), so this is reported, not asserted: the deletion must heal either way.
                System.getLogger(FullDiskTest.class.getName()).log(System.Logger.Level.INFO,
                        "uploaded while the disk was full: " + (shell.metrics().uploads().bytes() - uploaded) + " bytes");
                filler.close();
                deleteAndAwaitSpace(admin, fs, "big");
                produce(shell, "small", 64); // and the shell takes new records
            }
            shell.close();
            KafkaShell again = shell(dir);
            try {
                assertReadBack(again, "small", 256, 64);
            } finally {
                again.close();
            }
        }
    }

    /**
     * Deletes {@code topic}, which must answer within the Admin call's 30 s, and waits up to 60 s for more than 30 MiB
     * of {@code fs} to come back (its objects deleted).
     */
    static void deleteAndAwaitSpace(Admin admin, SmallFileSystem fs, String topic) throws Exception {
        long freeBefore = fs.usableBytes();
        long started = System.nanoTime();
        admin.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
        long deleteMs = (System.nanoTime() - started) / 1_000_000;
        assertThat(deleteMs).as("DeleteTopics answered in %d ms", deleteMs).isLessThan(30_000);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (fs.usableBytes() < freeBefore + (30L << 20) && System.nanoTime() < deadline) {
            Thread.sleep(200);
        }
        assertThat(fs.usableBytes()).as("the deleted topic's objects are gone").isGreaterThan(freeBefore + (30L << 20));
    }

    /**
     * Reads partition 0 of {@code topic} from the start: {@code first} records then {@code second} more, each filled
     * as {@link #produce} fills them, in order, none missing.
     */
    static void assertReadBack(KafkaShell shell, String topic, int first, int second) {
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, shell.bootstrapServers(),
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName()))) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            int read = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (read < first + second && System.nanoTime() < deadline) {
                for (var r : c.poll(Duration.ofMillis(200))) {
                    assertThat(r.offset()).isEqualTo(read);
                    assertThat(r.value()[0]).isEqualTo((byte) (read < first ? read : read - first));
                    read++;
                }
            }
            assertThat(read).isEqualTo(first + second);
        }
    }
}
