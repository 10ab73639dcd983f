package io.s3stream.testing;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A clock that moves only when a test tells it to: inject it wherever production code takes an
 * {@link InstantSource} to make deadlines, time-to-live and ages deterministic. Thread-safe.
 */
public final class ManualClock implements InstantSource {

    /** Where a clock built with {@link #ManualClock()} starts: a fixed, unremarkable instant. */
    public static final Instant DEFAULT_START = Instant.parse("2025-01-01T00:00:00Z");

    private final AtomicReference<Instant> now;

    public ManualClock() {
        this(DEFAULT_START);
    }

    public ManualClock(Instant start) {
        this.now = new AtomicReference<>(Objects.requireNonNull(start, "start"));
    }

    @Override
    public Instant instant() {
        return now.get();
    }

    /** Moves the clock forward by {@code duration} (which must not be negative) and returns the new instant. */
    public Instant advance(Duration duration) {
        if (duration.isNegative()) {
            throw new IllegalArgumentException("a manual clock only moves forward, not by " + duration);
        }
        return now.updateAndGet(t -> t.plus(duration));
    }

    /** Moves the clock forward by {@code millis} milliseconds and returns the new instant. */
    public Instant advanceMillis(long millis) {
        return advance(Duration.ofMillis(millis));
    }

    @Override
    public String toString() {
        return "ManualClock[" + now.get() + "]";
    }
}
