package io.s3stream.kafka.shell.config;

import io.s3stream.InvalidConfigException;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.logging.ConsoleHandler;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The shell's log: one line per event on stderr, and levels per logger prefix from the settings.
 *
 * <pre>
 * 2026-11-25T07:30:00.123Z INFO io.s3stream.internal.engine.Uploader: upload of log cache block 7 failed, retrying: …
 * </pre>
 *
 * <p>Levels: {@code log.level.<prefix>=LEVEL} in server.properties (or {@code --override}), and the environment
 * variable {@code KAFKA_SHELL_LOG_LEVELS="io.s3stream=DEBUG,org.apache.kafka=WARN"}, which wins. A prefix is a logger
 * name or a package ({@code root} for every logger); levels are Kafka's (TRACE, DEBUG, INFO, WARN, ERROR, OFF) or
 * java.util.logging's. Everything the shell's dependencies log (kafka-clients and the AWS SDK through SLF4J) goes
 * the same way. A JVM started with {@code -Djava.util.logging.config.file} keeps its own configuration untouched.
 *
 * <p>Design note: java.util.logging keeps loggers weakly; the configured ones are held here for the life of the
 * process, or a level set on a logger nobody has asked for yet would be lost to the garbage collector.
 */
public final class ShellLogging {
    /** The settings prefix of a level: {@code log.level.io.s3stream.internal.engine=DEBUG}. */
    public static final String PREFIX = "log.level.";
    public static final String ENVIRONMENT = "KAFKA_SHELL_LOG_LEVELS";
    private static final Map<String, Logger> HELD = new LinkedHashMap<>();

    private ShellLogging() {
    }

    /** The levels the settings and the environment ask for, by logger prefix ({@code ""} for the root). */
    public static Map<String, Level> levels(Map<String, String> settings, String environment) {
        Map<String, Level> out = new LinkedHashMap<>();
        settings.forEach((key, value) -> {
            if (key.startsWith(PREFIX)) {
                String prefix = key.substring(PREFIX.length());
                out.put(prefix.equals("root") ? "" : prefix, level(key, value));
            }
        });
        if (environment != null && !environment.isBlank()) {
            for (String entry : environment.split(",")) {
                int eq = entry.indexOf('=');
                if (eq <= 0) {
                    throw new InvalidConfigException(ENVIRONMENT + " must be prefix=LEVEL,… as in io.s3stream=DEBUG, "
                            + "was '" + environment + "'");
                }
                String prefix = entry.substring(0, eq).trim();
                out.put(prefix.equals("root") ? "" : prefix, level(ENVIRONMENT, entry.substring(eq + 1)));
            }
        }
        return out;
    }

    static Level level(String setting, String value) {
        String v = value.trim().toUpperCase(Locale.ROOT);
        return switch (v) {
            case "TRACE" -> Level.FINEST;
            case "DEBUG" -> Level.FINE;
            case "INFO" -> Level.INFO;
            case "WARN" -> Level.WARNING;
            case "ERROR", "FATAL" -> Level.SEVERE;
            default -> {
                try {
                    yield Level.parse(v);
                } catch (IllegalArgumentException e) {
                    throw new InvalidConfigException(setting + " must be a log level (TRACE, DEBUG, INFO, WARN, ERROR, "
                            + "OFF), was '" + value + "'");
                }
            }
        };
    }

    /** Installs the one-line format on stderr and the levels; no-op when the JVM was given its own configuration. */
    public static synchronized void configure(Map<String, Level> levels) {
        if (System.getProperty("java.util.logging.config.file") != null
                || System.getProperty("java.util.logging.config.class") != null) {
            return;
        }
        Logger root = LogManager.getLogManager().getLogger("");
        for (Handler h : root.getHandlers()) {
            root.removeHandler(h);
        }
        ConsoleHandler console = new ConsoleHandler(); // stderr
        console.setFormatter(new OneLine());
        console.setLevel(Level.ALL);
        root.addHandler(console);
        root.setLevel(Level.INFO);
        levels.forEach((prefix, level) -> {
            Logger logger = Logger.getLogger(prefix);
            logger.setLevel(level);
            HELD.put(prefix, logger);
        });
    }

    /** {@code <instant> <LEVEL> <logger>: <message>}, then the stack trace of a thrown exception, if any. */
    static final class OneLine extends Formatter {
        @Override
        public String format(LogRecord r) {
            StringBuilder sb = new StringBuilder(160).append(Instant.ofEpochMilli(r.getMillis())).append(' ')
                    .append(name(r.getLevel())).append(' ').append(r.getLoggerName()).append(": ")
                    .append(formatMessage(r).replace('\n', ' ')).append(System.lineSeparator());
            if (r.getThrown() != null) {
                StringWriter trace = new StringWriter();
                r.getThrown().printStackTrace(new PrintWriter(trace));
                sb.append(trace);
            }
            return sb.toString();
        }

        private static String name(Level level) {
            int v = level.intValue();
            if (v >= Level.SEVERE.intValue()) {
                return "ERROR";
            } else if (v >= Level.WARNING.intValue()) {
                return "WARN";
            } else if (v >= Level.INFO.intValue()) {
                return "INFO";
            } else if (v >= Level.FINE.intValue()) {
                return "DEBUG";
            }
            return "TRACE";
        }
    }
}
