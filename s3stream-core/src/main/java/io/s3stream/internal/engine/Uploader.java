package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.s3stream.NodeFencedException;
import io.s3stream.StorageIOException;
import io.s3stream.internal.format.ObjectBuilder;
import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectKeys;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamMetadata;
import io.s3stream.spi.StreamRange;
import io.s3stream.spi.StreamState;
import io.s3stream.spi.WriteAheadLog;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * The upload pipeline: seals log-cache blocks, turns each into objects, commits them to the manifest, then trims the
 * WAL. It owns one thread; everything it does happens there, one block at a time, so commits and WAL trims are in
 * order by construction.
 *
 * <h2>Per block</h2>
 * The block's runs are grouped by stream. A stream with at least {@code streamObjectThresholdBytes} becomes its own
 * stream object; the rest share one stream set object. Ids are prepared, objects are written (payload bytes are not
 * copied: the object is a composite over the cached buffers), and one {@link CommitRequest} makes them visible. Only
 * then is the WAL trimmed past the block's last record and the block made evictable.
 *
 * <h2>Failure</h2>
 * Object-store errors are retried below (in {@link ObjectStorage}); when a request still fails, the whole block is
 * retried after a pause, forever: the data stays in the log cache and the WAL, and appends feel it as back-pressure.
 * A stream that was fenced or deleted meanwhile is dropped from the commit (its data stays out of the manifest, and the
 * prepared objects expire). A fenced node stops uploading and fails the engine.
 */
final class Uploader implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Uploader.class.getName());
    private static final Duration PREPARED_TTL = Duration.ofHours(1);
    private static final long RETRY_PAUSE_MS = 200;
    /** Part size of multipart uploads: large enough for throughput, small enough to send several at once. */
    static final int PART_SIZE_BYTES = 8 * 1024 * 1024;

    private final StorageEngine engine;
    private final LogCache logCache;
    private final ObjectStorage objects;
    private final MetadataStore metadata;
    private final WriteAheadLog wal;
    private final ByteBufAllocator alloc;
    private final long uploadThresholdBytes;
    private final long uploadIntervalNanos;
    private final long streamObjectThresholdBytes;
    private final int blockSizeBytes;
    private final long multipartThresholdBytes;
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
     * data behind recovery's back: commits out of order, a WAL trim before {@code recover()} returned, and recovery
     * trimming past a block whose commit a newly opened epoch then fences, losing acknowledged appends.
     */
    private volatile boolean started;
    final LongAdder uploadedObjects = new LongAdder();
    final LongAdder uploadedBytes = new LongAdder();

    Uploader(StorageEngine engine, LogCache logCache, ObjectStorage objects, MetadataStore metadata, WriteAheadLog wal,
             ByteBufAllocator alloc, long uploadThresholdBytes, Duration uploadInterval,
             long streamObjectThresholdBytes, int blockSizeBytes, long multipartThresholdBytes) {
        this.engine = engine;
        this.logCache = logCache;
        this.objects = objects;
        this.metadata = metadata;
        this.wal = wal;
        this.alloc = alloc;
        this.uploadThresholdBytes = uploadThresholdBytes;
        this.uploadIntervalNanos = uploadInterval.toNanos();
        this.streamObjectThresholdBytes = streamObjectThresholdBytes;
        this.blockSizeBytes = blockSizeBytes;
        this.multipartThresholdBytes = multipartThresholdBytes;
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
            } catch (java.util.concurrent.RejectedExecutionException e) {
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
        LogCache.Block block = logCache.sealActive();
        if (block != null) {
            uploadWithRetry(block, true);
        }
    }

    /** Seals the active block and uploads everything; completes when all data appended so far is committed. */
    CompletableFuture<Void> uploadAll() {
        CompletableFuture<Void> done = new CompletableFuture<>();
        try {
            thread.execute(() -> {
                try {
                    LogCache.Block block = logCache.sealActive();
                    if (block != null) {
                        uploadWithRetry(block, true);
                    }
                    done.complete(null);
                } catch (Throwable t) {
                    done.completeExceptionally(t);
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            done.completeExceptionally(new StorageIOException("the uploader is stopped", e));
        }
        return done;
    }

    /** Recovery: seals and uploads the active block on the caller's thread, without trimming the WAL. */
    void uploadActiveForRecovery() {
        LogCache.Block block = logCache.sealActive();
        if (block != null) {
            uploadWithRetry(block, false);
        }
    }

    private void uploadWithRetry(LogCache.Block block, boolean trimWal) {
        if (abandoned) {
            throw new StorageIOException("an earlier log cache block could not be uploaded while closing; block "
                    + block.id + " stays in the WAL too and is recovered at the next start", null);
        }
        int attempt = 0;
        while (true) {
            try {
                upload(block);
                logCache.noteUploadProblem(null);
                break;
            } catch (NodeFencedException e) {
                engine.fail(e);
                throw e;
            } catch (RuntimeException e) {
                attempt++;
                Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
                logCache.noteUploadProblem(cause.getMessage());
                if (closing && attempt >= 3) {
                    abandoned = true;
                    throw new StorageIOException("upload of log cache block " + block.id + " failed " + attempt
                            + " times while closing; its data stays in the WAL and is recovered at the next start", e);
                }
                LOG.log(System.Logger.Level.WARNING, "upload of log cache block " + block.id + " failed (attempt "
                        + attempt + "), retrying: " + e);
                try {
                    Thread.sleep(Math.min(5_000, RETRY_PAUSE_MS * attempt));
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new StorageIOException("upload interrupted", ie);
                }
            }
        }
        if (trimWal && block.walNextPosition >= 0) {
            wal.trim(block.walNextPosition).join();
        }
        logCache.markUploaded(block);
    }

    private void upload(LogCache.Block block) {
        List<LogCache.Run> runs = block.runsInOrder();
        Map<Long, Long> bytesByStream = new LinkedHashMap<>();
        for (LogCache.Run run : runs) {
            bytesByStream.merge(run.streamId, run.bytes, Long::sum);
        }
        Set<Long> excluded = new HashSet<>();
        while (true) {
            List<LogCache.Run> live = runs.stream().filter(r -> !excluded.contains(r.streamId)).toList();
            if (live.isEmpty()) {
                return;
            }
            List<List<LogCache.Run>> groups = new ArrayList<>();
            List<LogCache.Run> setRuns = new ArrayList<>();
            List<ObjectType> types = new ArrayList<>();
            long currentStream = -1;
            for (LogCache.Run run : live) {
                if (bytesByStream.get(run.streamId) >= streamObjectThresholdBytes) {
                    if (run.streamId != currentStream) {
                        groups.add(new ArrayList<>());
                        types.add(ObjectType.STREAM);
                        currentStream = run.streamId;
                    }
                    groups.getLast().add(run);
                } else {
                    setRuns.add(run);
                }
            }
            if (!setRuns.isEmpty()) {
                groups.add(setRuns);
                types.add(ObjectType.STREAM_SET);
            }
            long firstId = metadata.prepareObjects(groups.size(), PREPARED_TTL).join();
            List<CommitRequest.NewObject> newObjects = new ArrayList<>();
            for (int i = 0; i < groups.size(); i++) {
                long objectId = firstId + i;
                newObjects.add(writeObject(objectId, types.get(i), groups.get(i)));
            }
            try {
                metadata.commitObjects(new CommitRequest(engine.nodeId(), engine.nodeEpoch(), newObjects, List.of())).join();
                for (CommitRequest.NewObject o : newObjects) {
                    uploadedObjects.increment();
                    uploadedBytes.add(o.sizeBytes());
                }
                return;
            } catch (CompletionException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                if (cause instanceof NodeFencedException nfe) {
                    throw nfe;
                }
                Set<Long> dead = streamsThatCannotCommit(live);
                if (dead.isEmpty()) {
                    throw e;
                }
                LOG.log(System.Logger.Level.WARNING, "streams " + dead + " were fenced or deleted before their data "
                        + "was committed; leaving it out of the upload: " + cause.getMessage());
                excluded.addAll(dead);
                dead.forEach(engine::streamLostOwnership);
            }
        }
    }

    /** Streams of the request that moved on (deleted, newer epoch, or end offset no longer matching). */
    private Set<Long> streamsThatCannotCommit(List<LogCache.Run> runs) {
        Set<Long> dead = new HashSet<>();
        Map<Long, LogCache.Run> firstRun = new LinkedHashMap<>();
        for (LogCache.Run run : runs) {
            firstRun.putIfAbsent(run.streamId, run);
        }
        for (Map.Entry<Long, LogCache.Run> e : firstRun.entrySet()) {
            Optional<StreamMetadata> meta = metadata.getStream(e.getKey()).join();
            LogCache.Run run = e.getValue();
            if (meta.isEmpty() || meta.get().state() == StreamState.DELETED || meta.get().epoch() > run.epoch
                    || meta.get().endOffset() != run.startOffset) {
                dead.add(e.getKey());
            }
        }
        return dead;
    }

    private CommitRequest.NewObject writeObject(long objectId, ObjectType type, List<LogCache.Run> runs) {
        List<StreamRange> ranges = new ArrayList<>();
        ByteBuf object;
        try (ObjectBuilder builder = new ObjectBuilder(alloc, blockSizeBytes)) {
            for (LogCache.Run run : runs) {
                for (CachedBatch b : run.batches) {
                    // The uploader thread is the only user of a cached record's internal NIO view.
                    builder.add(b.streamId, b.baseOffset, b.count, b.record,
                            b.record.readerIndex() + WalRecordFormat.HEADER_SIZE, b.payloadBytes(), true);
                }
                StreamRange last = ranges.isEmpty() ? null : ranges.getLast();
                if (last != null && last.streamId() == run.streamId && last.endOffset() == run.startOffset
                        && last.epoch() == run.epoch) {
                    ranges.set(ranges.size() - 1, new StreamRange(run.streamId, run.epoch, last.startOffset(), run.endOffset));
                } else {
                    ranges.add(new StreamRange(run.streamId, run.epoch, run.startOffset, run.endOffset));
                }
            }
            object = builder.build();
        }
        long size = object.readableBytes();
        try {
            String key = ObjectKeys.dataKey(objectId);
            if (size > multipartThresholdBytes) {
                // Parts go out concurrently; a failed upload is aborted and the whole object retried by the caller.
                objects.putMultipart(key, object, PART_SIZE_BYTES, ObjectStorage.Priority.UPLOAD).join();
            } else {
                objects.put(key, object, ObjectStorage.Priority.UPLOAD).join();
            }
        } finally {
            object.release();
        }
        return new CommitRequest.NewObject(objectId, type, size, ranges);
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
        thread.shutdown();
        try {
            if (!thread.awaitTermination(60, TimeUnit.SECONDS)) {
                thread.shutdownNow();
            }
        } catch (InterruptedException e) {
            thread.shutdownNow();
            Thread.currentThread().interrupt();
        }
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

    boolean isClosing() {
        return closing;
    }
}
