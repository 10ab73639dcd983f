package io.s3stream.kafka.shell;

import io.s3stream.InvalidConfigException;
import io.s3stream.kafka.shell.config.ShellLogging;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.logging.Level;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Log levels per logger prefix from server.properties and the environment; the one-line format is checked by name. */
class ShellLoggingTest {

    @Test
    void levelsComeFromSettingsAndTheEnvironmentWinsInKafkasOrJulNames() {
        Map<String, Level> levels = ShellLogging.levels(Map.of(
                "log.level.io.s3stream.internal.engine", "DEBUG",
                "log.level.root", "WARN",
                "log.level.org.apache.kafka", "ERROR",
                "num.partitions", "3"), "org.apache.kafka=INFO, io.s3stream.kafka=FINEST");
        assertThat(levels).containsEntry("io.s3stream.internal.engine", Level.FINE)
                .containsEntry("", Level.WARNING)
                .containsEntry("org.apache.kafka", Level.INFO) // the environment wins
                .containsEntry("io.s3stream.kafka", Level.FINEST)
                .hasSize(4);
    }

    @Test
    void aBadLevelOrEntryNamesTheSetting() {
        assertThatThrownBy(() -> ShellLogging.levels(Map.of("log.level.io.s3stream", "LOUD"), null))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("log.level.io.s3stream")
                .hasMessageContaining("LOUD");
        assertThatThrownBy(() -> ShellLogging.levels(Map.of(), "io.s3stream"))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining(ShellLogging.ENVIRONMENT);
    }
}
