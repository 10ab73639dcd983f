package io.s3stream.internal.engine;

import io.s3stream.NodeFencedException;
import io.s3stream.StorageIOException;
import io.s3stream.internal.util.Executors2;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongFunction;

/**
 * The upload pipeline: seals log-cache blocks, has each turned into committed objects ({@link BlockUploader}), then
 * trims the WAL. It owns one thread; everything it does happens there, one block at a time, so commits and WAL trims
 * are in order by construction.
 *
 * <h2>When</h2>
 * A round starts when the active block reaches {@code uploadThresholdBytes} ({@link #onActiveSize}), when it is older
 * than {@code uploadInterval} (a ticker), when an append waits for log-cache space ({@link #trigger}, wired straight
 * from the log cache's pressure listener), and on {@link #uploadAll} (flush and close). Triggers coalesce.
 *
 * <h2>Failure</h2>
 * Object-store errors are retried below (in the object-store layer); when a request still fails, the whole block is
 * retried after a pause, forever: the data stays in the log cache and the WAL, and appends feel it as back-pressure.
 * Streams fenced or deleted meanwhile are reported to the {@link Listener} and left out. A fenced node stops uploading
 * and tells the listener. While closing, a block that keeps failing is given up after a few attempts and nothing is
 * trimmed from then on: its records stay in the WAL for the next start.
 */
final class Uploader implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Uploader.class.getName());
    /** How long {@link #uploadAll} waits for the WAL segment in progress to end before sealing inside it. */
    private static final long SEGMENT_WAIT_NANOS = TimeUnit.SECONDS.toNanos(2);

    /** What the pipeline reports to the engine. */
    interface Listener {
        /** The manifest has a newer instance of this node: the engine must stop. */
        void nodeFenced(NodeFencedException e);

        /** These streams were fenced or deleted in the manifest before their data could be committed. */
        void streamsLost(Set<Long> streamIds);
    }

    private final LogCache logCache;
    private final BlockUploader blocks;
    private final LongFunction<CompletableFuture<Void>> walTrim;
    private final Listener listener;
    private final long uploadThresholdBytes;
    private final long uploadIntervalNanos;
    private final ExecutorService thread;
    private final ScheduledExecutorService ticker;
    private final AtomicBoolean triggered = new AtomicBoolean();
    private volatile boolean closing;
    /**
     * Set when a block was given up on (only while closing). From then on no block is uploaded and the WAL is never
     * trimmed again: trimming past a later block would drop the abandoned block's records from the WAL, their only
     * durable copy. Everything stays in the WAL and is recovered at the next start.
     */
    private volatile boolean abandoned;
    /**
     * False while the engine recovers: recovery uploads recovered blocks itself, in order, on its own thread, and only
     * then trims the WAL. A round on the uploader thread meanwhile (the age ticker, cache pressure) would seal recovered
     * data behind recovery's back: commits out of order, a WAL trim before recovery returned, and recovery trimming
     * past a block whose commit a newly opened epoch then fences, losing acknowledged appends.
     */
    private volatile boolean started;

    Uploader(LogCache logCache, BlockUploader blocks, LongFunction<CompletableFuture<Void>> walTrim, Listener listener,
             long uploadThresholdBytes, Duration uploadInterval) {
        this.logCache = logCache;
        this.blocks = blocks;
        this.walTrim = walTrim;
        this.listener = listener;
        this.uploadThresholdBytes = uploadThresholdBytes;
        this.uploadIntervalNanos = uploadInterval.toNanos();
        this.thread = Executors.newSingleThreadExecutor(r -> Thread.ofPlatform().daemon().name("s3stream-uploader").unstarted(r));
        this.ticker = Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon().name("s3stream-upload-ticker").unstarted(r));
        long tick = Math.max(10, Math.min(1000, uploadInterval.toMillis() / 4));
        ticker.scheduleWithFixedDelay(this::tick, tick, tick, TimeUnit.MILLISECONDS);
    }

    /** Lets triggers and the age ticker start upload rounds; called once recovery has uploaded and trimmed. */
    void start() {
        started = true;
    }

    /** Asks for an upload of the active block now (coalesced: many triggers, one upload); ignored before {@link #start}. */
    void trigger() {
        if (started && !closing && triggered.compareAndSet(false, true)) {
            try {
                thread.execute(this::uploadRound);
            } catch (RejectedExecutionException e) {
                triggered.set(false);
            }
        }
    }

    /** Called after each insert with the active block's size. */
    void onActiveSize(long activeBytes) {
        if (activeBytes >= uploadThresholdBytes) {
            trigger();
        }
    }

    private void tick() {
        if (logCache.activeAgeNanos(System.nanoTime()) >= uploadIntervalNanos) {
            trigger();
        }
    }

    private void uploadRound() {
        triggered.set(false);
        uploadSealed();
        LogCache.Block block = logCache.sealActive();
        if (block != null) {
            uploadWithRetry(block, true);
        }
    }

    /** Uploads blocks that inserts sealed at a segment boundary. */
    private void uploadSealed() {
        LogCache.Block block;
        while ((block = logCache.pollSealed()) != null) {
            uploadWithRetry(block, true);
        }
    }

    /** Seals the active block and uploads everything; completes when all data appended so far is committed. */
    CompletableFuture<Void> uploadAll() {
        CompletableFuture<Void> done = new CompletableFuture<>();
        try {
            thread.execute(() -> {
                try {
                    uploadSealed();
                    LogCache.Block block = logCache.sealActive();
                    long deadline = System.nanoTime() + SEGMENT_WAIT_NANOS;
                    while (block == null && logCache.sealPending()) {
                        // The WAL segment in progress completes as a whole, so its last batches arrive at once.
                        LogCache.Block sealed = logCache.pollSealed();
                        if (sealed != null) {
                            block = sealed;
                        } else if (System.nanoTime() >= deadline) {
                            block = logCache.sealActive(true);
                        } else {
                            Thread.sleep(1);
                        }
                    }
                    if (block != null) {
                        uploadWithRetry(block, true);
                    }
                    uploadSealed();
                    done.complete(null);
                } catch (Throwable t) {
                    done.completeExceptionally(t);
                }
            });
        } catch (RejectedExecutionException e) {
            done.completeExceptionally(new StorageIOException("the uploader is stopped", e));
        }
        return done;
    }

    private void uploadWithRetry(LogCache.Block block, boolean trimWal) {
        if (abandoned) {
            throw new StorageIOException("an earlier log cache block could not be uploaded while closing; block "
                    + block.id + " stays in the WAL too and is recovered at the next start", null);
        }
        try {
            BlockUploader.Outcome outcome = blocks.uploadRetrying(block, (attempts, cause) -> {
                logCache.noteUploadProblem(cause.getMessage());
                return closing && attempts >= 3;
            });
            logCache.noteUploadProblem(null);
            if (!outcome.lostStreams().isEmpty()) {
                listener.streamsLost(outcome.lostStreams());
            }
        } catch (NodeFencedException e) {
            listener.nodeFenced(e);
            throw e;
        } catch (RuntimeException e) {
            abandoned = true;
            throw new StorageIOException("upload of log cache block " + block.id + " failed repeatedly while "
                    + "closing; its data stays in the WAL and is recovered at the next start", e);
        }
        if (trimWal && block.walNextPosition >= 0) {
            walTrim.apply(block.walNextPosition).join();
        }
        logCache.markUploaded(block);
    }

    /**
     * The engine is closing: from now on a failing upload is given up after a few attempts (its data stays in the WAL)
     * instead of being retried until the store recovers, so that close() ends.
     */
    void beginClose() {
        closing = true;
    }

    /** Stops taking new rounds; an upload in progress finishes (or gives up after a few attempts). */
    @Override
    public void close() {
        closing = true;
        ticker.shutdownNow();
        Executors2.stop(thread, 60, TimeUnit.SECONDS);
    }

    /** Crash simulation: stop at once. */
    void halt() {
        closing = true;
        ticker.shutdownNow();
        thread.shutdownNow();
        try {
            thread.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
