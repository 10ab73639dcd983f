package io.s3stream.internal.engine;

import io.s3stream.InvalidConfigException;
import io.s3stream.StorageConfig;
import io.s3stream.StorageMetrics;
import io.s3stream.StreamStorage;
import io.s3stream.testing.CatchUpScenario;
import io.s3stream.testing.EngineFixture;
import io.s3stream.testing.FaultInjectingObjectStore;
import io.s3stream.testing.FaultyObjectStoreProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A catch-up reader replaying a backlog from objects (with read-ahead, over a store with injected GET latency) while
 * another stream is appended to and tail-read ({@link CatchUpScenario}): the tail is served from the log cache
 * throughout and the backlog comes back byte for byte.
 */
class CatchUpReadTest {
    private final EngineFixture fixture = new EngineFixture();
    private final String store = "catchup-" + UUID.randomUUID();
    private final long seed = System.nanoTime();

    @AfterEach
    void close() {
        fixture.close();
    }

    @Test
    void aCatchUpReaderReadsTheBacklogWhileTheTailStaysInTheLogCache() throws Exception {
        StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + store));
        CatchUpScenario scenario = CatchUpScenario.prepare(storage);
        FaultInjectingObjectStore faults = FaultyObjectStoreProvider.faults(store);
        faults.on(FaultInjectingObjectStore.Operation.GET).always().delay(Duration.ofMillis(3));
        StorageMetrics before = storage.metrics();

        CatchUpScenario.Result run = scenario.replay(seed);

        StorageMetrics after = storage.metrics();
        // Every tail fetch came from the log cache; every object read was the catch-up reader's.
        assertThat(after.reads().fromLogCache() - before.reads().fromLogCache()).isGreaterThanOrEqualTo(run.tailFetches());
        assertThat(after.reads().fromObjects() - before.reads().fromObjects()).isLessThanOrEqualTo(run.catchUpFetches());
        assertThat(after.reads().fromObjects() - before.reads().fromObjects()).isPositive();
        assertThat(after.readAhead().hits()).as("read-ahead served the catch-up reader").isPositive();
        assertThat(after.blockCache().mergedLoads()).as("adjacent blocks were read with one GET").isPositive();
        assertThat(after.readAhead().bytes())
                .isLessThanOrEqualTo(MemoryBudgets.resolve(fixture.config(1).build(), Long.MAX_VALUE).readAheadBytes());
        assertThat(after.blockCache().bytes()).isLessThanOrEqualTo(after.blockCache().capacityBytes());
        assertThat(after.logCache().bytes()).isLessThanOrEqualTo(after.logCache().capacityBytes());
        System.out.printf("catch-up: %d fetches, GETs %d, read-ahead hits %d, blocks %d, evicted unread %d, merged %d%n",
                run.catchUpFetches(),
                after.objectStore().requests().get("GET") - before.objectStore().requests().get("GET"),
                after.readAhead().hits(), after.readAhead().blocks(), after.readAhead().evictedUnread(),
                after.blockCache().mergedLoads());
    }

    @Test
    void aReaderThatLeavesTheLastBatchOfEachFetchIsStillReadAheadFor() throws Exception {
        StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + store));
        CatchUpScenario scenario = CatchUpScenario.prepare(storage);
        FaultyObjectStoreProvider.faults(store).on(FaultInjectingObjectStore.Operation.GET).always()
                .delay(Duration.ofMillis(3));
        StorageMetrics before = storage.metrics();

        CatchUpScenario.Result run = scenario.replay(seed, true);

        StorageMetrics after = storage.metrics();
        assertThat(after.reads().fromObjects() - before.reads().fromObjects()).isPositive();
        // Each fetch starts inside the data of the one before (not at its end): still one sequential reader.
        assertThat(after.readAhead().blocks()).as("blocks read ahead").isPositive();
        assertThat(after.readAhead().hits()).as("read-ahead served the reader (%d fetches)", run.catchUpFetches())
                .isPositive();
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
