package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.AppendResult;
import io.s3stream.OverCapacityException;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StorageIOException;
import io.s3stream.StorageMetrics;
import io.s3stream.Stream;
import io.s3stream.StreamClosedException;
import io.s3stream.StreamFencedException;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.cache.BlockCache;
import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.StreamMetadata;
import io.s3stream.spi.StreamState;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiConsumer;

/**
 * The storage engine behind {@link StreamStorage}: sequences appends of every stream through one write-ahead log,
 * keeps them in the log cache, has them uploaded into objects, and serves reads.
 *
 * <h2>Concurrency</h2>
 * Appends of all streams pass one short critical section, the <em>sequencer</em>: it assigns the stream's offsets,
 * encodes the WAL record and hands it to the WAL, and queues the in-flight append. Because the WAL is called in
 * sequencer order, WAL positions follow queue order. Completions are <em>drained</em> from the head of that queue only,
 * by whichever thread finds the head durable (usually the WAL's completion thread), so batches enter the log cache and
 * futures complete in WAL order: per stream in offset order, and across streams in an order that makes every sealed
 * log-cache block a prefix of the WAL. The upload pipeline has its own thread ({@link Uploader}).
 *
 * <h2>Durability</h2>
 * An append's future completes only after the WAL reported it durable and the batch is in the log cache. The WAL is
 * trimmed only past blocks whose objects are committed. {@link #start} recovers the WAL before it returns: records
 * after the trim point go back into the log cache and are uploaded, so nothing acknowledged is lost across a crash.
 *
 * <h2>Failure</h2>
 * A batch whose WAL append failed fences its stream (later batches of that stream fail too, even if durable, so the
 * stream never has a hole; recovery skips such orphans). A WAL IO error fences the whole engine: appends fail fast
 * with the cause, while acknowledged data in the log cache is still uploaded. A full log cache makes appends wait,
 * then fail with {@link OverCapacityException} before any offset is assigned.
 */
public final class StorageEngine implements StreamStorage {
    private static final System.Logger LOG = System.getLogger(StorageEngine.class.getName());

    private final StorageConfig config;
    private final ByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
    private final ObjectStorage objects;
    private final MetadataStore metadata;
    private final long nodeEpoch;
    private final WriteAheadLog wal;
    private final LogCache logCache;
    private final BlockCache blockCache;
    private final ObjectFetcher fetcher;
    private final Uploader uploader;

    private final ReentrantLock sequencer = new ReentrantLock();
    /**
     * In-flight appends as an intrusive queue through {@link CachedBatch#next}: linked at {@link #inflightTail} under
     * the sequencer, consumed from {@link #drainHead} (a sentinel: the last processed batch) by one drainer at a time.
     */
    private CachedBatch inflightTail;
    private volatile CachedBatch drainHead;
    private final AtomicBoolean draining = new AtomicBoolean();
    private final BiConsumer<Object, Throwable> drainOnCompletion = (result, error) -> drain();
    private final ConcurrentHashMap<Long, StreamHandle> streams = new ConcurrentHashMap<>();
    private final long backpressureNanos;
    private volatile RuntimeException failure;
    private volatile boolean closed;
    private final LongAdder appendedBatches = new LongAdder();
    private final LongAdder appendedBytes = new LongAdder();
    private final io.s3stream.KeyValues keyValues = new io.s3stream.KeyValues() {
        @Override
        public CompletableFuture<Optional<byte[]>> get(String key) {
            return metadata.getKv(key);
        }

        @Override
        public CompletableFuture<Void> put(String key, byte[] value) {
            return metadata.putKv(key, value);
        }

        @Override
        public CompletableFuture<Void> delete(String key) {
            return metadata.deleteKv(key);
        }

        @Override
        public CompletableFuture<java.util.SortedMap<String, byte[]>> list(String prefix) {
            return metadata.listKv(prefix);
        }

        @Override
        public CompletableFuture<Boolean> compareAndSet(String key, byte[] expected, byte[] value) {
            return metadata.compareAndSetKv(key, expected, value);
        }
    };

    private StorageEngine(StorageConfig config, ObjectStorage objects, MetadataStore metadata, long nodeEpoch,
                          WriteAheadLog wal) {
        this.config = config;
        this.objects = objects;
        this.metadata = metadata;
        this.nodeEpoch = nodeEpoch;
        this.wal = wal;
        this.backpressureNanos = config.backpressureTimeout().toNanos();
        CachedBatch sentinel = CachedBatch.marker(() -> { });
        this.inflightTail = sentinel;
        this.drainHead = sentinel;
        this.logCache = new LogCache(config.logCacheBytes(), this::onCachePressure);
        this.blockCache = BlockCache.create(config.blockCacheBytes());
        this.fetcher = new ObjectFetcher(objects, blockCache, 10_000);
        this.uploader = new Uploader(this, logCache, objects, metadata, wal, alloc, config.uploadThresholdBytes(),
                config.uploadInterval(), config.streamObjectThresholdBytes(), config.objectBlockSizeBytes());
    }

    /** Opens the backends, registers the node, recovers the WAL, and returns a running engine. */
    public static StorageEngine start(StorageConfig config) {
        ObjectStorage objects = new ObjectStorage(ObjectStores.open(config.objectStore()),
                ObjectStorage.RetryPolicy.defaults());
        MetadataStore metadata = null;
        WriteAheadLog wal = null;
        try {
            metadata = Backends.openMetadata(config, objects.backend());
            long nodeEpoch = metadata.registerNode(config.nodeId()).join();
            wal = Backends.openWal(config, new WalContext(config.nodeId(), nodeEpoch, config.dataDir(),
                    config.backpressureTimeout()));
            StorageEngine engine = new StorageEngine(config, objects, metadata, nodeEpoch, wal);
            engine.recover();
            LOG.log(System.Logger.Level.INFO, "node {0} (epoch {1}) started: WAL {2}, objects {3}", config.nodeId(),
                    nodeEpoch, wal.description(), objects.description());
            return engine;
        } catch (RuntimeException e) {
            if (wal != null) {
                wal.close();
            }
            if (metadata != null) {
                metadata.close();
            }
            objects.close();
            throw unwrap(e);
        }
    }

    // ---------------------------------------------------------------- recovery

    private void recover() {
        Map<Long, long[]> expectedNext = new HashMap<>();
        long[] dropped = new long[1];
        WriteAheadLog.RecoveryResult result = wal.recover((position, next, record) -> {
            boolean kept = false;
            try {
                WalRecordFormat.Decoded d = WalRecordFormat.decode(record, wal.description() + " position " + position);
                long[] expected = expectedNext.computeIfAbsent(d.streamId(), id -> {
                    Optional<StreamMetadata> meta = metadata.getStream(id).join();
                    return meta.filter(m -> m.state() != StreamState.DELETED)
                            .map(m -> new long[]{m.endOffset()}).orElse(new long[]{-1});
                });
                long end = d.baseOffset() + d.count();
                if (expected[0] < 0 || end <= expected[0]) {
                    return; // deleted stream, or already in committed objects
                }
                if (d.baseOffset() != expected[0]) {
                    dropped[0]++; // follows a failed append: never acknowledged
                    return;
                }
                if (logCache.activeBytes() + record.readableBytes() > config.uploadThresholdBytes()) {
                    uploader.uploadActiveForRecovery();
                }
                logCache.reserve(record.readableBytes(), backpressureNanos);
                CachedBatch batch = new CachedBatch(d.streamId(), null, d.epoch(), d.baseOffset(), d.count(), record, null);
                batch.walNextPosition = next;
                logCache.insert(batch);
                expected[0] = end;
                kept = true;
            } finally {
                if (!kept) {
                    record.release();
                }
            }
        });
        uploader.uploadActiveForRecovery();
        if (result.records() > 0) {
            wal.trim(result.nextPosition()).join();
        }
        LOG.log(System.Logger.Level.INFO, "recovered {0} WAL records ({1} bytes) from {2}; {3} orphan record(s) "
                + "after failed appends skipped; {4}", result.records(), result.bytes(), wal.description(), dropped[0],
                result.detail());
    }

    // ---------------------------------------------------------------- streams

    @Override
    public CompletableFuture<Stream> createStream(StreamOptions options) {
        if (closed) {
            return CompletableFuture.failedFuture(new StreamClosedException("the storage engine is closed"));
        }
        return metadata.createStream(config.nodeId(), nodeEpoch, options).thenApply(meta -> {
            StreamHandle handle = new StreamHandle(this, meta);
            streams.put(meta.streamId(), handle);
            return handle;
        });
    }

    @Override
    public CompletableFuture<Stream> openStream(long streamId, long epoch) {
        if (closed) {
            return CompletableFuture.failedFuture(new StreamClosedException("the storage engine is closed"));
        }
        StreamHandle existing = streams.get(streamId);
        CompletableFuture<Void> handOver = CompletableFuture.completedFuture(null);
        if (existing != null) {
            if (epoch <= existing.epoch()) {
                return CompletableFuture.failedFuture(new StreamFencedException("stream " + streamId
                        + " is already open on this node at epoch " + existing.epoch() + "; open it with a higher epoch"));
            }
            sequencer.lock();
            try {
                existing.refuse(StreamHandle.fenced(streamId, existing.epoch(), "opened again at epoch " + epoch));
            } finally {
                sequencer.unlock();
            }
            handOver = finishStream(existing, false);
        }
        return handOver.thenCompose(v -> metadata.openStream(streamId, epoch, config.nodeId(), nodeEpoch))
                .thenApply(meta -> {
                    StreamHandle handle = new StreamHandle(this, meta);
                    streams.put(streamId, handle);
                    return handle;
                });
    }

    /** Stream.close()/destroy(): refuse appends, upload, then record the close (or delete) in the manifest. */
    void closeStream(StreamHandle handle, boolean destroy) {
        sequencer.lock();
        try {
            handle.refuse(StreamHandle.closed(handle.streamId()));
        } finally {
            sequencer.unlock();
        }
        finishStream(handle, destroy);
    }

    private CompletableFuture<Void> finishStream(StreamHandle handle, boolean destroy) {
        CompletableFuture<Void> done = handle.closeFuture();
        if (done.isDone()) {
            return done;
        }
        flush().thenCompose(v -> destroy
                        ? metadata.deleteStream(handle.streamId(), handle.epoch())
                        : metadata.closeStream(handle.streamId(), handle.epoch(), config.nodeId(), nodeEpoch)
                                .thenApply(m -> (Void) null))
                .whenComplete((v, error) -> {
                    streams.remove(handle.streamId(), handle);
                    if (error == null) {
                        done.complete(null);
                    } else {
                        done.completeExceptionally(unwrap(error));
                    }
                });
        return done;
    }

    /** Completes once every append issued before the call is processed and uploaded. */
    CompletableFuture<Void> flush() {
        CompletableFuture<Void> drained = new CompletableFuture<>();
        sequencer.lock();
        try {
            enqueue(CachedBatch.marker(() -> drained.complete(null)));
        } finally {
            sequencer.unlock();
        }
        drain();
        return drained.thenCompose(v -> uploader.uploadAll());
    }

    /** The uploader found the stream fenced or deleted in the manifest: refuse its appends. */
    void streamLostOwnership(long streamId) {
        StreamHandle handle = streams.get(streamId);
        if (handle != null) {
            sequencer.lock();
            try {
                handle.refuse(StreamHandle.fenced(streamId, handle.epoch(), "the manifest has a newer owner or "
                        + "the stream was deleted"));
            } finally {
                sequencer.unlock();
            }
        }
    }

    long nextOffset(StreamHandle handle) {
        sequencer.lock();
        try {
            return handle.nextOffset;
        } finally {
            sequencer.unlock();
        }
    }

    // ---------------------------------------------------------------- append path

    CompletableFuture<AppendResult> append(StreamHandle handle, RecordBatch batch) {
        int payloadBytes = batch.sizeBytes();
        int recordBytes = WalRecordFormat.HEADER_SIZE + payloadBytes;
        if (payloadBytes > config.maxBatchBytes() || recordBytes > wal.maxRecordBytes()) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("a batch of " + payloadBytes
                    + " bytes exceeds the largest batch (StorageConfig.maxBatchBytes " + config.maxBatchBytes()
                    + ", WAL record limit " + (wal.maxRecordBytes() - WalRecordFormat.HEADER_SIZE) + ")"));
        }
        RuntimeException refused = refusal(handle);
        if (refused != null) {
            return CompletableFuture.failedFuture(refused);
        }
        try {
            logCache.reserve(recordBytes, backpressureNanos);
        } catch (OverCapacityException e) {
            return CompletableFuture.failedFuture(e);
        }
        CachedBatch pending;
        CompletableFuture<WalAppendResult> walFuture;
        sequencer.lock();
        try {
            refused = refusal(handle);
            if (refused != null) {
                logCache.unreserve(recordBytes);
                return CompletableFuture.failedFuture(refused);
            }
            long baseOffset = handle.nextOffset;
            ByteBuf record = WalRecordFormat.encode(alloc, handle.streamId(), handle.epoch(), baseOffset,
                    batch.count(), batch.payload());
            pending = new CachedBatch(handle.streamId(), handle, handle.epoch(), baseOffset, batch.count(), record,
                    new CompletableFuture<>());
            handle.nextOffset = baseOffset + batch.count();
            try {
                walFuture = wal.append(record);
            } catch (RuntimeException e) {
                walFuture = CompletableFuture.failedFuture(e);
            }
            pending.walFuture = walFuture;
            enqueue(pending);
        } finally {
            sequencer.unlock();
        }
        // `pending.walFuture` may already be processed and cleared by a drain on another thread: use the local.
        walFuture.whenComplete(drainOnCompletion);
        return pending.userFuture;
    }

    private RuntimeException refusal(StreamHandle handle) {
        RuntimeException engineFailure = failure;
        if (engineFailure != null) {
            return engineFailure;
        }
        if (closed) {
            return new StreamClosedException("the storage engine is closed");
        }
        return handle.refusal;
    }

    /** Links a batch at the tail of the in-flight queue; caller holds the sequencer. */
    private void enqueue(CachedBatch batch) {
        inflightTail.next = batch; // volatile write publishes the batch to the drainer
        inflightTail = batch;
    }

    /** Processes durable appends from the head of the queue, in order; safe to call from any thread. */
    private void drain() {
        while (true) {
            if (!draining.compareAndSet(false, true)) {
                return;
            }
            try {
                CachedBatch head = drainHead;
                CachedBatch next;
                while ((next = head.next) != null && next.walFuture.isDone()) {
                    // Unlink the old sentinel; `next` becomes the sentinel. The sequencer never writes head.next
                    // again: once it is non-null the tail has moved past head.
                    head.next = null;
                    head = next;
                    drainHead = head;
                    process(head);
                }
            } finally {
                draining.set(false);
            }
            CachedBatch next = drainHead.next;
            if (next == null || !next.walFuture.isDone()) {
                return;
            }
        }
    }

    private void process(CachedBatch batch) {
        if (batch.marker != null) {
            batch.marker.run();
            return;
        }
        StreamHandle handle = batch.stream;
        Throwable error = null;
        WalAppendResult result = null;
        try {
            result = batch.walFuture.join();
        } catch (CompletionException e) {
            error = e.getCause() != null ? e.getCause() : e;
        }
        if (error == null && handle.holeCause != null) {
            error = StreamHandle.fenced(handle.streamId(), handle.epoch(), "an earlier append failed: "
                    + handle.holeCause.getMessage());
        }
        if (error != null) {
            logCache.unreserve(batch.sizeBytes());
            batch.record.release();
            if (handle.holeCause == null) {
                handle.holeCause = error;
                sequencer.lock();
                try {
                    handle.refuse(StreamHandle.fenced(handle.streamId(), handle.epoch(), "append at offset "
                            + batch.baseOffset + " failed: " + error.getMessage()));
                } finally {
                    sequencer.unlock();
                }
            }
            if (error instanceof StorageIOException sio && failure == null) {
                fail(sio);
            }
            batch.userFuture.completeExceptionally(error);
            return;
        }
        batch.walNextPosition = result.nextPosition();
        batch.walFuture = null;
        uploader.onActiveSize(logCache.insertAndGetActiveBytes(batch));
        handle.confirm(batch.endOffset());
        appendedBatches.increment();
        appendedBytes.add(batch.payloadBytes());
        batch.userFuture.complete(new AppendResult(batch.baseOffset));
    }

    private void onCachePressure() {
        uploader.trigger();
    }

    /** Fences the whole engine: appends fail fast with {@code cause}; acknowledged data is still uploaded. */
    void fail(RuntimeException cause) {
        if (failure == null) {
            failure = cause;
            LOG.log(System.Logger.Level.ERROR, "storage engine fenced: " + cause.getMessage(), cause);
        }
    }

    // ---------------------------------------------------------------- accessors for collaborators

    LogCache logCache() {
        return logCache;
    }

    MetadataStore metadataStore() {
        return metadata;
    }

    ObjectFetcher fetcher() {
        return fetcher;
    }

    long nodeId() {
        return config.nodeId();
    }

    long nodeEpoch() {
        return nodeEpoch;
    }

    @Override
    public io.s3stream.KeyValues keyValues() {
        return keyValues;
    }

    @Override
    public StorageMetrics metrics() {
        BlockCache.Stats cache = blockCache.stats();
        return new StorageMetrics(appendedBatches.sum(), appendedBytes.sum(), uploader.uploadedObjects.sum(),
                uploader.uploadedBytes.sum(), logCache.usedBytes(), cache.bytesHeld(), cache.hits(), cache.misses(),
                objects.requestCounts(), objects.bytesOut(), objects.bytesIn());
    }

    // ---------------------------------------------------------------- shutdown

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<StreamHandle> open = new ArrayList<>(streams.values());
        sequencer.lock();
        try {
            for (StreamHandle h : open) {
                h.refuse(StreamHandle.closed(h.streamId()));
            }
        } finally {
            sequencer.unlock();
        }
        try {
            List<CompletableFuture<Void>> closing = new ArrayList<>();
            for (StreamHandle h : open) {
                closing.add(finishStream(h, false));
            }
            flush().get(5, TimeUnit.MINUTES);
            CompletableFuture.allOf(closing.toArray(CompletableFuture[]::new)).get(5, TimeUnit.MINUTES);
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "close could not upload everything; the rest stays in the WAL "
                    + "and is recovered at the next start: " + e);
        } finally {
            uploader.close();
            wal.close();
            logCache.releaseAll();
            blockCache.close();
            metadata.close();
            objects.close();
        }
    }

    /**
     * Test hook simulating a crash: stops at once without uploading, without trimming the WAL and without touching
     * the manifest, then releases memory. A new engine on the same WAL and stores must recover everything acknowledged.
     */
    public void haltForTesting() {
        closed = true;
        uploader.halt();
        wal.close();
        logCache.releaseAll();
        blockCache.close();
        metadata.close();
        objects.close();
    }

    private static RuntimeException unwrap(Throwable t) {
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof RuntimeException re) {
            return re;
        }
        return new CompletionException(t);
    }
}
