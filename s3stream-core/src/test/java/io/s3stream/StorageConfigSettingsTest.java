package io.s3stream;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Settings by key: the table behind {@link StorageConfig.Builder#set} and {@link StorageConfig#settings()}. */
class StorageConfigSettingsTest {

    @Test
    void everyKeyAppliesToItsSetting() {
        Map<String, String> values = Map.ofEntries(
                Map.entry("node.id", "7"), Map.entry("data.dir", "/tmp/s3stream-x"),
                Map.entry("wal", "mem://w"), Map.entry("object.store", "mem://o"), Map.entry("metadata", "mem://m"),
                Map.entry("log.cache.bytes", "64MiB"), Map.entry("block.cache.bytes", "32MiB"),
                Map.entry("read.ahead.bytes", "8MiB"), Map.entry("read.ahead.max.window.bytes", "1MiB"),
                Map.entry("catch.up.max.in.flight", "3"), Map.entry("catch.up.bytes.per.second", "10MiB"),
                Map.entry("catch.up.cpu.target", "0.6"),
                Map.entry("upload.threshold.bytes", "16MiB"), Map.entry("upload.interval.ms", "2500"),
                Map.entry("stream.object.threshold.bytes", "4MiB"), Map.entry("object.block.size.bytes", "256KiB"),
                Map.entry("max.batch.bytes", "1MiB"), Map.entry("backpressure.timeout.ms", "700"),
                Map.entry("compaction.enabled", "false"), Map.entry("compaction.interval.ms", "1000"),
                Map.entry("compaction.max.age.ms", "60000"), Map.entry("stream.object.target.bytes", "128MiB"),
                Map.entry("compaction.dead.share.threshold", "0.25"),
                Map.entry("object.deletion.grace.period.ms", "0"), Map.entry("compaction.bytes.per.second", "1MiB"),
                Map.entry("compaction.concurrency", "2"), Map.entry("compaction.memory.bytes", "16MiB"),
                Map.entry("key.compaction.map.bytes", "1MiB"),
                Map.entry("compaction.run.timeout.ms", "90000"), Map.entry("multipart.threshold.bytes", "16MiB"),
                Map.entry("object.store.max.in.flight", "9"), Map.entry("cost.log.interval.ms", "0"));
        assertThat(StorageConfig.settings()).extracting(StorageConfig.Setting::key)
                .as("the test names every key").containsExactlyInAnyOrderElementsOf(values.keySet());
        StorageConfig.Builder b = StorageConfig.builder();
        values.forEach(b::set);
        StorageConfig c = b.build();
        assertThat(c.nodeId()).isEqualTo(7);
        assertThat(c.dataDir()).isEqualTo(Path.of("/tmp/s3stream-x"));
        assertThat(c.wal()).contains("mem://w");
        assertThat(c.objectStore()).isEqualTo("mem://o");
        assertThat(c.metadata()).contains("mem://m");
        assertThat(c.logCacheBytes()).hasValue(64L << 20);
        assertThat(c.blockCacheBytes()).hasValue(32L << 20);
        assertThat(c.readAheadBytes()).hasValue(8L << 20);
        assertThat(c.readAheadMaxWindowBytes()).hasValue(1 << 20);
        assertThat(c.catchUpMaxInFlight()).isEqualTo(3);
        assertThat(c.catchUpBytesPerSecond()).isEqualTo(10L << 20);
        assertThat(c.catchUpCpuTarget()).isEqualTo(0.6);
        assertThat(c.uploadThresholdBytes()).isEqualTo(16L << 20);
        assertThat(c.uploadInterval()).isEqualTo(Duration.ofMillis(2500));
        assertThat(c.streamObjectThresholdBytes()).isEqualTo(4L << 20);
        assertThat(c.objectBlockSizeBytes()).isEqualTo(256 << 10);
        assertThat(c.maxBatchBytes()).isEqualTo(1 << 20);
        assertThat(c.backpressureTimeout()).isEqualTo(Duration.ofMillis(700));
        assertThat(c.compactionEnabled()).isFalse();
        assertThat(c.compactionInterval()).isEqualTo(Duration.ofSeconds(1));
        assertThat(c.compactionMaxAge()).isEqualTo(Duration.ofMinutes(1));
        assertThat(c.streamObjectTargetBytes()).isEqualTo(128L << 20);
        assertThat(c.compactionDeadShareThreshold()).isEqualTo(0.25);
        assertThat(c.objectDeletionGracePeriod()).isEqualTo(Duration.ZERO);
        assertThat(c.compactionBytesPerSecond()).isEqualTo(1L << 20);
        assertThat(c.compactionConcurrency()).isEqualTo(2);
        assertThat(c.compactionMemoryBytes()).isEqualTo(16L << 20);
        assertThat(c.keyCompactionMapBytes()).isEqualTo(1L << 20);
        assertThat(c.compactionRunTimeout()).isEqualTo(Duration.ofSeconds(90));
        assertThat(c.multipartThresholdBytes()).isEqualTo(16L << 20);
        assertThat(c.objectStoreMaxInFlight()).isEqualTo(9);
        assertThat(c.costLogInterval()).isEqualTo(Duration.ZERO);
    }

    @Test
    void defaultsAreTheBuildersDefaults() {
        StorageConfig c = StorageConfig.builder().nodeId(1).dataDir(Path.of("/tmp")).build();
        List<StorageConfig.Setting> settings = StorageConfig.settings();
        assertThat(value(settings, "upload.threshold.bytes")).isEqualTo(String.valueOf(c.uploadThresholdBytes()));
        assertThat(value(settings, "upload.interval.ms")).isEqualTo(String.valueOf(c.uploadInterval().toMillis()));
        assertThat(value(settings, "compaction.enabled")).isEqualTo(String.valueOf(c.compactionEnabled()));
        assertThat(value(settings, "log.cache.bytes")).contains("direct-memory limit");
        assertThat(settings).allSatisfy(s -> assertThat(s.description()).isNotBlank());
    }

    private static String value(List<StorageConfig.Setting> settings, String key) {
        return settings.stream().filter(s -> s.key().equals(key)).findFirst().orElseThrow().defaultValue();
    }

    @Test
    void unknownKeysAndBadValuesNameTheKey() {
        StorageConfig.Builder b = StorageConfig.builder();
        assertThatThrownBy(() -> b.set("log.cache.byte", "1MiB")).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("log.cache.byte").hasMessageContaining("log.cache.bytes");
        assertThatThrownBy(() -> b.set("log.cache.bytes", "lots")).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'log.cache.bytes'").hasMessageContaining("lots");
        assertThatThrownBy(() -> b.set("upload.interval.ms", "10s")).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'upload.interval.ms'");
        assertThatThrownBy(() -> b.set("compaction.enabled", "yes")).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("true or false");
        assertThatThrownBy(() -> b.set("node.id", null)).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("node.id");
        for (double target : new double[] {-0.1, 1, 1.5}) {
            assertThatThrownBy(() -> StorageConfig.builder().nodeId(1).dataDir(Path.of("/tmp")).catchUpCpuTarget(target)
                    .build()).isInstanceOf(InvalidConfigException.class).hasMessageContaining("catchUpCpuTarget")
                    .hasMessageContaining("[0, 1)");
        }
    }

    @Test
    void aDerivedBudgetIsLeftToTheEngineAndAnExplicitOneIsCheckedAtBuild() {
        StorageConfig derived = StorageConfig.builder().nodeId(1).dataDir(Path.of("/tmp")).build();
        assertThat(derived.logCacheBytes()).isEmpty();
        assertThatThrownBy(() -> StorageConfig.builder().nodeId(1).dataDir(Path.of("/tmp"))
                .logCacheBytes(16L << 20).uploadThresholdBytes(16L << 20).build())
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("uploadThresholdBytes");
    }

    @Test
    void aNegativeBudgetIsRefusedNotTakenForTheDefault() {
        // Unset budgets are derived by the engine; a negative one someone set is a mistake, not "derive it".
        StorageConfig.Builder base = StorageConfig.builder().nodeId(1).dataDir(Path.of("/tmp"));
        assertThatThrownBy(() -> base.logCacheBytes(-5).build())
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("logCacheBytes").hasMessageContaining("-5");
        assertThatThrownBy(() -> StorageConfig.builder().nodeId(1).dataDir(Path.of("/tmp")).blockCacheBytes(-1).build())
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("blockCacheBytes");
        assertThatThrownBy(() -> StorageConfig.builder().nodeId(1).dataDir(Path.of("/tmp")).readAheadBytes(-1).build())
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("readAheadBytes");
        assertThatThrownBy(() -> StorageConfig.builder().nodeId(1).dataDir(Path.of("/tmp"))
                .readAheadMaxWindowBytes(-1).build())
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("readAheadMaxWindowBytes");
        StorageConfig unset = StorageConfig.builder().nodeId(1).dataDir(Path.of("/tmp")).build();
        assertThat(unset.logCacheBytes()).isEmpty();
        assertThat(unset.readAheadBytes()).isEmpty();
        assertThat(StorageConfig.builder().nodeId(1).dataDir(Path.of("/tmp")).readAheadBytes(0).build().readAheadBytes())
                .hasValue(0);
    }
}
