package io.s3stream.internal.engine;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.InvalidConfigException;
import io.s3stream.KeyCompaction;
import io.s3stream.KeyValues;
import io.s3stream.NodeFencedException;
import io.s3stream.StorageConfig;
import io.s3stream.StorageMetrics;
import io.s3stream.Stream;
import io.s3stream.StreamClosedException;
import io.s3stream.StreamFencedException;
import io.s3stream.StreamInfo;
import io.s3stream.StreamOptions;
import io.s3stream.TakeoverResult;
import io.s3stream.cache.BlockCache;
import io.s3stream.internal.compaction.Compactor;
import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.internal.store.ObjectStores;
import io.s3stream.internal.util.Futures;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.NodeMetadata;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.StreamMetadata;
import io.s3stream.spi.StreamState;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The storage engine behind {@link io.s3stream.StreamStorage}: it wires the write path ({@link AppendSequencer}: WAL →
 * log cache), the upload pipeline ({@link Uploader}: log cache → objects → manifest → WAL trim), the read path
 * ({@link ReadPath}: log cache → manifest → block cache → object store) and compaction, recovers the WAL at start,
 * keeps the registry of open streams, and takes over other nodes' WALs.
 *
 * <h2>Lifecycle</h2>
 * {@link #start} opens the object store and the manifest, registers the node (a new node epoch fences every older
 * instance of it), opens the WAL and recovers it ({@link WalReplay}) before anything else runs, then starts the uploader
 * and the compactor. {@link #close} refuses new appends, uploads what the log cache holds, records every open stream's
 * close in the manifest, and releases the WAL, caches and stores; what it could not upload stays in the WAL.
 *
 * <h2>Failure</h2>
 * A WAL device error or a takeover of this node (by a restart elsewhere or a surviving node) fences the engine as a
 * whole ({@link AppendSequencer#fail}): appends fail fast with the cause; acknowledged data in the log cache is still
 * uploaded unless the node itself is fenced in the manifest, in which case the new owner recovers it from the WAL.
 */
public final class StorageEngine implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(StorageEngine.class.getName());

    private final StorageConfig config;
    private final ByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
    private final ObjectStorage objects;
    private final MetadataStore metadata;
    private final long nodeEpoch;
    private final WriteAheadLog wal;
    private final LogCache logCache;
    private final BlockCache blockCache;
    private final ReadAhead readAhead;
    private final CatchUpThrottle catchUp;
    private final CatchUpGovernor governor; // null: catch-up is not governed
    private final ReadPath readPath;
    private final BlockUploader blockUploader;
    private final Uploader uploader;
    private final AppendSequencer sequencer;
    private final Compactor compactor;
    private final ConcurrentHashMap<Long, StreamHandle> streams = new ConcurrentHashMap<>();
    private final KeyValues keyValues;
    private final StreamHandle.Closer closer = (handle, destroy) -> closeStream(handle, destroy);
    private volatile boolean closed;

    private StorageEngine(StorageConfig config, MemoryBudgets budgets, ObjectStorage objects, MetadataStore metadata,
                          long nodeEpoch, WriteAheadLog wal, LongSupplier nanoClock) {
        this.config = config;
        this.objects = objects;
        this.metadata = metadata;
        this.nodeEpoch = nodeEpoch;
        this.wal = wal;
        this.keyValues = new ManifestKeyValues(metadata, config.nodeId(), nodeEpoch);
        this.logCache = new LogCache(budgets.logCacheBytes());
        this.blockCache = BlockCache.create(budgets.blockCacheBytes(), budgets.readAheadBytes());
        this.readAhead = new ReadAhead(Math.min(budgets.readAheadMaxWindowBytes(), 2 * config.objectBlockSizeBytes()),
                budgets.readAheadBytes() == 0 ? 0 : budgets.readAheadMaxWindowBytes());
        this.catchUp = new CatchUpThrottle(config.catchUpMaxInFlight(), config.catchUpBytesPerSecond());
        ObjectFetcher fetcher = new ObjectFetcher(objects, blockCache, readAhead, catchUp, 10_000);
        this.readPath = new ReadPath(logCache, metadata, fetcher, readAhead);
        this.blockUploader = new BlockUploader(objects, metadata, wal, alloc, config.nodeId(), nodeEpoch,
                uploadSettings(config), this::committedStart);
        this.uploader = new Uploader(logCache, blockUploader, wal::trim, new Uploader.Listener() {
            @Override
            public void nodeFenced(NodeFencedException e) {
                sequencer.fail(e);
            }

            @Override
            public void streamsLost(Set<Long> streamIds) {
                streamIds.forEach(StorageEngine.this::streamLostOwnership);
            }
        }, config.uploadThresholdBytes(), config.uploadInterval());
        this.logCache.pressureListener(uploader::trigger);
        this.sequencer = new AppendSequencer(wal, logCache, uploader, alloc, config.maxBatchBytes(),
                config.backpressureTimeout().toNanos());
        this.governor = config.catchUpCpuTarget() == 0 ? null : new CatchUpGovernor(config.catchUpCpuTarget(),
                config.catchUpBytesPerSecond(), CatchUpGovernor.machineCpuLoad(), sequencer.appendedBatches::sum,
                catchUp);
        this.compactor = new Compactor(Compactor.Settings.of(config), objects, metadata, alloc, config.nodeId(),
                nodeEpoch, fetcher::forget, nanoClock, this::keyCompactedStreams);
        if (governor != null) {
            governor.start();
        }
    }

    private static BlockUploader.Settings uploadSettings(StorageConfig config) {
        return new BlockUploader.Settings(config.streamObjectThresholdBytes(), config.objectBlockSizeBytes(),
                config.multipartThresholdBytes());
    }

    /** Opens the backends, registers the node, recovers the WAL, and returns a running engine. */
    public static StorageEngine start(StorageConfig config) {
        return start(config, System::nanoTime);
    }

    /**
     * {@link #start(StorageConfig)} with the clock that times the compactor's deletion grace period (nanoseconds, like
     * {@link System#nanoTime()}); tests inject a manual one.
     */
    static StorageEngine start(StorageConfig config, LongSupplier nanoClock) {
        MemoryBudgets budgets = MemoryBudgets.resolve(config, MemoryLimits.maxDirectMemoryBytes());
        ObjectStorage objects = new ObjectStorage(ObjectStores.open(config.objectStore()),
                ObjectStorage.RetryPolicy.defaults(), ObjectStorage.Settings.defaults()
                .withMaxInFlight(config.objectStoreMaxInFlight())
                .withCostLogInterval(config.costLogInterval()));
        MetadataStore metadata = null;
        WriteAheadLog wal = null;
        try {
            metadata = Backends.openMetadata(config, objects.countedBackend());
            long nodeEpoch = metadata.registerNode(config.nodeId()).join();
            wal = Backends.openWal(config, walContext(config, config.nodeId(), nodeEpoch, metadata, objects));
            StorageEngine engine = new StorageEngine(config, budgets, objects, metadata, nodeEpoch, wal, nanoClock);
            new WalReplay(wal, metadata, engine.logCache, engine.blockUploader, config.uploadThresholdBytes(),
                    config.backpressureTimeout().toNanos()).run();
            engine.uploader.start(); // not before: recovery uploads on its own and must be alone in doing so
            if (config.compactionEnabled()) {
                engine.compactor.start();
            }
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
            throw Futures.unwrapUnchecked(e);
        }
    }

    /** What a WAL of node {@code nodeId} at {@code nodeEpoch} is told, with the manifest's committed position. */
    private static WalContext walContext(StorageConfig config, long nodeId, long nodeEpoch, MetadataStore metadata,
                                         ObjectStorage objects) {
        long committed = metadata.getNode(nodeId).join().map(NodeMetadata::walCommittedPosition)
                .orElse(WalContext.NO_POSITION);
        return new WalContext(nodeId, nodeEpoch, config.dataDir(), config.backpressureTimeout())
                .withObjectStores(objects.asObjectStore(ObjectStorage.Priority.WAL),
                        uri -> new ObjectStorage(ObjectStores.open(uri.toString()), ObjectStorage.RetryPolicy.defaults(),
                                ObjectStorage.Settings.defaults().withCostLogInterval(null))
                                .asOwnedObjectStore(ObjectStorage.Priority.WAL))
                .withCommittedPosition(committed)
                .withKnownKeys(keys -> knownKeys(metadata, keys));
    }

    /** Of {@code keys}, those the manifest references, read after a barrier so that no node's commit is missed. */
    private static Set<String> knownKeys(MetadataStore metadata, Collection<String> keys) {
        metadata.sync().join();
        Set<String> asked = new HashSet<>(keys);
        Set<String> known = new HashSet<>();
        for (ObjectMetadata object : metadata.listObjects(ObjectState.values()).join()) {
            if (asked.contains(object.key())) {
                known.add(object.key());
            }
        }
        return known;
    }

    // ---------------------------------------------------------------- streams

    public CompletableFuture<Stream> createStream(StreamOptions options) {
        if (closed) {
            return CompletableFuture.failedFuture(new StreamClosedException("the storage engine is closed"));
        }
        return metadata.createStream(config.nodeId(), nodeEpoch, options).thenApply(meta -> {
            StreamHandle handle = new StreamHandle(sequencer, readPath, metadata, closer, meta);
            streams.put(meta.streamId(), handle);
            return handle;
        });
    }

    public CompletableFuture<List<StreamInfo>> listStreams() {
        return metadata.listStreams().thenApply(all -> all.stream().map(m -> new StreamInfo(m.streamId(), m.epoch(),
                m.startOffset(), m.endOffset(), m.ownerNodeId(), m.tags())).toList());
    }

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
            sequencer.refuse(existing, StreamHandle.fenced(streamId, existing.epoch(), "opened again at epoch " + epoch));
            handOver = finishStream(existing, false);
        }
        return handOver.thenCompose(v -> metadata.openStream(streamId, epoch, config.nodeId(), nodeEpoch))
                .thenApply(meta -> {
                    StreamHandle handle = new StreamHandle(sequencer, readPath, metadata, closer, meta);
                    streams.put(streamId, handle);
                    return handle;
                });
    }

    /**
     * The start offset of a stream open here (a handle takes it from the manifest and moves it only after the manifest
     * committed a trim), or -1: what the uploader may leave out.
     */
    private long committedStart(long streamId) {
        StreamHandle handle = streams.get(streamId);
        return handle == null ? -1 : handle.startOffset();
    }

    /** Stream.close()/destroy(): refuse appends, upload, then record the close (or delete) in the manifest. */
    private void closeStream(StreamHandle handle, boolean destroy) {
        sequencer.refuse(handle, StreamHandle.closed(handle.streamId()));
        finishStream(handle, destroy);
    }

    private CompletableFuture<Void> finishStream(StreamHandle handle, boolean destroy) {
        CompletableFuture<Void> done = handle.closeFuture();
        if (!handle.beginEnding(destroy)) {
            return done; // closing or destroying already: the first call decided
        }
        // A destroyed stream's data is not uploaded first: its deletion must not wait for an upload that fails (a full
        // disk or bucket, where deleting data is the remedy), so once its appends are processed the deletion is
        // committed and its batches are left out of uploads, the one being retried included.
        (destroy ? sequencer.drained() : flush()).thenCompose(v -> destroy
                        ? metadata.deleteStream(handle.streamId(), handle.epoch()).thenCompose(d -> {
                            blockUploader.drop(handle.streamId());
                            return compactor.forgetStream(handle.streamId());
                        })
                        : metadata.closeStream(handle.streamId(), handle.epoch(), config.nodeId(), nodeEpoch)
                                .thenApply(m -> (Void) null))
                .whenComplete((v, error) -> {
                    streams.remove(handle.streamId(), handle);
                    readPath.forget(handle.streamId());
                    if (error == null) {
                        done.complete(null);
                    } else {
                        done.completeExceptionally(Futures.unwrapUnchecked(error));
                    }
                });
        return done;
    }

    /** The open streams whose embedder asked for key compaction, by stream id (the compactor's view). */
    private Map<Long, KeyCompaction> keyCompactedStreams() {
        Map<Long, KeyCompaction> out = new HashMap<>();
        for (StreamHandle h : streams.values()) {
            KeyCompaction c = h.keyCompaction();
            if (c != null) {
                out.put(h.streamId(), c);
            }
        }
        return out;
    }

    /** Completes once every append issued before the call is processed and uploaded. */
    CompletableFuture<Void> flush() {
        return sequencer.drained().thenCompose(v -> uploader.uploadAll());
    }

    /** The uploader found the stream fenced or deleted in the manifest: refuse its appends. */
    private void streamLostOwnership(long streamId) {
        StreamHandle handle = streams.get(streamId);
        if (handle != null) {
            sequencer.refuse(handle, StreamHandle.fenced(streamId, handle.epoch(), "the manifest has a newer owner or "
                    + "the stream was deleted"));
        }
    }

    // ---------------------------------------------------------------- takeover

    public long nodeEpoch() {
        return nodeEpoch;
    }

    /** Runs on its own thread; the engine keeps serving meanwhile. */
    public CompletableFuture<TakeoverResult> takeOverNode(long nodeId) {
        return takeOverNode(nodeId, -1);
    }

    /** {@link #takeOverNode(long)} of the instance at {@code expectedNodeEpoch} only ({@code -1}: whichever is there). */
    public CompletableFuture<TakeoverResult> takeOverNode(long nodeId, long expectedNodeEpoch) {
        if (closed) {
            return CompletableFuture.failedFuture(new StreamClosedException("the storage engine is closed"));
        }
        if (nodeId == config.nodeId()) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("node " + nodeId + " cannot take over "
                    + "its own WAL: it recovers it when it starts"));
        }
        CompletableFuture<TakeoverResult> result = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("s3stream-takeover-" + nodeId).start(() -> {
            try {
                result.complete(new NodeTakeover(nodeId, expectedNodeEpoch).run());
            } catch (Throwable t) {
                result.completeExceptionally(Futures.unwrap(t));
            }
        });
        return result;
    }

    /** One takeover of a dead node's WAL: fence, recover, commit, release. */
    private final class NodeTakeover {
        private final long deadNodeId;
        private final long expectedNodeEpoch;

        NodeTakeover(long deadNodeId, long expectedNodeEpoch) {
            this.deadNodeId = deadNodeId;
            this.expectedNodeEpoch = expectedNodeEpoch;
        }

        TakeoverResult run() {
            long started = System.nanoTime();
            Backends.WalBackend backend = Backends.walBackend(config);
            if (!backend.provider().supportsTakeover()) {
                throw new InvalidConfigException("node " + deadNodeId + "'s WAL (" + backend.uri() + ") cannot be "
                        + "taken over: a " + backend.uri().getScheme() + " WAL lives on its node's own disk and dies with "
                        + "it; the node's streams wait until it comes back (use a shared WAL: fsx:// or objectwal://)");
            }
            // Fencing first: from this commit on the dead node (should it still be running) cannot commit, and the
            // WAL's own fencing below stops it from acknowledging anything this recovery does not see.
            // Conditional when the caller knows which instance it judged dead: a successor that registered since (a
            // restart racing this takeover) is left alone, and the takeover fails with MetadataConflictException.
            long fencingEpoch = (expectedNodeEpoch < 0 ? metadata.registerNode(deadNodeId)
                    : metadata.registerNode(deadNodeId, expectedNodeEpoch)).join();
            long fenced = System.nanoTime();
            WalContext context = walContext(config, deadNodeId, fencingEpoch, metadata, objects).forTakeover();
            WalReplay.Result replayed;
            int released = 0;
            long recovered;
            LogCache cache = new LogCache(2 * config.uploadThresholdBytes() + 2L * config.maxBatchBytes());
            try (WriteAheadLog deadWal = backend.provider().open(backend.uri(), context)) {
                // The replay leaves trimmed records out itself (it reads every stream's start offset).
                BlockUploader uploads = new BlockUploader(objects, metadata, deadWal, alloc, deadNodeId, fencingEpoch,
                        uploadSettings(config), streamId -> -1);
                replayed = new WalReplay(deadWal, metadata, cache, uploads, config.uploadThresholdBytes(),
                        config.backpressureTimeout().toNanos()).run();
                recovered = System.nanoTime();
                for (StreamMetadata stream : metadata.listStreams().join()) {
                    if (stream.ownerNodeId() == deadNodeId && stream.state() == StreamState.OPENED) {
                        metadata.closeStream(stream.streamId(), stream.epoch(), deadNodeId, fencingEpoch).join();
                        released++;
                    }
                }
            } finally {
                cache.releaseAll();
            }
            long done = System.nanoTime();
            TakeoverResult result = new TakeoverResult(deadNodeId, fencingEpoch, replayed.records(), replayed.bytes(),
                    replayed.kept(), released, nanosToMillis(fenced - started), nanosToMillis(recovered - fenced),
                    nanosToMillis(done - recovered), nanosToMillis(done - started));
            LOG.log(System.Logger.Level.INFO, "node {0} took over node {1}: {2}", config.nodeId(), deadNodeId, result);
            return result;
        }
    }

    private static long nanosToMillis(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }

    // ---------------------------------------------------------------- accessors

    public KeyValues keyValues() {
        return keyValues;
    }

    public StorageMetrics metrics() {
        BlockCache.Stats cache = blockCache.stats();
        List<Integer> windows = readAhead.windows();
        return new StorageMetrics(
                new StorageMetrics.Appends(sequencer.appendedBatches.sum(), sequencer.appendedBytes.sum()),
                new StorageMetrics.Uploads(blockUploader.uploadedObjects.sum(), blockUploader.uploadedBytes.sum(),
                        blockUploader.adoptedObjects.sum(), blockUploader.adoptedBytes.sum()),
                new StorageMetrics.LogCache(logCache.usedBytes(), logCache.capacityBytes()),
                new StorageMetrics.BlockCache(cache.bytesHeld() + cache.readAheadBytesHeld(), cache.capacityBytes(),
                        cache.hits(), cache.misses(), cache.evictions(), cache.mergedLoads()),
                new StorageMetrics.ReadAhead(cache.readAheadBytesHeld(), cache.readAheadHits(), cache.readAheadBlocks(),
                        cache.readAheadEvictedUnread(), windows.size(),
                        windows.stream().mapToLong(Integer::longValue).max().orElse(0),
                        windows.stream().mapToLong(Integer::longValue).sum()),
                new StorageMetrics.Reads(readPath.fetchesFromLogCache.sum(), readPath.fetchesFromObjects.sum(),
                        catchUp.queued(), catchUp.limit(), governor == null ? 0 : governor.cuts()),
                new StorageMetrics.ObjectStore(objects.requestCounts(), objects.bytesOut(), objects.bytesIn(),
                        objects.retries()),
                compactionMetrics(compactor.stats()));
    }

    private static StorageMetrics.Compaction compactionMetrics(Compactor.Stats c) {
        return new StorageMetrics.Compaction(c.runs() + c.keyCompactionRuns(), c.failedRuns(), c.bytesRead(),
                c.bytesWritten(), c.objectsDeleted(), c.keyCompactionRuns(), c.keyCompactionBytesIn(),
                c.keyCompactionBytesOut());
    }

    /** The manifest (tests inspect it). */
    MetadataStore metadataStore() {
        return metadata;
    }

    /** The object store (tests inspect and corrupt it). */
    ObjectStorage objectStorage() {
        return objects;
    }

    /** The compactor (also when background compaction is disabled: tests drive it with {@link Compactor#runNow()}). */
    Compactor compactor() {
        return compactor;
    }

    // ---------------------------------------------------------------- shutdown

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        sequencer.close();
        compactor.close();
        if (governor != null) {
            governor.close();
        }
        List<StreamHandle> open = new ArrayList<>(streams.values());
        for (StreamHandle h : open) {
            sequencer.refuse(h, StreamHandle.closed(h.streamId()));
        }
        uploader.beginClose();
        try {
            List<CompletableFuture<Void>> closing = new ArrayList<>();
            for (StreamHandle h : open) {
                closing.add(finishStream(h, false));
            }
            flush().get(5, TimeUnit.MINUTES);
            CompletableFuture.allOf(closing.toArray(CompletableFuture[]::new)).get(1, TimeUnit.MINUTES);
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
            catchUp.close();
        }
    }

    /**
     * Test hook simulating a crash: stops at once without uploading, without trimming the WAL and without touching
     * the manifest, then releases memory. A new engine on the same WAL and stores must recover everything acknowledged.
     */
    void halt() {
        closed = true;
        sequencer.close();
        compactor.halt();
        if (governor != null) {
            governor.close();
        }
        uploader.halt();
        wal.close();
        logCache.releaseAll();
        blockCache.close();
        metadata.close();
        objects.close();
        catchUp.close();
    }

    /**
     * {@link KeyValues} over the manifest's key-value space. Changes are made as this node at its epoch, so once this
     * node is fenced (restarted elsewhere, or its WAL taken over) they fail with {@link io.s3stream.NodeFencedException}
     * instead of overwriting what its successor wrote.
     */
    private record ManifestKeyValues(MetadataStore metadata, long nodeId, long nodeEpoch) implements KeyValues {
        @Override
        public CompletableFuture<java.util.Optional<byte[]>> get(String key) {
            return metadata.getKv(key);
        }

        @Override
        public CompletableFuture<Void> put(String key, byte[] value) {
            return metadata.putKv(nodeId, nodeEpoch, key, value);
        }

        @Override
        public CompletableFuture<Void> delete(String key) {
            return metadata.deleteKv(nodeId, nodeEpoch, key);
        }

        @Override
        public CompletableFuture<SortedMap<String, byte[]>> list(String prefix) {
            return metadata.listKv(prefix);
        }

        @Override
        public CompletableFuture<Boolean> compareAndSet(String key, byte[] expected, byte[] value) {
            return metadata.compareAndSetKv(nodeId, nodeEpoch, key, expected, value);
        }

        @Override
        public CompletableFuture<Void> sync() {
            return metadata.sync();
        }

        @Override
        public CompletableFuture<Void> update(java.util.Map<String, byte[]> puts, java.util.Collection<String> deletes) {
            return metadata.updateKv(nodeId, nodeEpoch, puts, deletes);
        }
    }

}
