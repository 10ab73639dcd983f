package io.s3stream.benchmarks;

import io.s3stream.kafka.shell.KafkaShell;
import io.s3stream.kafka.shell.config.ShellConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.Stores;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Kafka Streams restore time from a changelog before and after kafka-shell compacts it: an in-process shell on a local
 * WAL file and {@code file://} objects; a store's changelog topic ({@code restore-store-changelog}) is written with
 * {@code records} records of {@code valueBytes} over {@code keys} keys while its policy is {@code delete}; then a
 * Streams application with empty local state restores its in-memory store from it (timed by a
 * {@link StateRestoreListener}); then the topic is switched to {@code compact}, compacted, and the restore runs again.
 * The shell is restarted before each restore so that reads come from objects, not from its log cache.
 *
 * <pre>java -Xmx6g -cp benchmarks/target/benchmarks.jar io.s3stream.benchmarks.StreamsRestorePerf \
 *     [records=10000000] [keys=1000000] [valueBytes=100] [dir]</pre>
 */
public final class StreamsRestorePerf {
    private static final String APP = "restore";
    private static final String CHANGELOG = APP + "-store-changelog";

    private StreamsRestorePerf() {
    }

    private static KafkaShell start(Path dir) {
        Map<String, String> m = new HashMap<>();
        m.put("listeners", "PLAINTEXT://127.0.0.1:19192");
        m.put("s3stream.data.dir", dir.resolve("data").toString());
        m.put("s3stream.object.store", dir.resolve("objects").toUri().toString());
        m.put("s3stream.compaction.interval.ms", "2000");
        m.put("s3stream.key.compaction.map.bytes", Long.toString(64L << 20));
        m.put("group.initial.rebalance.delay.ms", "0");
        return KafkaShell.start(ShellConfig.of(m));
    }

    /** Restores the store from the changelog with empty local state; returns {seconds, records restored}. */
    private static double[] restore(String bootstrap, Path stateDir) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, APP);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        StreamsBuilder b = new StreamsBuilder();
        b.table("restore-input", Consumed.with(Serdes.Bytes(), Serdes.Bytes()),
                Materialized.as(Stores.inMemoryKeyValueStore("store")));
        AtomicLong started = new AtomicLong();
        AtomicLong ended = new AtomicLong();
        AtomicLong restored = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
            streams.setGlobalStateRestoreListener(new StateRestoreListener() {
                @Override
                public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                    started.compareAndSet(0, System.nanoTime());
                }

                @Override
                public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
                    restored.addAndGet(n);
                }

                @Override
                public void onRestoreEnd(TopicPartition tp, String store, long total) {
                    ended.set(System.nanoTime());
                    done.countDown();
                }
            });
            streams.start();
            if (!done.await(10, TimeUnit.MINUTES)) {
                throw new IllegalStateException("restore did not end in 10 minutes");
            }
        }
        return new double[] {(ended.get() - started.get()) / 1e9, restored.get()};
    }

    public static void main(String[] args) throws Exception {
        long records = args.length > 0 ? Long.parseLong(args[0]) : 10_000_000;
        int keys = args.length > 1 ? Integer.parseInt(args[1]) : 1_000_000;
        int valueBytes = args.length > 2 ? Integer.parseInt(args[2]) : 100;
        Path dir = args.length > 3 ? Path.of(args[3]) : Files.createTempDirectory("streams-restore");
        KafkaShell shell = start(dir);
        String bootstrap = shell.bootstrapServers();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic("restore-input", 1, (short) 1),
                    new NewTopic(CHANGELOG, 1, (short) 1).configs(Map.of("cleanup.policy", "delete")))).all().get();
        }
        long writeStart = System.nanoTime();
        Random random = new Random(42);
        byte[] value = new byte[valueBytes];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ProducerConfig.LINGER_MS_CONFIG, 10,
                ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024,
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName(),
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName()))) {
            for (long i = 0; i < records; i++) {
                random.nextBytes(value);
                producer.send(new ProducerRecord<>(CHANGELOG, 0,
                        ("key-" + random.nextInt(keys)).getBytes(StandardCharsets.UTF_8), value.clone()));
            }
        }
        System.out.printf("wrote %,d records over %,d keys (%d-byte values) in %.1f s%n", records, keys, valueBytes,
                (System.nanoTime() - writeStart) / 1e9);
        shell.close();
        shell = start(dir);
        double[] before = restore(bootstrap, dir.resolve("state-before"));
        System.out.printf("restore before compaction: %.2f s, %,d records%n", before[0], (long) before[1]);

        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, CHANGELOG);
            admin.incrementalAlterConfigs(Map.of(topic, List.of(
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("min.cleanable.dirty.ratio", "0.01"),
                            AlterConfigOp.OpType.SET)))).all().get();
        }
        long compactStart = System.nanoTime();
        long runs = 0;
        long lastChange = compactStart;
        while (runs == 0 || System.nanoTime() - lastChange < 6_000_000_000L) { // done: no new run for 3 rounds
            Thread.sleep(100);
            long now = shell.metrics().compaction().keyCompactionRuns();
            if (now != runs) {
                runs = now;
                lastChange = System.nanoTime();
            }
        }
        var c = shell.metrics().compaction();
        System.out.printf("compaction: %d run(s), %.1f MiB rewritten into %.1f MiB, done %.1f s after the policy change%n",
                c.keyCompactionRuns(), c.keyCompactionBytesIn() / 1048576.0, c.keyCompactionBytesOut() / 1048576.0,
                (lastChange - compactStart) / 1e9);
        shell.close();
        shell = start(dir);
        double[] after = restore(bootstrap, dir.resolve("state-after"));
        System.out.printf("restore after compaction: %.2f s, %,d records (%.1fx faster)%n", after[0], (long) after[1],
                before[0] / after[0]);
        shell.close();
    }
}
