package io.s3stream.internal.manifest;

import io.s3stream.internal.metadata.ManifestOp;
import io.s3stream.internal.metadata.ManifestState;
import io.s3stream.internal.store.MemObjectStore;
import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamRange;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Measures the manifest (a main method, not a test): requests per commit on the fast path and on a lost race, commit
 * latency on {@code file://} and {@code mem://}, start-up time from a checkpoint of 100,000 objects and 10,000
 * streams, and heap per stream and per object in the view. It lives in the manifest's package so that it can read the
 * store's request counters: {@code java -cp benchmarks/target/benchmarks.jar
 * io.s3stream.internal.manifest.ManifestBenchmark}.
 */
public final class ManifestBenchmark {

    private ManifestBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Files.createTempDirectory("manifest-bench");
        latency("mem://bench-" + System.nanoTime(), 3000);
        latency(dir.resolve("lat").toUri().toString(), 2000);
        lostRace();
        startup(dir.resolve("startup").toUri().toString());
        memory();
    }

    private static void latency(String uri, int commits) throws Exception {
        ManifestConfig config = ManifestConfig.DEFAULTS.withPollMs(0);
        try (ObjectStore objects = ObjectStores.open(uri);
             ManifestMetadataStore store = ManifestMetadataStore.open(objects, InstantSource.system(), config)) {
            long[] nanos = new long[commits];
            for (int i = 0; i < 200; i++) {
                store.putKv("warm" + i, new byte[8]).get(); // warm-up
            }
            ManifestStats before = store.stats();
            for (int i = 0; i < commits; i++) {
                long t0 = System.nanoTime();
                store.putKv("k" + i, new byte[8]).get();
                nanos[i] = System.nanoTime() - t0;
            }
            ManifestStats after = store.stats();
            Arrays.sort(nanos);
            System.out.printf("%s: %d commits, p50 %.3f ms, p99 %.3f ms, max %.3f ms; per commit: %.3f PUT, %.3f GET,"
                            + " %.4f LIST (checkpoints every %d)%n", uri.substring(0, uri.indexOf(':')), commits,
                    nanos[commits / 2] / 1e6, nanos[commits * 99 / 100] / 1e6, nanos[commits - 1] / 1e6,
                    (after.puts() - before.puts()) / (double) commits, (after.gets() - before.gets()) / (double) commits,
                    (after.lists() - before.lists()) / (double) commits, config.checkpointEvery());
        }
        if (uri.startsWith("mem:")) {
            MemObjectStore.clear(uri.substring("mem://".length()));
        }
    }

    /** Two writers with polling off take turns, so each commit first loses to the other's latest entry. */
    private static void lostRace() throws Exception {
        String name = "race-" + System.nanoTime();
        ManifestConfig config = ManifestConfig.DEFAULTS.withPollMs(0);
        try (ObjectStore objects = ObjectStores.open("mem://" + name);
             ManifestMetadataStore a = ManifestMetadataStore.open(objects, InstantSource.system(), config);
             ManifestMetadataStore b = ManifestMetadataStore.open(objects, InstantSource.system(), config)) {
            a.putKv("x", new byte[1]).get();
            int rounds = 500;
            ManifestStats b0 = b.stats();
            for (int i = 0; i < rounds; i++) {
                a.putKv("a" + i, new byte[1]).get();   // fast path for a (it lost nothing: b wrote after a's view)
                b.putKv("b" + i, new byte[1]).get();   // b is one entry behind: loses once, then wins
            }
            ManifestStats b1 = b.stats();
            long requests = (b1.puts() - b0.puts()) + (b1.gets() - b0.gets()) + (b1.lists() - b0.lists());
            System.out.printf("lost race: %d commits, %d lost races, %.2f requests per commit (PUT %.2f, GET %.2f)%n",
                    rounds, b1.lostRaces() - b0.lostRaces(), requests / (double) rounds,
                    (b1.puts() - b0.puts()) / (double) rounds, (b1.gets() - b0.gets()) / (double) rounds);
        }
        MemObjectStore.clear(name);
    }

    /** A view with 10,000 streams and 100,000 committed objects, built by applying operations directly. */
    static ManifestState bigView(int streams, int objects) {
        ManifestState m = new ManifestState(InstantSource.system());
        Instant t = Instant.now();
        m.apply(new ManifestOp.RegisterNode(1), t);
        for (int s = 0; s < streams; s++) {
            m.apply(new ManifestOp.CreateStream(1, 1, 0, Map.of("topic", "t-" + s)), t);
        }
        long first = (Long) m.apply(new ManifestOp.PrepareObjects(objects, Duration.ofDays(1).toNanos()), t);
        int perStream = objects / streams;
        for (int i = 0; i < perStream; i++) {
            for (int s = 0; s < streams; s++) {
                long id = first + (long) i * streams + s;
                m.apply(new ManifestOp.CommitObjects(new CommitRequest(1, 1, List.of(new CommitRequest.NewObject(id,
                        ObjectType.STREAM, 1 << 20, List.of(new StreamRange(s, 0, i * 100L, i * 100L + 100)))),
                        List.of())), t);
            }
        }
        return m;
    }

    private static void startup(String uri) throws Exception {
        ManifestState m = bigView(10_000, 100_000);
        byte[] cp = ManifestFormat.encodeCheckpoint(new ManifestFormat.Checkpoint(1, Instant.now(), m.snapshot()));
        try (ObjectStore objects = ObjectStores.open(uri)) {
            io.netty.buffer.ByteBuf buf = io.netty.buffer.Unpooled.wrappedBuffer(cp);
            objects.put("manifest/checkpoint/00000000000000000001", buf).get();
            buf.release();
            for (int run = 0; run < 5; run++) {
                long t0 = System.nanoTime();
                try (ManifestMetadataStore store = ManifestMetadataStore.open(objects, InstantSource.system(),
                        ManifestConfig.DEFAULTS.withPollMs(0))) {
                    long ms = (System.nanoTime() - t0) / 1_000_000;
                    System.out.printf("start-up from a %d-byte checkpoint (10,000 streams, 100,000 objects), run %d:"
                            + " %d ms (%d streams)%n", cp.length, run, ms, store.listStreams().get().size());
                }
            }
        }
    }

    private static long usedHeap() throws InterruptedException {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 4; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return rt.totalMemory() - rt.freeMemory();
    }

    private static void memory() throws Exception {
        long base = usedHeap();
        ManifestState streamsOnly = bigView(10_000, 0 == 0 ? 10_000 : 0);
        long withStreams = usedHeap();
        ManifestState full = bigView(10_000, 110_000);
        long withBoth = usedHeap();
        // full holds 100,000 more objects than streamsOnly over the same 10,000 streams
        double perObject = (withBoth - withStreams) / 100_000.0;
        double perStream = ((withStreams - base) - perObject * 10_000) / 10_000.0;
        System.out.printf("memory: %.0f bytes per stream (with one tag), %.0f bytes per committed object%n",
                perStream, perObject);
        if (streamsOnly.listStreams().size() + full.listStreams().size() == 0) {
            System.out.println();
        }
    }
}
