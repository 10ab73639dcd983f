package io.s3stream.internal.manifest;

import io.s3stream.NodeFencedException;
import io.s3stream.internal.store.MemObjectStore;
import io.s3stream.testing.FaultInjectingObjectStore;
import io.s3stream.testing.FaultInjectingObjectStore.Operation;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Group commit and fairness of the manifest: key-value changes queued together share one log entry, each caller
 * still gets its own answer, and a writer whose callers keep the log busy leaves room for another writer's commits.
 * Every request to the store takes a round trip of a few milliseconds, as to a real one, so that commits queue up.
 */
class ManifestGroupCommitTest {

    private final String name = "mgc-" + UUID.randomUUID();

    @AfterEach
    void clear() {
        MemObjectStore.clear(name);
    }

    private FaultInjectingObjectStore slowStore(Duration roundTrip) {
        FaultInjectingObjectStore store = new FaultInjectingObjectStore(MemObjectStore.open(name, 1024), 7);
        for (Operation op : List.of(Operation.PUT, Operation.PUT_IF_ABSENT, Operation.GET, Operation.LIST)) {
            store.on(op).always().roundTrip(roundTrip);
        }
        return store;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void queuedKeyValueChangesShareEntriesAndEachCallerGetsItsOwnAnswer() throws Exception {
        ManifestConfig config = ManifestConfig.DEFAULTS.withPollMs(0);
        try (FaultInjectingObjectStore objects = slowStore(Duration.ofMillis(20));
             ManifestMetadataStore store = ManifestMetadataStore.open(objects, InstantSource.system(), config)) {
            long node = 1;
            long epoch = store.registerNode(node).get();
            store.registerNode(2).get();
            long staleEpochOfNode2 = store.registerNode(2).get() - 1;
            store.putKv("cas", bytes("0")).get();
            long entriesBefore = store.stats().commits();

            List<CompletableFuture<?>> calls = new ArrayList<>();
            List<CompletableFuture<Void>> puts = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                puts.add(store.putKv(node, epoch, "own/" + i, bytes("v" + i)));
            }
            calls.addAll(puts);
            List<CompletableFuture<Void>> sameKey = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                sameKey.add(store.putKv(node, epoch, "same", bytes("s" + i)));
            }
            calls.addAll(sameKey);
            // An empty batch (an offset commit of no partition) among them changes nothing and succeeds.
            calls.add(store.updateKv(node, epoch, java.util.Map.of(), List.of()));
            calls.add(store.putKv(node, epoch, "after-empty", bytes("x")));
            // Changes of one key keep their order: a put, a compare-and-set that expects it, a delete.
            CompletableFuture<Void> first = store.putKv("ordered", bytes("a"));
            CompletableFuture<Boolean> swap = store.compareAndSetKv("ordered", bytes("a"), bytes("b"));
            CompletableFuture<Boolean> wrong = store.compareAndSetKv("cas", bytes("not the value"), bytes("x"));
            CompletableFuture<Boolean> right = store.compareAndSetKv("cas", bytes("0"), bytes("1"));
            CompletableFuture<Void> fenced = store.putKv(2, staleEpochOfNode2, "fenced", bytes("no"));
            CompletableFuture<Void> deleted = store.deleteKv(node, epoch, "own/0");
            calls.addAll(List.of(first, swap, wrong, right, deleted));
            for (CompletableFuture<?> c : calls) {
                c.get(30, TimeUnit.SECONDS);
            }

            assertThat(swap.get()).as("the compare-and-set after the put of its key sees the put").isTrue();
            assertThat(wrong.get()).isFalse();
            assertThat(right.get()).isTrue();
            assertThatThrownBy(() -> fenced.get(30, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(NodeFencedException.class);
            long entries = store.stats().commits() - entriesBefore;
            assertThat(entries).as("57 changes, most of them queued behind a 20 ms request").isLessThan(20);

            assertThat(store.getKv("ordered").get()).hasValueSatisfying(v -> assertThat(v).isEqualTo(bytes("b")));
            assertThat(store.getKv("cas").get()).hasValueSatisfying(v -> assertThat(v).isEqualTo(bytes("1")));
            assertThat(store.getKv("same").get()).as("puts of one key apply in their order")
                    .hasValueSatisfying(v -> assertThat(v).isEqualTo(bytes("s9")));
            assertThat(store.getKv("fenced").get()).isEmpty();
            assertThat(store.getKv("own/0").get()).isEmpty();
            assertThat(store.listKv("own/").get()).hasSize(39);
            assertThat(store.getKv("after-empty").get()).isPresent();

            // A fresh replay of the log reaches the same state, and the log has no gap.
            try (ManifestMetadataStore replay = ManifestMetadataStore.open(objects, InstantSource.system(), config)) {
                assertThat(replay.viewSeq()).isEqualTo(store.viewSeq());
                assertThat(ManifestConcurrencyTest.encodeState(replay))
                        .isEqualTo(ManifestConcurrencyTest.encodeState(store));
            }
            ManifestConcurrencyTest.assertLogGapFree(objects, config.prefix(), store.viewSeq());
        }
    }

    /**
     * Eight callers commit back to back on one writer, so that its entries would follow each other without a gap,
     * while a second writer renews a lease by compare-and-set, as a shell does. Before the busy writer yielded, the
     * second one lost every race: a renewal then took longer than any lease (in ManifestContentionBenchmark, none
     * completed in 20 s).
     */
    @Test
    void aWriterThatKeepsTheLogBusyLeavesRoomForAnotherWritersRenewals() throws Exception {
        ManifestConfig config = ManifestConfig.DEFAULTS.withPollMs(500);
        try (FaultInjectingObjectStore objects = slowStore(Duration.ofMillis(10));
             ManifestMetadataStore busy = ManifestMetadataStore.open(objects, InstantSource.system(), config);
             ManifestMetadataStore other = ManifestMetadataStore.open(objects, InstantSource.system(), config)) {
            AtomicBoolean running = new AtomicBoolean(true);
            AtomicLong busyCommits = new AtomicLong();
            List<Thread> callers = new ArrayList<>();
            for (int c = 0; c < 8; c++) {
                String key = "offsets/" + c;
                callers.add(Thread.ofPlatform().start(() -> {
                    for (long i = 0; running.get(); i++) {
                        busy.putKv(key, bytes(Long.toString(i))).join();
                        busyCommits.incrementAndGet();
                    }
                }));
            }
            try {
                byte[] lease = bytes("0");
                other.putKv("lease", lease).get(20, TimeUnit.SECONDS);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (busyCommits.get() < 200 && System.nanoTime() < deadline) {
                    Thread.sleep(10); // the busy writer is at full speed before the renewals start
                }
                long busyBefore = busyCommits.get();
                long slowest = 0;
                for (int n = 1; n <= 15; n++) {
                    Thread.sleep(150); // meanwhile the busy writer moves the log on: the renewer is behind again
                    long started = System.nanoTime();
                    byte[] next = bytes(Integer.toString(n));
                    assertThat(other.compareAndSetKv("lease", lease, next).get(60, TimeUnit.SECONDS)).isTrue();
                    slowest = Math.max(slowest, System.nanoTime() - started);
                    lease = next;
                }
                // A shell's default lease (renewed every 1 s, expired after 6 s) leaves 5 s for a renewal.
                assertThat(TimeUnit.NANOSECONDS.toMillis(slowest)).as("the slowest renewal, ms").isLessThan(5_000);
                assertThat(busyCommits.get() - busyBefore).as("the busy writer went on meanwhile").isPositive();
            } finally {
                running.set(false);
                for (Thread t : callers) {
                    t.join();
                }
            }
            other.refreshNow().get();
            assertThat(other.getKv("lease").get()).hasValueSatisfying(v -> assertThat(v).isEqualTo(bytes("15")));
        }
    }
}
