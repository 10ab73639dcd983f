package io.s3stream.internal.engine;

import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * Adapts the bandwidth of catch-up reads to the CPU a node has to spare while it takes appends: history is replayed
 * with what appends leave, in the manner of a background transport (LEDBAT) that backs off as soon as it delays
 * foreground traffic, with the machine's CPU load as the signal that it does.
 *
 * <p>Every {@link #TICK_NANOS} the governor looks at the last tick: when appends were acknowledged in it and the CPU
 * load was above the target, the rate drops to {@link #DECREASE} of the lower of itself and what catch-up actually
 * read (so the first cut bites even while the rate was unbounded), never below {@link #FLOOR_BYTES_PER_SECOND}, so a
 * replay always progresses; otherwise, if catch-up used at least half of it, it grows by {@link #INCREASE} of itself
 * plus the floor's share of a tick, up to the configured cap. A rate nobody uses does not grow (so a replay that
 * starts after a pause starts at the rate the last one settled at, not at a burst), and a node that takes no appends
 * or has CPU to spare climbs back to the cap within seconds: the governor only acts on the contention it is meant to
 * prevent.
 *
 * <p>Design note: the CPU, not the append latency, is the signal because on a busy node the delay an append sees
 * mostly builds up outside the engine (the request waiting for its event loop, the client's own threads), which the
 * engine cannot time; the load of the whole machine also counts a store or a consumer on the same host. The
 * multiplicative increase makes the rate recover from the floor to 1 GiB/s in under 12 s.
 *
 * <p>Cost: the load is read every tick only while catch-up reads run (in the last {@link #IDLE_SAMPLE_TICKS} ticks),
 * and every {@code IDLE_SAMPLE_TICKS}-th tick otherwise: reading it is not free (in a container the JVM parses cgroup
 * files each time), and a tick without catch-up reads never cuts. The JVM reports the load averaged since the previous
 * reading, so the idle readings also keep the first reading of a new catch-up to the last second, never an average
 * over a long pause.
 */
final class CatchUpGovernor implements AutoCloseable {
    static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    static final long FLOOR_BYTES_PER_SECOND = 4L << 20;
    static final double DECREASE = 0.7;
    static final double INCREASE = 0.05;
    /** Ticks without catch-up reads after which the load is read only every this many ticks. */
    static final int IDLE_SAMPLE_TICKS = 10;

    private final double cpuTarget;
    private final long capBytesPerSecond;
    private final DoubleSupplier cpuLoad;
    private final LongSupplier appends;
    private final CatchUpThrottle throttle; // holds the rate: bytes per second, Long.MAX_VALUE for unbounded
    private long lastAppends; // guarded by this
    private long lastCatchUpBytes; // guarded by this
    private long cuts; // guarded by this
    private int ticksSinceRead = IDLE_SAMPLE_TICKS; // guarded by this
    private int ticksSinceSample = IDLE_SAMPLE_TICKS; // guarded by this
    private volatile Thread ticker;

    /**
     * @param cpuTarget         the machine's CPU load (0..1) above which catch-up backs off while appends are taken
     * @param capBytesPerSecond the configured cap, or 0 for none
     * @param cpuLoad           the machine's recent CPU load, 0..1 (negative when unknown: never over the target)
     * @param appends           appends acknowledged so far
     * @param throttle          the throttle of catch-up reads, whose rate this sets
     */
    CatchUpGovernor(double cpuTarget, long capBytesPerSecond, DoubleSupplier cpuLoad, LongSupplier appends,
                    CatchUpThrottle throttle) {
        this.cpuTarget = cpuTarget;
        this.capBytesPerSecond = capBytesPerSecond == 0 ? Long.MAX_VALUE : capBytesPerSecond;
        this.cpuLoad = cpuLoad;
        this.appends = appends;
        this.throttle = throttle;
        this.lastAppends = appends.getAsLong();
        this.lastCatchUpBytes = throttle.startedBytes();
        throttle.bytesPerSecond(this.capBytesPerSecond);
    }

    /** The load of the whole machine as the JVM reports it (its container's, in a container). */
    static DoubleSupplier machineCpuLoad() {
        var os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean bean) {
            return bean::getCpuLoad;
        }
        return () -> -1;
    }

    /** Starts ticking on a daemon thread of its own, until {@link #close()}. */
    CatchUpGovernor start() {
        Thread t = Thread.ofPlatform().daemon().name("s3stream-catch-up-governor").unstarted(() -> {
            while (ticker != null) {
                LockSupport.parkNanos(TICK_NANOS);
                tick();
            }
        });
        ticker = t;
        t.start();
        return this;
    }

    @Override
    public void close() {
        Thread t = ticker;
        ticker = null;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    /** The current catch-up bandwidth, bytes per second; {@link Long#MAX_VALUE} for no limit. */
    long bytesPerSecond() {
        return throttle.bytesPerSecond();
    }

    /** Times the rate was cut. */
    synchronized long cuts() {
        return cuts;
    }

    /** Looks at the tick that just ended and adjusts the rate; called every {@link #TICK_NANOS}. */
    synchronized void tick() {
        long appended = appends.getAsLong();
        long read = throttle.startedBytes();
        boolean appending = appended != lastAppends;
        long readPerSecond = (read - lastCatchUpBytes) * TimeUnit.SECONDS.toNanos(1) / TICK_NANOS;
        lastAppends = appended;
        lastCatchUpBytes = read;
        ticksSinceRead = readPerSecond > 0 ? 0 : Math.min(ticksSinceRead + 1, IDLE_SAMPLE_TICKS);
        double load = -1;
        if (ticksSinceRead < IDLE_SAMPLE_TICKS || ++ticksSinceSample >= IDLE_SAMPLE_TICKS) {
            load = cpuLoad.getAsDouble();
            ticksSinceSample = 0;
        }
        long current = throttle.bytesPerSecond();
        if (appending && load > cpuTarget && readPerSecond > 0) {
            cuts++;
            long cut = (long) (Math.min(current, readPerSecond) * DECREASE);
            throttle.bytesPerSecond(Math.max(FLOOR_BYTES_PER_SECOND, cut));
        } else if (current < capBytesPerSecond && readPerSecond >= current / 2) {
            long step = (long) (current * INCREASE) + FLOOR_BYTES_PER_SECOND * TICK_NANOS / TimeUnit.SECONDS.toNanos(1);
            throttle.bytesPerSecond(current > capBytesPerSecond - step ? capBytesPerSecond : current + step);
        }
    }
}
