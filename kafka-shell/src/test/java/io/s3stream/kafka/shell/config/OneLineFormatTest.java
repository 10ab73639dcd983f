package io.s3stream.kafka.shell.config;

import org.junit.jupiter.api.Test;

import java.util.logging.Level;
import java.util.logging.LogRecord;

import static org.assertj.core.api.Assertions.assertThat;

/** One event, one line: instant, Kafka-style level, logger, message; a thrown exception follows on its own lines. */
class OneLineFormatTest {

    @Test
    void anEventIsOneLineAndAnExceptionFollowsIt() {
        ShellLogging.OneLine format = new ShellLogging.OneLine();
        LogRecord r = new LogRecord(Level.WARNING, "upload of block {0} failed,\nretrying");
        r.setParameters(new Object[] {7});
        r.setLoggerName("io.s3stream.internal.engine.BlockUploader");
        r.setInstant(java.time.Instant.parse("2026-11-25T07:30:00.123Z"));
        assertThat(format.format(r)).isEqualTo("2026-11-25T07:30:00.123Z WARN io.s3stream.internal.engine.BlockUploader:"
                + " upload of block 7 failed, retrying" + System.lineSeparator());

        LogRecord fine = new LogRecord(Level.FINE, "detail");
        fine.setLoggerName("x");
        fine.setThrown(new IllegalStateException("boom"));
        String out = format.format(fine);
        assertThat(out.lines().findFirst().orElseThrow()).endsWith("DEBUG x: detail");
        assertThat(out).contains("java.lang.IllegalStateException: boom").contains("\tat ");
    }
}
