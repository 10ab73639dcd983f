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
    void offsetRetentionIsKafkasMinutesOrTheShellsMilliseconds() {
        assertThat(config(Map.of()).offsetsRetentionMs()).isEqualTo(7 * 24 * 3_600_000L);
        assertThat(config(Map.of()).offsetsRetentionCheckIntervalMs()).isEqualTo(600_000L);
        assertThat(config(Map.of("offsets.retention.minutes", "60")).offsetsRetentionMs()).isEqualTo(3_600_000L);
        assertThat(config(Map.of("offsets.retention.minutes", "60", "s3stream.kafka.offsets.retention.ms", "1500"))
                .offsetsRetentionMs()).isEqualTo(1_500L);
        assertThatThrownBy(() -> config(Map.of("offsets.retention.minutes", "0")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("offsets.retention.minutes");
        assertThatThrownBy(() -> config(Map.of("offsets.retention.check.interval.ms", "soon")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("offsets.retention.check.interval.ms");
    }

    @Test
    void aRestartedShellHasFiveMinutesToWriteItsFirstLease() {
        assertThat(config(Map.of()).leaseStartupGraceMs()).isEqualTo(300_000L);
        assertThat(config(Map.of("s3stream.kafka.lease.startup.grace.ms", "3000")).leaseStartupGraceMs())
                .isEqualTo(3_000L);
        assertThatThrownBy(() -> config(Map.of("s3stream.kafka.lease.startup.grace.ms", "-1")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("s3stream.kafka.lease.startup.grace.ms");
    }

    @Test
    void aBadBalanceBandIsRefused() {
        assertThatThrownBy(() -> config(Map.of("s3stream.kafka.balance.band", "2")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("s3stream.kafka.balance.band");
    }

    @Test
    void severalListenersWithTheirProtocolsAdvertisedAddressesAndTheInterBrokerOne() {
        ShellConfig c = config(Map.of("listeners", "SASL_SSL://0.0.0.0:9094,INTERNAL://10.0.0.5:9093",
                "listener.security.protocol.map", "SASL_SSL:SASL_SSL,INTERNAL:PLAINTEXT",
                "advertised.listeners", "SASL_SSL://broker-1.example.com:9094",
                "inter.broker.listener.name", "internal"));
        assertThat(c.listeners()).containsExactly(
                new ShellConfig.Listener("SASL_SSL", "SASL_SSL", "0.0.0.0", 9094, "broker-1.example.com", 9094),
                new ShellConfig.Listener("INTERNAL", "PLAINTEXT", "10.0.0.5", 9093, "10.0.0.5", 9093));
        assertThat(c.interBrokerListener().name()).isEqualTo("INTERNAL");
        assertThat(c.securityProtocol()).isEqualTo("SASL_SSL"); // the first listener's
        // security.inter.broker.protocol names a listener too; one listener alone needs neither.
        assertThat(config(Map.of("listeners", "PLAINTEXT://:9092,SSL://:9093",
                "security.inter.broker.protocol", "SSL")).interBrokerListener().name()).isEqualTo("SSL");
        assertThat(config(Map.of("listeners", "SASL_PLAINTEXT://:9092")).interBrokerListener().name())
                .isEqualTo("SASL_PLAINTEXT");
    }

    @Test
    void listenerMistakesAreRefusedNamingTheSetting() {
        assertThatThrownBy(() -> config(Map.of("listeners", "PLAINTEXT://:9092,PLAINTEXT://:9093")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("used twice");
        assertThatThrownBy(() -> config(Map.of("listeners", "PLAINTEXT://:9092,SSL://:9092")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("port 9092");
        assertThatThrownBy(() -> config(Map.of("listeners", "PLAINTEXT://:9092",
                "advertised.listeners", "EXTERNAL://x:1")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("EXTERNAL");
        assertThatThrownBy(() -> config(Map.of("listeners", "SSL://:9092,SASL_SSL://:9093")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("inter.broker.listener.name");
        assertThatThrownBy(() -> config(Map.of("listeners", "PLAINTEXT://:9092,INTERNAL://:9093",
                "listener.security.protocol.map", "INTERNAL:PLAINTEXT", "inter.broker.listener.name", "REPLICATION")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("REPLICATION");
        assertThatThrownBy(() -> config(Map.of("listeners", "INTERNAL://:9093")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("listener.security.protocol.map");
    }
}
