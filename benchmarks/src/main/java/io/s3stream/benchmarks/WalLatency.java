package io.s3stream.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WalRecordFormat;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.spi.WriteAheadLogProvider;

import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Append latency and throughput of any WAL through the SPI, outside JMH (an open-loop rate is not a JMH shape).
 *
 * <pre>
 * # open loop: appends issued at a fixed rate; latency from the intended issue time to the acknowledgement, so a
 * # stall is charged to every append it delays (no coordinated omission)
 * java -cp benchmarks/target/benchmarks.jar io.s3stream.benchmarks.WalLatency \
 *     wal=fsx:///mnt/fsx/bench rate=10000 bytes=4096 seconds=20 warmup=5
 * # closed loop: a window of appends in flight, as fast as the WAL takes them
 * java -cp ... WalLatency wal=blockdev:///var/tmp/wal.img?capacity=1GiB mode=throughput bytes=65536 window=64
 * # a WAL in object storage needs the engine's store: store=s3://bucket/prefix?endpoint=...
 * </pre>
 * Prints one line of {@code key=value} pairs (the scripts in benchmarks/compare parse it). The WAL is trimmed to the
 * acknowledged position as the engine does after each upload ({@code trimMs}: every second by default at a fixed
 * rate, about one 32 MiB upload per second at 10,000 appends/s of 4 KiB; every 50 ms in throughput mode, where a
 * longer interval would cap throughput at one capacity per interval).
 */
public final class WalLatency {
    private WalLatency() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("arguments are key=value, not " + arg);
            }
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        URI uri = URI.create(required(a, "wal"));
        String mode = a.getOrDefault("mode", "rate");
        int bytes = Integer.parseInt(a.getOrDefault("bytes", "4096"));
        int seconds = Integer.parseInt(a.getOrDefault("seconds", "20"));
        int warmup = Integer.parseInt(a.getOrDefault("warmup", "5"));
        Path dir = Files.createTempDirectory("wal-latency-");
        ObjectStore store = a.containsKey("store") ? ObjectStores.open(a.get("store")) : null;
        WalContext context = new WalContext(1, System.currentTimeMillis(), dir, Duration.ofSeconds(60));
        if (store != null) {
            context = context.withObjectStores(store, u -> ObjectStores.open(u.toString()));
        }
        WriteAheadLogProvider provider = ServiceLoader.load(WriteAheadLogProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.scheme().equals(uri.getScheme())).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no WAL module for " + uri.getScheme()));
        try (WriteAheadLog wal = provider.open(uri, context)) {
            wal.recover((position, next, record) -> record.release());
            // Valid engine records (one stream, contiguous offsets), as the engine's sequencer appends them: a WAL that
            // builds objects from its records (objectwal) parses them.
            byte[] payload = new byte[Math.max(0, bytes - WalRecordFormat.HEADER_SIZE)];
            new java.util.Random(1).nextBytes(payload);
            Records record = new Records(ByteBuffer.wrap(payload));
            AtomicLong acked = new AtomicLong();
            long trimEvery = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(a.getOrDefault("trimMs",
                    mode.equals("throughput") ? "50" : "1000")));
            Thread trimmer = Thread.ofPlatform().daemon().start(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    LockSupport.parkNanos(trimEvery);
                    long to = acked.get();
                    if (to > 0) {
                        wal.trim(to);
                    }
                }
            });
            String result = mode.equals("throughput")
                    ? throughput(wal, record, Integer.parseInt(a.getOrDefault("window", "64")), warmup, seconds, acked)
                    : openLoop(wal, record, Integer.parseInt(required(a, "rate")), warmup, seconds, acked);
            trimmer.interrupt();
            System.out.println("wal=" + uri + " mode=" + mode + " bytes=" + bytes + " " + result + " description=\""
                    + wal.description() + "\"");
        } finally {
            if (store != null) {
                store.close();
            }
        }
    }

    private static String required(Map<String, String> a, String key) {
        String v = a.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing " + key + "=...");
        }
        return v;
    }

    /** The next valid record: stream 1, epoch 0, one record per offset. */
    private static final class Records {
        private final ByteBuffer payload;
        private long nextOffset;

        Records(ByteBuffer payload) {
            this.payload = payload;
        }

        ByteBuf next() {
            return WalRecordFormat.encode(PooledByteBufAllocator.DEFAULT, 1, 0, nextOffset++, 1, payload.duplicate());
        }
    }

    private static String openLoop(WriteAheadLog wal, Records record, int rate, int warmup, int seconds,
                                   AtomicLong acked) throws Exception {
        long interval = TimeUnit.SECONDS.toNanos(1) / rate;
        int total = rate * (warmup + seconds);
        int measuredFrom = rate * warmup;
        long[] latency = new long[total];
        CompletableFuture<?>[] futures = new CompletableFuture<?>[total];
        long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(50);
        for (int i = 0; i < total; i++) {
            long intended = start + i * interval;
            long wait;
            while ((wait = intended - System.nanoTime()) > 0) {
                if (wait > 50_000) {
                    LockSupport.parkNanos(wait - 20_000);
                } else {
                    Thread.onSpinWait();
                }
            }
            int index = i;
            ByteBuf buf = record.next();
            futures[i] = wal.append(buf).whenComplete((WalAppendResult r, Throwable e) -> {
                buf.release();
                latency[index] = e == null ? System.nanoTime() - intended : Long.MAX_VALUE;
                if (r != null) {
                    acked.accumulateAndGet(r.nextPosition(), Math::max);
                }
            });
        }
        CompletableFuture.allOf(futures).get(5, TimeUnit.MINUTES);
        long elapsed = System.nanoTime() - start;
        long[] measured = Arrays.copyOfRange(latency, measuredFrom, total);
        long failed = Arrays.stream(measured).filter(v -> v == Long.MAX_VALUE).count();
        Arrays.sort(measured);
        return String.format(Locale.ROOT, "rate=%d achieved=%.0f n=%d failed=%d p50_ms=%.3f p99_ms=%.3f "
                        + "p999_ms=%.3f max_ms=%.3f", rate, total / (elapsed / 1e9), measured.length, failed,
                pct(measured, 0.50), pct(measured, 0.99), pct(measured, 0.999),
                measured[measured.length - 1 - (int) failed] / 1e6);
    }

    private static double pct(long[] sorted, double q) {
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)] / 1e6;
    }

    private static String throughput(WriteAheadLog wal, Records record, int window, int warmup, int seconds,
                                     AtomicLong acked) throws Exception {
        Semaphore inFlight = new Semaphore(window);
        AtomicLong done = new AtomicLong();
        long warmEnd = System.nanoTime() + TimeUnit.SECONDS.toNanos(warmup);
        long end = warmEnd + TimeUnit.SECONDS.toNanos(seconds);
        long countedFrom = -1;
        long measureStart = 0;
        while (System.nanoTime() < end) {
            if (countedFrom < 0 && System.nanoTime() >= warmEnd) {
                countedFrom = done.get();
                measureStart = System.nanoTime();
            }
            inFlight.acquire();
            ByteBuf buf = record.next();
            wal.append(buf).whenComplete((r, e) -> {
                buf.release();
                inFlight.release();
                if (e == null) {
                    done.incrementAndGet();
                    acked.accumulateAndGet(r.nextPosition(), Math::max);
                }
            });
        }
        long appends = done.get() - countedFrom;
        double secs = (System.nanoTime() - measureStart) / 1e9;
        inFlight.acquire(window);
        return String.format(Locale.ROOT, "window=%d appends_s=%.0f mib_s=%.1f", window, appends / secs,
                appends * (double) (record.payload.remaining() + WalRecordFormat.HEADER_SIZE) / secs / (1 << 20));
    }
}
