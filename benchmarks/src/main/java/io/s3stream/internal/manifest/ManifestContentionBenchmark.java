package io.s3stream.internal.manifest;

import io.s3stream.internal.store.MemObjectStore;
import io.s3stream.testing.FaultInjectingObjectStore;
import io.s3stream.testing.FaultInjectingObjectStore.Operation;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Three writers on one manifest, as three shells use it (a main method, not a test): a busy one whose callers commit
 * key-value changes back to back (a group coordinator committing offsets), and two that each renew a lease by
 * compare-and-set once a second. Reports the busy writer's commits and entries per second and the renewals'
 * latency, which is what a shell's failure detector sees: a renewal slower than the lease timeout gets a healthy shell
 * taken over. Every request to the store takes a fixed round trip, half before it acts and half after.
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.s3stream.internal.manifest.ManifestContentionBenchmark \
 *     [round-trip ms = 10] [busy callers = 8] [seconds = 30]
 * </pre>
 */
public final class ManifestContentionBenchmark {

    private ManifestContentionBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        long rttMicros = (long) (args.length > 0 ? Double.parseDouble(args[0]) * 1000 : 10_000);
        int callers = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        int seconds = args.length > 2 ? Integer.parseInt(args[2]) : 30;
        String name = "contention-" + System.nanoTime();
        ManifestConfig config = ManifestConfig.DEFAULTS;
        try (FaultInjectingObjectStore objects = new FaultInjectingObjectStore(MemObjectStore.open(name, 1024), 1);
             ManifestMetadataStore busy = ManifestMetadataStore.open(objects, InstantSource.system(), config);
             ManifestMetadataStore a = ManifestMetadataStore.open(objects, InstantSource.system(), config);
             ManifestMetadataStore b = ManifestMetadataStore.open(objects, InstantSource.system(), config)) {
            for (Operation op : List.of(Operation.PUT, Operation.PUT_IF_ABSENT, Operation.GET, Operation.LIST)) {
                objects.on(op).always().roundTrip(Duration.ofNanos(rttMicros * 1000));
            }
            AtomicBoolean running = new AtomicBoolean(true);
            AtomicLong busyCommits = new AtomicLong();
            List<Thread> threads = new ArrayList<>();
            for (int c = 0; c < callers; c++) {
                int caller = c;
                threads.add(Thread.ofPlatform().name("busy-" + c).start(() -> {
                    for (long i = 0; running.get(); i++) {
                        busy.putKv("offsets/group-" + caller + "/" + (i % 16), Long.toString(i).getBytes(
                                StandardCharsets.UTF_8)).join();
                        busyCommits.incrementAndGet();
                    }
                }));
            }
            List<Long> renewalsA = new java.util.concurrent.CopyOnWriteArrayList<>();
            List<Long> renewalsB = new java.util.concurrent.CopyOnWriteArrayList<>();
            threads.add(Thread.ofPlatform().name("renew-a").start(() -> renew(a, "lease/a", running, renewalsA)));
            threads.add(Thread.ofPlatform().name("renew-b").start(() -> renew(b, "lease/b", running, renewalsB)));
            Thread.sleep(3_000); // warm-up
            long commits0 = busyCommits.get();
            long entries0 = busy.stats().commits();
            ManifestStats[] s0 = {busy.stats(), a.stats(), b.stats()};
            renewalsA.clear();
            renewalsB.clear();
            Thread.sleep(seconds * 1000L);
            long commits = busyCommits.get() - commits0;
            long entries = busy.stats().commits() - entries0;
            ManifestStats[] s1 = {busy.stats(), a.stats(), b.stats()};
            running.set(false);
            for (Thread t : threads) {
                t.join();
            }
            List<Long> renewals = new ArrayList<>(renewalsA);
            renewals.addAll(renewalsB);
            long[] ms = renewals.stream().mapToLong(Long::longValue).sorted().toArray();
            System.out.printf("round trip %.1f ms, %d busy callers, %d s: busy writer %.0f commits/s in %.0f entries/s;"
                            + " %d renewals: p50 %d ms, p99 %d ms, max %d ms, %d over 1 s, %d over 6 s;"
                            + " lost races busy/a/b %d/%d/%d%n", rttMicros / 1000.0, callers, seconds,
                    commits / (double) seconds, entries / (double) seconds, ms.length, percentile(ms, 50),
                    percentile(ms, 99), ms.length == 0 ? 0 : ms[ms.length - 1],
                    Arrays.stream(ms).filter(x -> x > 1_000).count(), Arrays.stream(ms).filter(x -> x > 6_000).count(),
                    s1[0].lostRaces() - s0[0].lostRaces(), s1[1].lostRaces() - s0[1].lostRaces(),
                    s1[2].lostRaces() - s0[2].lostRaces());
        } finally {
            MemObjectStore.clear(name);
        }
    }

    /** Renews {@code key} once a second by compare-and-set, as a shell's lease, recording each renewal's latency. */
    private static void renew(ManifestMetadataStore store, String key, AtomicBoolean running, List<Long> latencies) {
        byte[] lease = "0".getBytes(StandardCharsets.UTF_8);
        store.putKv(key, lease).join();
        for (long n = 1; running.get(); n++) {
            long started = System.nanoTime();
            byte[] next = Long.toString(n).getBytes(StandardCharsets.UTF_8);
            if (!store.compareAndSetKv(key, lease, next).join()) {
                throw new IllegalStateException("lease " + key + " changed under its owner");
            }
            lease = next;
            long took = System.nanoTime() - started;
            latencies.add(TimeUnit.NANOSECONDS.toMillis(took));
            long sleep = TimeUnit.SECONDS.toNanos(1) - took;
            if (sleep > 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(sleep);
            }
        }
    }

    private static long percentile(long[] sorted, int p) {
        return sorted.length == 0 ? 0 : sorted[Math.min(sorted.length - 1, sorted.length * p / 100)];
    }
}
