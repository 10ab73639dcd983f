package io.s3stream.benchmarks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.wal.blockdev.internal.BlockDeviceWalProvider;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * A main-method benchmark (JMH is not worth its annotation processing for a handful of wall-clock runs): append
 * throughput with many concurrent appenders per record size and in-flight depth, open-loop latency percentiles at
 * fixed rates (measured from the intended start, so a stall is not hidden), and recovery scan speed. Each figure is
 * the median of three short runs. Not a test: run it by hand next to fio (see the module README).
 *
 * <pre>java --enable-native-access=ALL-UNNAMED -cp benchmarks/target/benchmarks.jar \
 *     io.s3stream.benchmarks.BlockDeviceWalBenchmark /path/wal.img [seconds] [all|throughput|latency|recovery]</pre>
 */
public final class BlockDeviceWalBenchmark {
    private static final long CAPACITY = 512L * 1024 * 1024;
    private static double seconds = 2;

    private BlockDeviceWalBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        Path file = Path.of(args[0]);
        if (args.length > 1) {
            seconds = Double.parseDouble(args[1]);
        }
        String only = args.length > 2 ? args[2] : "all";
        if (only.equals("all") || only.equals("throughput")) {
            for (int size : new int[]{1024, 4096, 65536}) {
                for (int depth : new int[]{1, 2, 4}) {
                    double[] mbps = new double[3];
                    double[] ops = new double[3];
                    for (int rep = 0; rep < 3; rep++) {
                        double[] r = throughput(file, size, depth, 16, 8);
                        mbps[rep] = r[0];
                        ops[rep] = r[1];
                    }
                    System.out.printf(Locale.ROOT, "throughput record=%dB inflight=%d appenders=16x8: %.1f MB/s, "
                            + "%.0f appends/s (median of %s MB/s)%n", size, depth, median(mbps), median(ops),
                            Arrays.toString(round(mbps)));
                }
            }
        }
        if (only.equals("all") || only.equals("latency")) {
            for (int rate : new int[]{1000, 10_000}) {
                for (int depth : new int[]{1, 2}) {
                    double[][] reps = new double[3][];
                    for (int rep = 0; rep < 3; rep++) {
                        reps[rep] = latency(file, rate, depth);
                    }
                    double[] p = new double[5];
                    for (int i = 0; i < 5; i++) {
                        double[] col = {reps[0][i], reps[1][i], reps[2][i]};
                        p[i] = median(col);
                    }
                    System.out.printf(Locale.ROOT, "latency 1KiB at %d/s inflight=%d: p50 %.0f us, p90 %.0f us, "
                            + "p99 %.0f us, p99.9 %.0f us, max %.0f us (medians of 3)%n", rate, depth, p[0], p[1],
                            p[2], p[3], p[4]);
                }
            }
        }
        if (only.equals("all") || only.equals("sync")) {
            for (int size : new int[]{1024, 4096}) {
                double[][] reps = new double[3][];
                for (int rep = 0; rep < 3; rep++) {
                    reps[rep] = closedLoop(file, size);
                }
                double[] p = new double[5];
                for (int i = 0; i < 5; i++) {
                    p[i] = median(new double[]{reps[0][i], reps[1][i], reps[2][i]});
                }
                System.out.printf(Locale.ROOT, "one appender, append().get() of %dB (closed loop, like fio QD1): "
                        + "p50 %.0f us, p90 %.0f us, p99 %.0f us, p99.9 %.0f us, %.0f appends/s (medians of 3)%n",
                        size, p[0], p[1], p[2], p[3], p[4]);
            }
        }
        if (only.equals("all") || only.equals("recovery")) {
            double[] mbps = new double[3];
            for (int rep = 0; rep < 3; rep++) {
                mbps[rep] = recovery(file);
            }
            System.out.printf(Locale.ROOT, "recovery scan: %.0f MB/s (median of %s)%n", median(mbps),
                    Arrays.toString(round(mbps)));
        }
    }

    /** The WAL through its SPI provider, as the engine opens it; earlier records are recovered and dropped. */
    private static WriteAheadLog open(Path file, int depth, long epoch) {
        WriteAheadLog wal = openRaw(file, depth, epoch);
        wal.recover((p, n, b) -> b.release());
        return wal;
    }

    private static WriteAheadLog openRaw(Path file, int depth, long epoch) {
        URI uri = URI.create("blockdev://" + file.toAbsolutePath().toUri().getRawPath() + "?capacity=" + CAPACITY
                + "&inflight=" + depth);
        return new BlockDeviceWalProvider().open(uri, new WalContext(1, epoch, Path.of("target"), Duration.ofSeconds(2)));
    }

    private static ByteBuf buffer(byte[] data) {
        ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(data.length);
        buf.writeBytes(data);
        return buf;
    }

    private static long epoch = System.currentTimeMillis();

    /** Returns {MB/s, appends/s}. */
    static double[] throughput(Path file, int size, int depth, int threads, int window) throws Exception {
        WriteAheadLog wal = open(file, depth, ++epoch);
        AtomicLong ackedNext = new AtomicLong();
        AtomicLong count = new AtomicLong();
        long warmupEnd = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
        long end = warmupEnd + (long) (seconds * 1e9);
        long[] measured = new long[2];
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            workers.add(Thread.ofPlatform().start(() -> {
                Semaphore permits = new Semaphore(window);
                ByteBuf buf = buffer(new byte[size]);
                try {
                    while (System.nanoTime() < end) {
                        permits.acquireUninterruptibly();
                        CompletableFuture<WalAppendResult> f = wal.append(buf); // shared: the WAL only reads it
                        f.whenComplete((r, e) -> {
                            permits.release();
                            if (r != null) {
                                ackedNext.accumulateAndGet(r.nextPosition(), Math::max);
                                if (System.nanoTime() > warmupEnd) {
                                    count.incrementAndGet();
                                }
                            }
                        });
                    }
                    permits.acquireUninterruptibly(window);
                } finally {
                    buf.release();
                }
            }));
        }
        Thread trimmer = Thread.ofPlatform().start(() -> {
            while (System.nanoTime() < end + TimeUnit.SECONDS.toNanos(1)) {
                wal.trim(ackedNext.get());
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            }
        });
        for (Thread w : workers) {
            w.join();
        }
        measured[0] = count.get();
        trimmer.interrupt();
        trimmer.join();
        wal.close();
        double ops = measured[0] / seconds;
        return new double[]{ops * size / 1e6, ops};
    }

    /** Returns {p50, p90, p99, p99.9, max} in microseconds. */
    static double[] latency(Path file, int rate, int depth) throws Exception {
        WriteAheadLog wal = open(file, depth, ++epoch);
        ByteBuf buf = buffer(new byte[1024]);
        long interval = 1_000_000_000L / rate;
        int warmup = rate / 2;
        int n = (int) (rate * seconds);
        long[] latencies = new long[n];
        AtomicLong ackedNext = new AtomicLong();
        CompletableFuture<?>[] all = new CompletableFuture<?>[n];
        long start = System.nanoTime();
        for (int i = -warmup; i < n; i++) {
            long intended = start + (i + warmup) * interval;
            while (System.nanoTime() < intended) {
                if (intended - System.nanoTime() > 60_000) {
                    LockSupport.parkNanos(intended - System.nanoTime() - 50_000);
                }
            }
            int index = i;
            CompletableFuture<WalAppendResult> f = wal.append(buf);
            CompletableFuture<WalAppendResult> done = f.whenComplete((r, e) -> {
                if (index >= 0) {
                    latencies[index] = System.nanoTime() - intended;
                }
                if (r != null) {
                    ackedNext.accumulateAndGet(r.nextPosition(), Math::max);
                }
            });
            if (index >= 0) {
                all[index] = done;
            }
            if ((i & 1023) == 0) {
                wal.trim(ackedNext.get());
            }
        }
        CompletableFuture.allOf(all).get(60, TimeUnit.SECONDS);
        wal.close();
        buf.release();
        Arrays.sort(latencies);
        return new double[]{latencies[n / 2] / 1e3, latencies[(int) (n * 0.9)] / 1e3, latencies[(int) (n * 0.99)] / 1e3,
                latencies[(int) (n * 0.999)] / 1e3, latencies[n - 1] / 1e3};
    }

    /** One thread, one append at a time: {p50, p90, p99, p99.9 in us, appends/s}. */
    static double[] closedLoop(Path file, int size) throws Exception {
        WriteAheadLog wal = open(file, 1, ++epoch);
        ByteBuf buf = buffer(new byte[size]);
        long warm = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
        while (System.nanoTime() < warm) {
            wal.append(buf).get();
        }
        long[] lat = new long[1 << 20];
        int n = 0;
        long t0 = System.nanoTime();
        long end = t0 + (long) (seconds * 1e9);
        long last = 0;
        while (System.nanoTime() < end && n < lat.length) {
            long s = System.nanoTime();
            last = wal.append(buf).get().nextPosition();
            lat[n++] = System.nanoTime() - s;
            if ((n & 255) == 0) {
                wal.trim(last);
            }
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        buf.release();
        wal.close();
        long[] l = Arrays.copyOf(lat, n);
        Arrays.sort(l);
        return new double[]{l[n / 2] / 1e3, l[(int) (n * 0.9)] / 1e3, l[(int) (n * 0.99)] / 1e3,
                l[(int) (n * 0.999)] / 1e3, n / secs};
    }

    /** Fills most of the ring with 4 KiB records, reopens, and times recover(). Returns MB/s of WAL scanned. */
    static double recovery(Path file) throws Exception {
        WriteAheadLog wal = open(file, 4, ++epoch);
        wal.trim(Long.MAX_VALUE).get();
        ByteBuf buf = buffer(new byte[4000]);
        long target = CAPACITY * 3 / 4;
        long first = wal.append(buf).get().walPosition();
        AtomicLong lastNext = new AtomicLong();
        Semaphore permits = new Semaphore(256);
        while (lastNext.get() - first < target) {
            permits.acquireUninterruptibly();
            wal.append(buf).whenComplete((x, e) -> {
                permits.release();
                if (x != null) {
                    lastNext.accumulateAndGet(x.nextPosition(), Math::max);
                }
            });
        }
        permits.acquireUninterruptibly(256);
        long last = lastNext.get();
        buf.release();
        wal.close();
        long t0 = System.nanoTime();
        WriteAheadLog reopened = openRaw(file, 1, ++epoch);
        var result = reopened.recover((p, n, b) -> b.release());
        double secs = (System.nanoTime() - t0) / 1e9;
        reopened.trim(Long.MAX_VALUE).get();
        reopened.close();
        return (last - first) / 1e6 / secs + 0 * result.records();
    }

    private static double median(double[] v) {
        double[] c = v.clone();
        Arrays.sort(c);
        return c[c.length / 2];
    }

    private static double[] round(double[] v) {
        return Arrays.stream(v).map(x -> Math.round(x * 10) / 10.0).toArray();
    }
}
