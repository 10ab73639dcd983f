package io.s3stream.benchmarks;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Transactional produce against any Kafka-protocol broker: one producer, transactions of {@code perTxn} records of
 * {@code size} bytes (begin, send, commit, the next begins once the commit returns), the first tenth of the
 * transactions as warm-up. Prints one line: {@code txn_s rec_s mb_s rec_p50_ms rec_p99_ms commit_p50_ms commit_p99_ms
 * txn_p50_ms txn_p99_ms}, where a record's latency is send to acknowledgement, a commit's is commitTransaction, and a
 * transaction's is begin to the commit's return (what an exactly-once pipeline waits per step).
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar io.s3stream.benchmarks.TransactionalProducePerf \
 *     BOOTSTRAP TOPIC TRANSACTIONS PER_TXN SIZE [TXN_ID]</pre>
 */
public final class TransactionalProducePerf {
    private TransactionalProducePerf() {
    }

    public static void main(String[] args) {
        if (args.length < 5) {
            System.err.println("usage: TransactionalProducePerf BOOTSTRAP TOPIC TRANSACTIONS PER_TXN SIZE [TXN_ID]");
            System.exit(2);
        }
        String bootstrap = args[0];
        String topic = args[1];
        int transactions = Integer.parseInt(args[2]);
        int perTxn = Integer.parseInt(args[3]);
        int size = Integer.parseInt(args[4]);
        String txnId = args.length > 5 ? args[5] : "perf-" + System.nanoTime();
        int warmup = Math.max(1, transactions / 10);

        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cfg.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        cfg.put(ProducerConfig.ACKS_CONFIG, "all");
        cfg.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        cfg.put(ProducerConfig.BATCH_SIZE_CONFIG, 131072);
        cfg.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        cfg.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        byte[] value = new byte[size];
        ThreadLocalRandom.current().nextBytes(value);

        int measured = transactions - warmup;
        long[] recordNanos = new long[measured * perTxn];
        long[] commitNanos = new long[measured];
        long[] txnNanos = new long[measured];
        AtomicInteger recorded = new AtomicInteger();
        long startNanos = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(cfg)) {
            producer.initTransactions();
            for (int t = 0; t < transactions; t++) {
                boolean measure = t >= warmup;
                if (t == warmup) {
                    startNanos = System.nanoTime();
                }
                long begin = System.nanoTime();
                producer.beginTransaction();
                for (int i = 0; i < perTxn; i++) {
                    long sent = System.nanoTime();
                    producer.send(new ProducerRecord<>(topic, value), (md, e) -> {
                        if (e != null) {
                            throw new IllegalStateException("send failed", e);
                        }
                        if (measure) {
                            recordNanos[recorded.getAndIncrement()] = System.nanoTime() - sent;
                        }
                    });
                }
                long commit = System.nanoTime();
                producer.commitTransaction();
                long end = System.nanoTime();
                if (measure) {
                    commitNanos[t - warmup] = end - commit;
                    txnNanos[t - warmup] = end - begin;
                }
            }
        }
        double seconds = (System.nanoTime() - startNanos) / 1e9;
        long[] records = Arrays.copyOf(recordNanos, recorded.get());
        System.out.printf("%.1f %.0f %.2f %.2f %.2f %.2f %.2f %.2f %.2f%n", measured / seconds,
                measured * (double) perTxn / seconds, measured * (double) perTxn * size / seconds / (1 << 20),
                percentile(records, 0.50), percentile(records, 0.99), percentile(commitNanos, 0.50),
                percentile(commitNanos, 0.99), percentile(txnNanos, 0.50), percentile(txnNanos, 0.99));
    }

    private static double percentile(long[] nanos, double p) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return sorted.length == 0 ? Double.NaN : sorted[(int) Math.min(sorted.length - 1, Math.floor(p * sorted.length))] / 1e6;
    }
}
