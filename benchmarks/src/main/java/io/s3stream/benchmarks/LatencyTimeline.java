package io.s3stream.benchmarks;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Produce at a fixed rate against any Kafka-protocol broker, keeping every record's send time and latency: what
 * ProducerPerformance measures (1 KiB records, {@code acks=all linger.ms=5 batch.size=131072}, send to
 * acknowledgement), but with each slow record's place in time, so a tail can be laid beside what the machine did at
 * that moment ({@code benchmarks/compare/device-stalls.sh} lays it beside a disk probe's stalls).
 *
 * <p>Records are sent on a fixed schedule from the start of the run (a record is due at {@code start + i / rate}),
 * so one stalled send does not push the schedule back, and a send that returns late is still timed from its own call.
 * The first {@code WARMUP_SECONDS} of records are sent and not kept. Each kept record is written to {@code OUT} as
 * one line {@code send_epoch_us latency_us} (wall-clock microseconds, from one reading of the wall clock at the start
 * plus the monotonic clock since); stdout gets one line: {@code rec_s p50_ms p99_ms p999_ms max_ms}.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar io.s3stream.benchmarks.LatencyTimeline \
 *     BOOTSTRAP TOPIC RATE SECONDS WARMUP_SECONDS OUT</pre>
 */
public final class LatencyTimeline {
    private static final int RECORD_BYTES = 1024;

    private LatencyTimeline() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 6) {
            System.err.println("usage: LatencyTimeline BOOTSTRAP TOPIC RATE SECONDS WARMUP_SECONDS OUT");
            System.exit(2);
        }
        String bootstrap = args[0];
        String topic = args[1];
        int rate = Integer.parseInt(args[2]);
        int seconds = Integer.parseInt(args[3]);
        int warmupSeconds = Integer.parseInt(args[4]);
        Path out = Path.of(args[5]);
        if (rate <= 0 || seconds <= 0 || warmupSeconds < 0) {
            throw new IllegalArgumentException("RATE and SECONDS must be positive, WARMUP_SECONDS not negative");
        }

        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cfg.put(ProducerConfig.ACKS_CONFIG, "all");
        cfg.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        cfg.put(ProducerConfig.BATCH_SIZE_CONFIG, 131072);
        cfg.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        cfg.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        byte[] value = new byte[RECORD_BYTES];
        new SplittableRandom(1).nextBytes(value);

        int warmup = rate * warmupSeconds;
        int measured = rate * seconds;
        long[] sentNanos = new long[measured];
        long[] latencyNanos = new long[measured];
        AtomicInteger failed = new AtomicInteger();
        long startNanos;
        long endNanos;
        long epochMicrosAtStart;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(cfg)) {
            startNanos = System.nanoTime();
            epochMicrosAtStart = System.currentTimeMillis() * 1000;
            for (int i = 0; i < warmup + measured; i++) {
                long due = startNanos + (long) ((double) i * 1_000_000_000L / rate);
                for (long wait; (wait = due - System.nanoTime()) > 0; ) {
                    LockSupport.parkNanos(wait);
                }
                long sent = System.nanoTime();
                int kept = i - warmup;
                if (kept >= 0) {
                    sentNanos[kept] = sent;
                }
                producer.send(new ProducerRecord<>(topic, value), (md, e) -> {
                    if (e != null) {
                        failed.incrementAndGet();
                    } else if (kept >= 0) {
                        latencyNanos[kept] = System.nanoTime() - sent;
                    }
                });
            }
            producer.flush();
            endNanos = System.nanoTime();
        }
        if (failed.get() > 0) {
            throw new IllegalStateException(failed.get() + " sends failed");
        }
        try (BufferedWriter w = Files.newBufferedWriter(out)) {
            for (int i = 0; i < measured; i++) {
                w.write(Long.toString(epochMicrosAtStart + (sentNanos[i] - startNanos) / 1000));
                w.write(' ');
                w.write(Long.toString(latencyNanos[i] / 1000));
                w.newLine();
            }
        }
        long[] sorted = latencyNanos.clone();
        Arrays.sort(sorted);
        double keptSeconds = (endNanos - sentNanos[0]) / 1e9;
        System.out.printf("%.0f %.2f %.2f %.2f %.2f%n", measured / keptSeconds, at(sorted, 0.50), at(sorted, 0.99),
                at(sorted, 0.999), sorted[sorted.length - 1] / 1e6);
    }

    private static double at(long[] sorted, double p) {
        return sorted[(int) Math.min(sorted.length - 1, Math.floor(p * sorted.length))] / 1e6;
    }
}
