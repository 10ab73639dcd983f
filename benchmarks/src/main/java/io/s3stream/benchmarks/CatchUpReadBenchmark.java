package io.s3stream.benchmarks;

import io.netty.buffer.ByteBuf;
import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.testing.FaultInjectingObjectStore;
import io.s3stream.testing.FaultyObjectStoreProvider;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A main-method harness (wall-clock, minutes of backlog: not a JMH benchmark) for the catch-up figures of
 * {@code cache/README.md}: raw ranged-GET throughput of the store, catch-up read throughput with read-ahead on and
 * off, and the p99 of tail append + tail fetch with and without a catch-up reader. The store is the in-memory store
 * behind {@code faulty://} with a fixed latency injected into every GET ({@code -Dlatency.ms}, default 2).
 */
public final class CatchUpReadBenchmark {
    private static final int BATCH = 64 * 1024;

    private CatchUpReadBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int mib = Integer.getInteger("backlog.mib", 128);
        long latencyMs = Long.getLong("latency.ms", 2);
        String[] modes = System.getProperty("modes", "on,off,on,off").split(",");
        for (int run = 0; run < modes.length; run++) {
            boolean readAhead = modes[run].equals("on");
            boolean last = run >= modes.length - 2;
            String name = "bench-" + UUID.randomUUID();
            StorageConfig config = StorageConfig.builder().nodeId(1)
                    .dataDir(Files.createTempDirectory("s3stream-bench"))
                    .wal("mem://" + name + "-wal?capacity=512MiB").metadata("mem://" + name)
                    .objectStore("faulty://" + name)
                    .logCacheBytes(64L << 20).blockCacheBytes(64L << 20).readAheadBytes(readAhead ? 32L << 20 : 0)
                    .uploadThresholdBytes(8L << 20).objectBlockSizeBytes(512 * 1024).maxBatchBytes(BATCH)
                    .streamObjectThresholdBytes(4L << 20).build();
            try (StreamStorage storage = StreamStorage.open(config)) {
                Stream backlog = storage.createStream(StreamOptions.defaults()).get();
                Stream tail = storage.createStream(StreamOptions.defaults()).get();
                byte[] data = new byte[BATCH];
                Arrays.fill(data, (byte) 7);
                List<CompletableFuture<?>> pending = new ArrayList<>();
                for (int i = 0; i < mib * 16; i++) {
                    pending.add(backlog.append(RecordBatch.of(16, ByteBuffer.wrap(data))));
                    if (pending.size() >= 64) {
                        CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
                        pending.clear();
                    }
                }
                CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
                Thread.sleep(2000); // let the last uploads finish
                FaultInjectingObjectStore faults = FaultyObjectStoreProvider.faults(name);
                faults.on(FaultInjectingObjectStore.Operation.GET).always().delay(Duration.ofMillis(latencyMs));

                if (readAhead && last) {
                    System.out.printf("raw ranged GETs (512 KiB, %d in flight): %.0f MiB/s%n",
                            config.catchUpMaxInFlight(), rawGets(faults, mib, config.catchUpMaxInFlight()));
                    System.out.printf("tail p99 without catch-up: %s%n", tailP99(tail, null));
                }
                long t0 = System.nanoTime();
                long bytes = catchUp(backlog);
                double secs = (System.nanoTime() - t0) / 1e9;
                System.out.printf("run %d catch-up read-ahead %s: %.0f MiB/s (%d MiB in %.2f s), metrics %s%n",
                        run, readAhead ? "on" : "off", bytes / secs / (1 << 20), bytes >> 20, secs, brief(storage));
                if (readAhead && last) {
                    AtomicBoolean stop = new AtomicBoolean();
                    Thread reader = Thread.ofPlatform().start(() -> {
                        while (!stop.get()) {
                            try {
                                catchUp(backlog);
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                        }
                    });
                    System.out.printf("tail p99 with a catch-up reader: %s%n", tailP99(tail, null));
                    stop.set(true);
                    reader.join();
                }
            }
        }
    }

    private static String brief(StreamStorage storage) {
        var m = storage.metrics();
        return "GETs=" + m.objectStore().requests().get("GET") + " merged=" + m.blockCache().mergedLoads() + " raHits="
                + m.readAhead().hits() + " raBlocks=" + m.readAhead().blocks() + " evictedUnread="
                + m.readAhead().evictedUnread() + " blockHitRate=" + String.format("%.2f", m.blockCache().hitRate());
    }

    private static long catchUp(Stream s) throws Exception {
        long next = s.startOffset();
        long end = s.confirmedOffset();
        long bytes = 0;
        while (next < end) {
            try (FetchResult r = s.fetch(next, end, 1 << 20).get(30, TimeUnit.SECONDS)) {
                for (StoredBatch b : r.batches()) {
                    bytes += b.payload().remaining();
                    next = b.endOffset();
                }
            }
        }
        return bytes;
    }

    private static double rawGets(FaultInjectingObjectStore store, int mib, int inFlight) throws Exception {
        List<ObjectInfo> objects = store.list("").get();
        Semaphore slots = new Semaphore(inFlight);
        long bytes = 0;
        long t0 = System.nanoTime();
        outer:
        for (ObjectInfo o : objects) {
            for (long pos = 0; pos + 512 * 1024 <= o.sizeBytes(); pos += 512 * 1024) {
                slots.acquire();
                store.get(o.key(), pos, 512 * 1024).whenComplete((buf, e) -> {
                    if (buf != null) {
                        buf.release();
                    }
                    slots.release();
                });
                bytes += 512 * 1024;
                if (bytes >= (long) mib << 20) {
                    break outer;
                }
            }
        }
        slots.acquire(inFlight);
        return bytes / ((System.nanoTime() - t0) / 1e9) / (1 << 20);
    }

    /** Append one 1 KiB batch and fetch it back, for 3 s; p50/p99 of each, in microseconds. */
    private static String tailP99(Stream tail, ByteBuf unused) throws Exception {
        byte[] data = new byte[1024];
        List<Long> appends = new ArrayList<>();
        List<Long> fetches = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        while (System.nanoTime() < deadline) {
            long t0 = System.nanoTime();
            long base = tail.append(RecordBatch.of(1, ByteBuffer.wrap(data))).get().baseOffset();
            long t1 = System.nanoTime();
            try (FetchResult r = tail.fetch(base, base + 1, 4096).get()) {
                if (r.batches().isEmpty()) {
                    throw new IllegalStateException("empty tail fetch");
                }
            }
            long t2 = System.nanoTime();
            appends.add(t1 - t0);
            fetches.add(t2 - t1);
        }
        return "append p50/p99 " + pct(appends, 0.5) + "/" + pct(appends, 0.99) + " us, fetch p50/p99 "
                + pct(fetches, 0.5) + "/" + pct(fetches, 0.99) + " us (" + appends.size() + " ops)";
    }

    private static long pct(List<Long> nanos, double p) {
        List<Long> sorted = new ArrayList<>(nanos);
        sorted.sort(null);
        return sorted.get((int) Math.min(sorted.size() - 1, p * sorted.size())) / 1000;
    }
}
