package io.s3stream.kafka.shell;

import io.s3stream.InvalidConfigException;
import io.s3stream.kafka.shell.config.ShellConfig;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Settings: engine settings pass through by key, and a misspelt key is an error that names it. */
class ShellConfigTest {

    private static ShellConfig config(Map<String, String> extra) {
        Map<String, String> m = new java.util.HashMap<>(Map.of("s3stream.data.dir",
                Path.of(System.getProperty("java.io.tmpdir"), "shell-config-test").toString(),
                "s3stream.wal", "mem://shell-config-test?capacity=64MiB", "s3stream.object.store", "mem://shell-config-test",
                "s3stream.log.cache.bytes", Long.toString(32L << 20), "s3stream.upload.threshold.bytes",
                Long.toString(4L << 20)));
        m.putAll(extra);
        return ShellConfig.of(m);
    }

    @Test
    void anEngineSettingIsAppliedByItsKey() {
        assertThat(config(Map.of("s3stream.backpressure.timeout.ms", "200")).storageConfig().backpressureTimeout())
                .isEqualTo(Duration.ofMillis(200));
        assertThat(config(Map.of("s3stream.compaction.enabled", "false")).storageConfig().compactionEnabled()).isFalse();
    }

    @Test
    void aMisspeltEngineSettingIsRefusedWithTheKnownKeys() {
        assertThatThrownBy(() -> config(Map.of("s3stream.backpresure.timeout.ms", "200")).storageConfig())
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("backpresure.timeout.ms")
                .hasMessageContaining("backpressure.timeout.ms");
    }

    @Test
    void aMisspeltShellSettingIsRefused() {
        assertThatThrownBy(() -> config(Map.of("s3stream.kafka.balance.intervall.ms", "100")).storageConfig())
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("s3stream.kafka.balance.intervall.ms")
                .hasMessageContaining("s3stream.kafka.balance.interval.ms");
    }

    @Test
    void aBadBalanceBandIsRefused() {
        assertThatThrownBy(() -> config(Map.of("s3stream.kafka.balance.band", "2")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("s3stream.kafka.balance.band");
    }
}
