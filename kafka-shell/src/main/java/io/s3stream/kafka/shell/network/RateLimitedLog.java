package io.s3stream.kafka.shell.network;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * One log line per interval for a condition that may repeat thousands of times a second (a full request budget, idle
 * connections closed, connections failing): the first occurrence is logged at once, later ones at most once per
 * interval, with the number of occurrences the log did not show.
 */
public final class RateLimitedLog {
    private final System.Logger log;
    private final System.Logger.Level level;
    private final long intervalNanos;
    private final AtomicLong nextAllowedNanos = new AtomicLong(Long.MIN_VALUE);
    private final AtomicLong suppressed = new AtomicLong();

    public RateLimitedLog(System.Logger log, System.Logger.Level level, long intervalNanos) {
        this.log = log;
        this.level = level;
        this.intervalNanos = intervalNanos;
    }

    public void log(Supplier<String> message) {
        if (!log.isLoggable(level)) {
            return;
        }
        long now = System.nanoTime();
        long next = nextAllowedNanos.get();
        if ((next != Long.MIN_VALUE && now - next < 0) || !nextAllowedNanos.compareAndSet(next, now + intervalNanos)) {
            suppressed.incrementAndGet();
            return;
        }
        long hidden = suppressed.getAndSet(0);
        log.log(level, message.get() + (hidden > 0 ? " (" + hidden + " more like this since the last such line)" : ""));
    }
}
