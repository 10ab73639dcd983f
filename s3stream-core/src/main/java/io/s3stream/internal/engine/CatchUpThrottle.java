package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Caps the object-store reads of catch-up readers (read-ahead and the demand reads of sequential readers): at most
 * {@code maxInFlight} at once, and at most {@code bytesPerSecond} on average, so that replaying history can use the
 * store's spare capacity but never all of it.
 *
 * <p>Design note: this sits above {@code ObjectStorage}, whose scheduler ranks catch-up reads below uploads,
 * compaction and tail reads; the scheduler decides who goes first when slots are scarce, this throttle bounds how many
 * slots and how much bandwidth catch-up may take even when they are not. Requests over the limits wait in a FIFO
 * queue here, not in the store layer, so they hold no store slot and no memory while waiting (the read-ahead bytes
 * are reserved in the block cache, which bounds the queue's length). Bandwidth is paced rather than metered: each
 * request moves a "next start" clock forward by its size over the rate, and starts when the clock allows.
 *
 * <p>A request whose start the clock defers is started by the throttle's own daemon thread, the <em>pacer</em>
 * ({@value #PACER_THREAD}, created on the first deferred start), so the store request it issues (for S3: building and
 * signing it) runs on a thread of the engine's, not on a pool an embedder shares, such as the common ForkJoin pool.
 * After {@link #close()} nothing is deferred: requests start at once, and a store being closed fails them.
 */
final class CatchUpThrottle implements AutoCloseable {
    static final String PACER_THREAD = "s3stream-catch-up-pacer";

    private final int maxInFlight;
    private final ScheduledExecutorService pacer = Executors.newSingleThreadScheduledExecutor(
            r -> Thread.ofPlatform().daemon().name(PACER_THREAD).unstarted(r));
    private volatile long bytesPerSecond; // 0 or Long.MAX_VALUE: no limit
    private final LongAdder startedBytes = new LongAdder();
    private final ArrayDeque<Runnable> waiting = new ArrayDeque<>();
    private int inFlight; // guarded by this
    private long nextStartNanos; // guarded by this
    private long queued; // guarded by this: requests that had to wait, cumulative

    /**
     * @param maxInFlight    catch-up reads in flight at once, positive
     * @param bytesPerSecond average catch-up read bandwidth, or 0 for no limit
     */
    CatchUpThrottle(int maxInFlight, long bytesPerSecond) {
        this.maxInFlight = maxInFlight;
        this.bytesPerSecond = bytesPerSecond;
    }

    /** Changes the bandwidth limit (see {@link CatchUpGovernor}); 0 or {@link Long#MAX_VALUE} for none. */
    void bytesPerSecond(long rate) {
        bytesPerSecond = rate;
    }

    /** Runs {@code read} (of {@code bytes}) when the limits allow; the result is the read's. */
    CompletableFuture<ByteBuf> submit(int bytes, Supplier<CompletableFuture<ByteBuf>> read) {
        return submit(bytes, read, ByteBuf::release);
    }

    /**
     * Runs {@code read} (of {@code bytes}) when the limits allow; the result is the read's, and a result nobody can
     * take any more (the returned future was completed by someone else) goes to {@code discard}.
     */
    <T> CompletableFuture<T> submit(int bytes, Supplier<CompletableFuture<T>> read, Consumer<? super T> discard) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Runnable start = () -> pace(bytes, () -> run(read, result, discard));
        boolean now;
        synchronized (this) {
            now = inFlight < maxInFlight;
            if (now) {
                inFlight++;
            } else {
                queued++;
                waiting.add(start);
            }
        }
        if (now) {
            start.run();
        }
        return result;
    }

    synchronized long queued() {
        return queued;
    }

    /** The bandwidth limit as set: bytes per second, 0 or {@link Long#MAX_VALUE} for none. */
    long bytesPerSecond() {
        return bytesPerSecond;
    }

    /** The bandwidth limit now, bytes per second; 0 for none. */
    long limit() {
        long rate = bytesPerSecond;
        return rate == Long.MAX_VALUE ? 0 : rate;
    }

    /** Bytes of the reads started so far. */
    long startedBytes() {
        return startedBytes.sum();
    }

    /** Runs {@code start} (of a read of {@code bytes}) now, or on the pacer once the bandwidth clock allows. */
    private void pace(int bytes, Runnable start) {
        startedBytes.add(bytes);
        long rate = bytesPerSecond;
        long delayNanos = 0;
        if (rate > 0 && rate != Long.MAX_VALUE) {
            synchronized (this) {
                long now = System.nanoTime();
                long startAt = Math.max(now, nextStartNanos);
                nextStartNanos = startAt + (long) (bytes * 1e9 / rate);
                delayNanos = startAt - now;
            }
        }
        if (delayNanos > 0) {
            try {
                pacer.schedule(start, delayNanos, TimeUnit.NANOSECONDS);
                return;
            } catch (RejectedExecutionException closed) {
                // closed: start now
            }
        }
        start.run();
    }

    private <T> void run(Supplier<CompletableFuture<T>> read, CompletableFuture<T> result,
                         Consumer<? super T> discard) {
        CompletableFuture<T> f;
        try {
            f = read.get();
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((value, error) -> {
            Runnable next;
            synchronized (this) {
                next = waiting.poll();
                if (next == null) {
                    inFlight--;
                }
            }
            if (next != null) {
                next.run(); // the slot passes straight to the next waiter
            }
            if (error != null) {
                result.completeExceptionally(error);
            } else if (!result.complete(value)) {
                discard.accept(value);
            }
        });
    }

    /**
     * Stops the pacer: reads it holds still start when due, later ones start at once. Reads in flight are not
     * waited for.
     */
    @Override
    public void close() {
        pacer.shutdown();
    }
}
