package io.s3stream.internal.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.s3stream.FetchResult;
import io.s3stream.InvalidConfigException;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StorageMetrics;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.testing.EngineFixture;
import io.s3stream.testing.FaultInjectingObjectStore;
import io.s3stream.testing.FaultyObjectStoreProvider;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A catch-up reader replaying a backlog from objects (with read-ahead, over a store with injected GET latency) while
 * another stream is appended to and tail-read: the tail is served from the log cache throughout and the backlog
 * comes back byte for byte.
 */
class CatchUpReadTest {
    private final EngineFixture fixture = new EngineFixture();
    private final String store = "catchup-" + UUID.randomUUID();
    private final long seed = System.nanoTime();

    @AfterEach
    void close() {
        fixture.close();
    }

    private static byte[] payload(long stream, long offset, int size) {
        byte[] b = new byte[size];
        new Random(stream * 1_000_003 + offset).nextBytes(b);
        return b;
    }

    private static void check(Stream s, StoredBatch b) {
        byte[] got = new byte[b.payload().remaining()];
        b.payload().duplicate().get(got);
        assertThat(got).as("stream %d batch at %d", s.streamId(), b.baseOffset())
                .isEqualTo(payload(s.streamId(), b.baseOffset(), got.length));
    }

    private static long appendChecked(Stream s, int count, int size) throws Exception {
        long base = s.nextOffset();
        long got = s.append(RecordBatch.of(count, ByteBuffer.wrap(payload(s.streamId(), base, size))))
                .get(10, TimeUnit.SECONDS).baseOffset();
        assertThat(got).isEqualTo(base);
        return got;
    }

    @Test
    void aCatchUpReaderReadsTheBacklogWhileTheTailStaysInTheLogCache() throws Exception {
        StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + store));
        Stream backlog = storage.createStream(StreamOptions.defaults()).get();
        Stream tail = storage.createStream(StreamOptions.defaults()).get();
        for (int i = 0; i < 800; i++) { // 25 MiB: three times the log cache, so the start is only in objects
            appendChecked(backlog, 4, 32 * 1024);
        }
        FaultInjectingObjectStore faults = FaultyObjectStoreProvider.faults(store);
        faults.on(FaultInjectingObjectStore.Operation.GET).always().delay(Duration.ofMillis(3));
        StorageMetrics before = storage.metrics();

        AtomicReference<Throwable> tailFailure = new AtomicReference<>();
        int[] tailFetches = {0};
        Thread tailThread = Thread.ofPlatform().start(() -> {
            try {
                long next = tail.nextOffset();
                for (int i = 0; i < 300; i++) {
                    appendChecked(tail, 1, 2048);
                    CompletableFuture<FetchResult> f = tail.fetch(next, Long.MAX_VALUE, 1 << 20);
                    assertThat(f).as("a tail fetch is answered from memory, at once").isDone();
                    try (FetchResult r = f.join()) {
                        for (StoredBatch b : r.batches()) {
                            check(tail, b);
                            next = b.endOffset();
                        }
                    }
                    tailFetches[0]++;
                }
            } catch (Throwable t) {
                tailFailure.set(t);
            }
        });

        long next = backlog.startOffset();
        int catchUpFetches = 0;
        long bytes = 0;
        long end = backlog.confirmedOffset();
        while (next < end) {
            try (FetchResult r = backlog.fetch(next, end, 96 * 1024).get(10, TimeUnit.SECONDS)) {
                assertThat(r.batches()).isNotEmpty();
                for (StoredBatch b : r.batches()) {
                    assertThat(b.baseOffset()).as("contiguous (seed %d)", seed).isEqualTo(next);
                    check(backlog, b);
                    bytes += b.payload().remaining();
                    next = b.endOffset();
                }
            }
            catchUpFetches++;
        }
        tailThread.join(60_000);
        assertThat(tailFailure.get()).isNull();
        assertThat(bytes).isEqualTo(800L * 32 * 1024);

        StorageMetrics after = storage.metrics();
        // Every tail fetch came from the log cache; every object read was the catch-up reader's.
        assertThat(after.reads().fromLogCache() - before.reads().fromLogCache()).isGreaterThanOrEqualTo(tailFetches[0]);
        assertThat(after.reads().fromObjects() - before.reads().fromObjects()).isLessThanOrEqualTo(catchUpFetches);
        assertThat(after.reads().fromObjects() - before.reads().fromObjects()).isPositive();
        assertThat(after.readAhead().hits()).as("read-ahead served the catch-up reader").isPositive();
        assertThat(after.blockCache().mergedLoads()).as("adjacent blocks were read with one GET").isPositive();
        assertThat(after.readAhead().bytes()).isLessThanOrEqualTo(MemoryBudgets.resolve(fixture.config(1).build(), Long.MAX_VALUE).readAheadBytes());
        assertThat(after.blockCache().bytes()).isLessThanOrEqualTo(after.blockCache().capacityBytes());
        assertThat(after.logCache().bytes()).isLessThanOrEqualTo(after.logCache().capacityBytes());
        System.out.printf("catch-up: %d fetches, GETs %d, read-ahead hits %d, blocks %d, evicted unread %d, merged %d%n",
                catchUpFetches, after.objectStore().requests().get("GET") - before.objectStore().requests().get("GET"),
                after.readAhead().hits(), after.readAhead().blocks(), after.readAhead().evictedUnread(), after.blockCache().mergedLoads());
    }

    @Test
    void budgetsBeyondTheDirectMemoryLimitAreRefusedAtStartup() {
        StorageConfig config = StorageConfig.builder().nodeId(1).dataDir(Path.of("/tmp"))
                .logCacheBytes(64L << 20).blockCacheBytes(32L << 20).build();
        MemoryBudgets.resolve(config, 96L << 20);
        assertThatThrownBy(() -> MemoryBudgets.resolve(config, (96L << 20) - 1))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("logCacheBytes").hasMessageContaining("MaxDirectMemorySize");
    }

    @Test
    void defaultBudgetsAreSharesOfTheDirectMemoryLimit() {
        StorageConfig config = StorageConfig.builder().nodeId(1).dataDir(Path.of("/tmp")).build();
        assertThat(config.logCacheBytes()).as("left to the engine").isEmpty();
        long limit = MemoryLimits.maxDirectMemoryBytes();
        MemoryBudgets budgets = MemoryBudgets.resolve(config, limit);
        assertThat(budgets.logCacheBytes()).isEqualTo(MemoryLimits.share(limit, 0.25, 64L << 20, 1L << 30));
        assertThat(budgets.blockCacheBytes()).isEqualTo(MemoryLimits.share(limit, 0.125, 32L << 20, 512L << 20));
        assertThat(budgets.readAheadBytes()).isEqualTo(budgets.blockCacheBytes() / 2);
        assertThat(budgets.logCacheBytes() + budgets.blockCacheBytes()).isLessThanOrEqualTo(Math.max(limit, 96L << 20));
    }
}
