package io.s3stream.internal.compaction;

import io.s3stream.internal.util.Executors2;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.LongConsumer;

/**
 * Deletion of retired objects on a thread of its own, beside the compactor's rounds, so that retired objects go (and
 * space comes back) even while a round is slow or stuck: the hour-long soak test once saw a round stall mid-upload
 * and, with deletion only inside rounds, every trimmed object stayed for the rest of the run (disk use grew ~1 GB in
 * 15 minutes). Each pass also reports a round that has run for more than {@link #STUCK_ROUND_NANOS}, with the stack of
 * the thread running it, once per that period.
 */
final class DeletionLoop {
    private static final System.Logger LOG = System.getLogger(Compactor.class.getName());
    static final long STUCK_ROUND_NANOS = TimeUnit.MINUTES.toNanos(10);

    private final RetiredObjects retired;
    private final LongConsumer deleted;
    private final BiConsumer<String, RuntimeException> failed;
    private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(
            r -> Thread.ofPlatform().daemon().name("s3stream-object-deletion").unstarted(r));
    /** {@link RetiredObjects} is single-threaded: the rounds' passes and this thread's take turns. */
    private final Object lock = new Object();
    /** When the running round started ({@link System#nanoTime()}), 0 between rounds; and the thread running it. */
    private volatile long roundStartedNanos;
    private volatile Thread roundThread;
    private volatile boolean closed;
    private long lastStuckReportNanos; // the deletion thread's

    /**
     * @param deleted called with the number of objects each pass deleted
     * @param failed  called with what failed and why when a pass fails (the next one tries again)
     */
    DeletionLoop(RetiredObjects retired, LongConsumer deleted, BiConsumer<String, RuntimeException> failed) {
        this.retired = retired;
        this.deleted = deleted;
        this.failed = failed;
    }

    void start(long intervalMs) {
        thread.scheduleWithFixedDelay(this::pass, intervalMs, intervalMs, TimeUnit.MILLISECONDS);
    }

    /** Deletes the retired objects whose grace period is over, now, on the caller's thread. */
    void deleteDue() {
        synchronized (lock) {
            deleted.accept(retired.deleteDue());
        }
    }

    void roundStarted() {
        roundThread = Thread.currentThread();
        roundStartedNanos = System.nanoTime();
    }

    void roundEnded() {
        roundStartedNanos = 0;
    }

    private void pass() {
        if (closed) {
            return;
        }
        try {
            deleteDue();
        } catch (RuntimeException e) {
            failed.accept("deletion pass failed", e);
        }
        long started = roundStartedNanos;
        Thread t = roundThread;
        long now = System.nanoTime();
        if (started != 0 && t != null && now - started > STUCK_ROUND_NANOS
                && (lastStuckReportNanos == 0 || now - lastStuckReportNanos > STUCK_ROUND_NANOS)) {
            lastStuckReportNanos = now;
            StringBuilder where = new StringBuilder();
            for (StackTraceElement e : t.getStackTrace()) {
                where.append("\n\tat ").append(e);
            }
            LOG.log(System.Logger.Level.WARNING, "a compaction round has run for "
                    + TimeUnit.NANOSECONDS.toMinutes(now - started) + " minutes (deletion goes on without it); the "
                    + "compactor is at:" + where);
        }
    }

    /** Stops scheduling passes and waits up to a minute for one in progress. */
    void close() {
        closed = true;
        Executors2.stop(thread, 60, TimeUnit.SECONDS);
    }

    void halt() {
        closed = true;
        thread.shutdownNow();
    }
}
