package io.s3stream.internal.engine;

import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.internal.compaction.Compactor;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectType;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Main-method benchmark (not a test): 1,000 streams write through the engine on {@code file://} for a sustained period
 * with compaction on, trimming to a retention window; prints live objects over time, bytes rewritten by compaction per
 * byte ingested, compaction's memory peak, and the latency of fetching a cold range before and after compaction.
 *
 * <p>It lives in the engine's package so that it can read the compactor's statistics. Usage: {@code java -cp
 * benchmarks/target/benchmarks.jar io.s3stream.internal.engine.CompactionBenchmark [seconds=60] [streams=1000]
 * [bytesPerSecondPerStream=4096] [on|off] [dir]};
 * with {@code off} compaction runs only after the write phase, so the first cold fetch reads uncompacted objects.
 */
public final class CompactionBenchmark {
    private CompactionBenchmark() {
    }

    static StorageConfig config(Path dir, boolean compaction) {
        return StorageConfig.builder().nodeId(1).dataDir(dir).wal("mem://compaction-bench?capacity=512MiB")
                .objectStore(dir.resolve("objects").toUri().toString())
                .logCacheBytes(256L << 20).uploadThresholdBytes(32L << 20).uploadInterval(Duration.ofSeconds(2))
                .compactionEnabled(compaction).compactionInterval(Duration.ofSeconds(5))
                .compactionMaxAge(Duration.ofSeconds(30)).objectDeletionGracePeriod(Duration.ofSeconds(5))
                .streamObjectTargetBytes(8L << 20).compactionMemoryBytes(32L << 20)
                .build();
    }

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 60;
        int streamCount = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
        int rate = args.length > 2 ? Integer.parseInt(args[2]) : 4096;
        boolean compactWhileWriting = args.length <= 3 || !args[3].equals("off");
        Path dir = args.length > 4 ? Path.of(args[4]) : Files.createTempDirectory("compaction-bench");
        long retentionMs = 40_000;
        List<Long> ids = new ArrayList<>();
        long ingested = 0;
        StorageEngine engine = StorageEngine.start(config(dir, compactWhileWriting));
        List<Stream> streams = new ArrayList<>();
        for (int i = 0; i < streamCount; i++) {
            streams.add(engine.createStream(StreamOptions.defaults()).get());
            ids.add(streams.getLast().streamId());
        }
        byte[] payload = new byte[1024];
        new java.util.Random(1).nextBytes(payload);
        Semaphore inflight = new Semaphore(4096);
        long start = System.nanoTime();
        long nextReport = 5_000;
        List<long[]> trimMarks = new ArrayList<>();
        System.out.printf("%6s %8s %6s %6s %12s %12s %8s %10s %14s %12s%n", "t(s)", "objects", "SSOs", "SOs",
                "ingestedMiB", "rewrittenMiB", "ratio", "memPeakMiB", "compactorCpuMs", "processCpuMs");
        long batchesPerSecond = (long) streamCount * rate / payload.length;
        long sent = 0;
        while (true) {
            long elapsedMs = (System.nanoTime() - start) / 1_000_000;
            if (elapsedMs >= seconds * 1000L) {
                break;
            }
            long due = batchesPerSecond * elapsedMs / 1000;
            while (sent < due) {
                Stream s = streams.get((int) (sent % streamCount));
                inflight.acquire();
                s.append(RecordBatch.of(1, ByteBuffer.wrap(payload))).whenComplete((r, e) -> inflight.release());
                sent++;
                ingested += payload.length;
            }
            if (elapsedMs >= nextReport) {
                nextReport += 5_000;
                long[] mark = new long[streamCount + 1];
                mark[0] = elapsedMs;
                for (int i = 0; i < streamCount; i++) {
                    mark[i + 1] = streams.get(i).confirmedOffset();
                }
                trimMarks.add(mark);
                while (!trimMarks.isEmpty() && trimMarks.getFirst()[0] < elapsedMs - retentionMs) {
                    long[] old = trimMarks.removeFirst();
                    for (int i = 0; i < streamCount; i++) {
                        streams.get(i).trim(old[i + 1]);
                    }
                }
                report(engine, elapsedMs, ingested);
            }
            Thread.sleep(5);
        }
        inflight.acquire(4096);
        inflight.release(4096);
        report(engine, (System.nanoTime() - start) / 1_000_000, ingested);
        engine.close();

        // Cold fetches: before compaction (a fresh engine, compaction off, on data compacted only as far as the run
        // got), after a full compaction. Cold = a new engine, so no index or block is cached.
        StorageEngine cold = StorageEngine.start(config(dir, false));
        System.out.println("cold fetch before final compaction: " + coldFetch(cold, ids, 1) + " objects "
                + committed(cold));
        cold.close();
        // Without compaction for comparison: a separate run with compaction off gives the uncompacted figure.
        cold = StorageEngine.start(config(dir, false));
        for (int i = 0; i < 3; i++) {
            cold.compactor().runNow();
        }
        cold.close();
        cold = StorageEngine.start(config(dir, false));
        System.out.println("cold fetch after final compaction:  " + coldFetch(cold, ids, 2) + " objects "
                + committed(cold));
        cold.close();
    }

    private static String committed(StorageEngine engine) {
        List<ObjectMetadata> live = engine.metadataStore().listObjects(ObjectState.COMMITTED).join();
        return live.size() + " (" + live.stream().filter(o -> o.type() == ObjectType.STREAM_SET).count() + " SSOs)";
    }

    private static void report(StorageEngine engine, long elapsedMs, long ingested) {
        List<ObjectMetadata> live = engine.metadataStore().listObjects(ObjectState.COMMITTED).join();
        long ssos = live.stream().filter(o -> o.type() == ObjectType.STREAM_SET).count();
        Compactor.Stats c = engine.compactor().stats();
        long rewritten = c.bytesWritten() + c.bytesCopied();
        System.out.printf("%6.1f %8d %6d %6d %12.1f %12.1f %8.2f %10.1f %14d %12d%n", elapsedMs / 1000.0,
                live.size(), ssos, live.size() - ssos, ingested / 1048576.0, rewritten / 1048576.0,
                ingested == 0 ? 0 : (double) rewritten / ingested, c.memoryPeakBytes() / 1048576.0, compactorCpuMs(),
                processCpuMs());
    }

    /** CPU time of this process so far (ms): the engine's, the writer's and the JIT's. */
    private static long processCpuMs() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime() / 1_000_000;
    }

    /** CPU time the compactor's own thread has used so far (ms; its object-store calls run on other threads). */
    private static long compactorCpuMs() {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("s3stream-compactor")) {
                return threads.getThreadCpuTime(t.threadId()) / 1_000_000;
            }
        }
        return -1;
    }

    /** Median and p99 latency (ms) of fetching the whole live range of 100 streams, 64 KiB at a time. */
    private static String coldFetch(StorageEngine engine, List<Long> ids, long epoch) throws Exception {
        List<Double> ms = new ArrayList<>();
        for (int i = 0; i < Math.min(100, ids.size()); i++) {
            Stream s = engine.openStream(ids.get(i * ids.size() / Math.min(100, ids.size())), epoch)
                    .get(10, TimeUnit.SECONDS);
            long t0 = System.nanoTime();
            FetchResult r = s.fetch(s.startOffset(), s.confirmedOffset(), 64 * 1024).get(30, TimeUnit.SECONDS);
            ms.add((System.nanoTime() - t0) / 1e6);
            r.close();
        }
        ms.sort(Double::compare);
        return String.format("median %.2f ms, p99 %.2f ms over %d streams;", ms.get(ms.size() / 2),
                ms.get((int) (ms.size() * 0.99)), ms.size());
    }
}
