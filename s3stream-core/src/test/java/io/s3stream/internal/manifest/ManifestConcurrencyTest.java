package io.s3stream.internal.manifest;

import io.s3stream.StreamOptions;
import io.s3stream.internal.store.MemObjectStore;
import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamMetadata;
import io.s3stream.spi.StreamRange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Several store instances in one JVM (threads) share one object store and commit at once: independent changes (each
 * node uploads to its own stream) and conflicting ones (one counter advanced by compare-and-set). The result must
 * equal a serial execution: every increment exactly once, every upload exactly once, a gap-free log, and every
 * instance's view equal to a fresh replay of the log.
 */
class ManifestConcurrencyTest {

    private static final int WRITERS = 4;
    private static final int ROUNDS = 60;
    private final String name = "mc-" + UUID.randomUUID();

    @AfterEach
    void clear() {
        MemObjectStore.clear(name);
    }

    static byte[] encodeState(ManifestMetadataStore store) {
        return ManifestFormat.encodeCheckpoint(new ManifestFormat.Checkpoint(0, Instant.EPOCH, store.snapshot()));
    }

    @Test
    void concurrentWritersEqualASerialExecution() throws Exception {
        ManifestConfig config = ManifestConfig.DEFAULTS.withPollMs(20).withCheckpointEvery(50).withGcGraceMs(1500)
                .withBackoff(1, 20);
        try (ObjectStore objects = ObjectStores.open("mem://" + name)) {
            List<ManifestMetadataStore> stores = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                stores.add(ManifestMetadataStore.open(objects, InstantSource.system(), config));
            }
            ExecutorService pool = Executors.newFixedThreadPool(WRITERS);
            CyclicBarrier start = new CyclicBarrier(WRITERS);
            List<Future<Long>> results = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                ManifestMetadataStore store = stores.get(w);
                long nodeId = w + 1;
                results.add(pool.submit(() -> {
                    long epoch = store.registerNode(nodeId).get(30, TimeUnit.SECONDS);
                    StreamMetadata s = store.createStream(nodeId, epoch, StreamOptions.defaults()).get(30, TimeUnit.SECONDS);
                    start.await(30, TimeUnit.SECONDS);
                    for (int i = 0; i < ROUNDS; i++) {
                        // Independent: an upload continuing this node's own stream.
                        long id = store.prepareObjects(1, Duration.ofMinutes(5)).get(30, TimeUnit.SECONDS);
                        store.commitObjects(new CommitRequest(nodeId, epoch, List.of(new CommitRequest.NewObject(id,
                                ObjectType.STREAM, 10, List.of(new StreamRange(s.streamId(), 0, i * 10L, i * 10L + 10)))),
                                List.of())).get(30, TimeUnit.SECONDS);
                        // Conflicting: everybody increments one counter.
                        while (true) {
                            Optional<byte[]> cur = store.getKv("counter").get();
                            long v = cur.map(b -> ByteBuffer.wrap(b).getLong()).orElse(0L);
                            byte[] next = ByteBuffer.allocate(8).putLong(v + 1).array();
                            if (store.compareAndSetKv("counter", cur.orElse(null), next).get(30, TimeUnit.SECONDS)) {
                                break;
                            }
                        }
                    }
                    return s.streamId();
                }));
            }
            List<Long> streamIds = new ArrayList<>();
            for (Future<Long> f : results) {
                streamIds.add(f.get(120, TimeUnit.SECONDS));
            }
            pool.shutdown();

            for (ManifestMetadataStore store : stores) {
                store.refreshNow().get(30, TimeUnit.SECONDS);
            }
            try (ManifestMetadataStore fresh = ManifestMetadataStore.open(objects, InstantSource.system(),
                    config.withPollMs(0))) {
                byte[] counter = fresh.getKv("counter").get().orElseThrow();
                assertThat(ByteBuffer.wrap(counter).getLong()).as("each increment exactly once")
                        .isEqualTo((long) WRITERS * ROUNDS);
                for (long id : streamIds) {
                    assertThat(fresh.getStream(id).get().orElseThrow().endOffset()).isEqualTo(ROUNDS * 10L);
                    assertThat(fresh.getObjects(id, 0, Long.MAX_VALUE, 10_000).get()).hasSize(ROUNDS);
                }
                byte[] replayed = encodeState(fresh);
                for (ManifestMetadataStore store : stores) {
                    assertThat(store.viewSeq()).isEqualTo(fresh.viewSeq());
                    assertThat(Arrays.equals(encodeState(store), replayed)).as("view equals a replay of the log").isTrue();
                }
                assertLogGapFree(objects, config.prefix(), fresh.viewSeq());
                long lost = stores.stream().mapToLong(s -> s.stats().lostRaces()).sum();
                assertThat(lost).as("the writers did race").isPositive();
            }
            for (ManifestMetadataStore store : stores) {
                store.close();
            }
        }
    }

    /** The log keys that remain are one contiguous run ending at {@code lastSeq}. */
    static void assertLogGapFree(ObjectStore objects, String prefix, long lastSeq) throws Exception {
        List<ObjectInfo> log = objects.list(prefix + "log/").get();
        List<Long> seqs = log.stream().map(i -> Long.parseLong(i.key().substring((prefix + "log/").length())))
                .sorted().toList();
        assertThat(seqs).isNotEmpty();
        assertThat(seqs.getLast()).isEqualTo(lastSeq);
        for (int i = 1; i < seqs.size(); i++) {
            assertThat(seqs.get(i)).as("gap-free log").isEqualTo(seqs.get(i - 1) + 1);
        }
    }
}
