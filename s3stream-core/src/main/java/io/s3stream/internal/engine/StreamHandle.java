package io.s3stream.internal.engine;

import io.s3stream.AppendResult;
import io.s3stream.FetchResult;
import io.s3stream.OffsetOutOfRangeException;
import io.s3stream.RecordBatch;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamClosedException;
import io.s3stream.StreamFencedException;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectNotFoundException;
import io.s3stream.spi.StreamMetadata;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One open stream: its offsets, its state, and the read path that serves fetches from the log cache or from objects.
 * Appends are handed to the {@link StorageEngine}, which sequences all streams through one WAL.
 *
 * <p>Offsets: {@code nextOffset} is assigned under the engine's sequencer lock; {@code confirmedOffset} advances when
 * the engine processes a durable append, in order; {@code startOffset} moves on trims.
 */
final class StreamHandle implements Stream {
    private static final int OBJECTS_PER_LOOKUP = 4;
    private static final int MAX_LOOKUPS = 4;

    private final StorageEngine engine;
    private final long streamId;
    private final long epoch;
    private volatile long startOffset;
    private volatile long confirmedOffset;
    /** Guarded by the engine's sequencer lock. */
    long nextOffset;
    /** Null while open; otherwise why the stream refuses appends. Written under the sequencer lock. */
    volatile RuntimeException refusal;
    /** The failure of the first failed append; later batches of this handle fail too (no holes). Drain thread only. */
    Throwable holeCause;
    private final CompletableFuture<Void> closeFuture = new CompletableFuture<>();

    StreamHandle(StorageEngine engine, StreamMetadata metadata) {
        this.engine = engine;
        this.streamId = metadata.streamId();
        this.epoch = metadata.epoch();
        this.startOffset = metadata.startOffset();
        this.confirmedOffset = metadata.endOffset();
        this.nextOffset = metadata.endOffset();
    }

    @Override
    public long streamId() {
        return streamId;
    }

    @Override
    public long epoch() {
        return epoch;
    }

    @Override
    public long startOffset() {
        return startOffset;
    }

    @Override
    public long confirmedOffset() {
        return confirmedOffset;
    }

    @Override
    public long nextOffset() {
        return engine.nextOffset(this);
    }

    /** Called by the engine, in offset order, once a batch is durable and cached. */
    void confirm(long endOffset) {
        confirmedOffset = endOffset;
    }

    @Override
    public CompletableFuture<AppendResult> append(RecordBatch batch) {
        return engine.append(this, batch);
    }

    @Override
    public CompletableFuture<FetchResult> fetch(long fetchStart, long endOffset, int maxBytes) {
        long confirmed = confirmedOffset;
        long start = startOffset;
        if (fetchStart < start || fetchStart > confirmed) {
            return CompletableFuture.failedFuture(new OffsetOutOfRangeException("stream " + streamId + ": offset "
                    + fetchStart + " is outside the readable range [" + start + ", " + confirmed + "]"));
        }
        if (endOffset < fetchStart || maxBytes < 0) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("fetch of stream " + streamId
                    + " needs startOffset <= endOffset and maxBytes >= 0, was [" + fetchStart + ", " + endOffset
                    + "), maxBytes " + maxBytes));
        }
        long end = Math.min(endOffset, confirmed);
        if (fetchStart == end) {
            return CompletableFuture.completedFuture(FetchResult.of(List.of(), () -> { }));
        }
        List<LogCache.CachedRead> cached = engine.logCache().read(streamId, fetchStart, end, maxBytes);
        if (cached != null) {
            engine.fetchesFromLogCache.increment();
            return CompletableFuture.completedFuture(toResult(cached));
        }
        engine.fetchesFromObjects.increment();
        ReadAhead.Reader reader = engine.readAhead().begin(streamId, fetchStart);
        return fetchFromObjects(fetchStart, end, maxBytes, 1, reader).thenApply(reads -> {
            if (!reads.isEmpty()) {
                engine.readAhead().advance(streamId, reader, reads.getLast().baseOffset() + reads.getLast().count());
            }
            return toResult(reads);
        });
    }

    /**
     * Looks the range up in the manifest and reads the objects. Compaction may retire an object between the lookup and
     * the read; it stays in the bucket for the deletion grace period, but a read slower than that finds it gone: then
     * the manifest, which by now names the compaction's outputs, is asked again.
     */
    private CompletableFuture<List<LogCache.CachedRead>> fetchFromObjects(long fetchStart, long end, int maxBytes,
                                                                         int attempt, ReadAhead.Reader reader) {
        return engine.metadataStore().getObjects(streamId, fetchStart, end, OBJECTS_PER_LOOKUP)
                .thenCompose(objects -> readObjects(objects, 0, fetchStart, end, maxBytes, new ArrayList<>(), reader))
                .exceptionallyCompose(error -> {
                    if (attempt < MAX_LOOKUPS && isObjectGone(error)) {
                        return fetchFromObjects(fetchStart, end, maxBytes, attempt + 1, reader);
                    }
                    return CompletableFuture.failedFuture(error);
                });
    }

    private static boolean isObjectGone(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof ObjectNotFoundException) {
                return true;
            }
        }
        return false;
    }

    private CompletableFuture<List<LogCache.CachedRead>> readObjects(List<ObjectMetadata> objects, int index, long next,
                                                                    long end, long maxBytes,
                                                                    List<LogCache.CachedRead> acc,
                                                                    ReadAhead.Reader reader) {
        long bytes = acc.stream().mapToLong(r -> r.payload().readableBytes()).sum();
        if (next >= end || (!acc.isEmpty() && bytes >= maxBytes)) {
            return CompletableFuture.completedFuture(acc);
        }
        if (index >= objects.size()) {
            if (acc.isEmpty()) {
                // Nothing committed covers `next` and the log cache did not hold it either: read the cache again,
                // since an upload may have raced with the first look.
                List<LogCache.CachedRead> cached = engine.logCache().read(streamId, next, end, (int) Math.min(maxBytes, Integer.MAX_VALUE));
                if (cached != null) {
                    return CompletableFuture.completedFuture(cached);
                }
                return CompletableFuture.failedFuture(new IllegalStateException("stream " + streamId + ": offset "
                        + next + " is below the confirmed offset but neither in the log cache nor in a committed object"));
            }
            return CompletableFuture.completedFuture(acc);
        }
        ObjectMetadata object = objects.get(index);
        var range = object.rangeOf(streamId).orElseThrow();
        if (range.startOffset() > next) {
            if (acc.isEmpty()) {
                return CompletableFuture.failedFuture(new IllegalStateException("stream " + streamId
                        + ": committed objects have a gap at offset " + next + " (next object " + object.key()
                        + " starts at " + range.startOffset() + ")"));
            }
            return CompletableFuture.completedFuture(acc);
        }
        return engine.fetcher().read(object, streamId, next, end, maxBytes - bytes, reader).handle((reads, error) -> {
            if (error != null) {
                acc.forEach(r -> r.payload().release());
                throw error instanceof RuntimeException re ? re : new java.util.concurrent.CompletionException(error);
            }
            acc.addAll(reads);
            return acc;
        }).thenCompose(list -> {
            long after = list.isEmpty() ? next : list.getLast().baseOffset() + list.getLast().count();
            if (after == next) {
                return CompletableFuture.completedFuture(list);
            }
            return readObjects(objects, index + 1, after, end, maxBytes, list, reader);
        });
    }

    private FetchResult toResult(List<LogCache.CachedRead> reads) {
        List<StoredBatch> batches = new ArrayList<>(reads.size());
        for (LogCache.CachedRead r : reads) {
            batches.add(new StoredBatch(r.baseOffset(), r.count(), r.payload().nioBuffer().asReadOnlyBuffer()));
        }
        return FetchResult.of(batches, () -> reads.forEach(r -> r.payload().release()));
    }

    @Override
    public CompletableFuture<Void> trim(long newStartOffset) {
        RuntimeException refused = refusal;
        if (refused != null) {
            return CompletableFuture.failedFuture(refused);
        }
        long next = engine.nextOffset(this);
        if (newStartOffset < startOffset || newStartOffset > next) {
            return CompletableFuture.failedFuture(new OffsetOutOfRangeException("stream " + streamId
                    + ": trim point " + newStartOffset + " is outside [" + startOffset + ", " + next + "]"));
        }
        return engine.metadataStore().trimStream(streamId, epoch, newStartOffset).thenAccept(meta -> {
            synchronized (this) {
                startOffset = Math.max(startOffset, newStartOffset);
            }
        });
    }

    @Override
    public CompletableFuture<Void> close() {
        engine.closeStream(this, false);
        return closeFuture;
    }

    @Override
    public CompletableFuture<Void> destroy() {
        engine.closeStream(this, true);
        return closeFuture;
    }

    CompletableFuture<Void> closeFuture() {
        return closeFuture;
    }

    /** Refuses further appends (under the engine's sequencer lock). */
    void refuse(RuntimeException why) {
        if (refusal == null) {
            refusal = why;
        }
    }

    static StreamFencedException fenced(long streamId, long epoch, String why) {
        return new StreamFencedException("stream " + streamId + " at epoch " + epoch + " is fenced: " + why);
    }

    static StreamClosedException closed(long streamId) {
        return new StreamClosedException("stream " + streamId + " is closed on this node");
    }

    @Override
    public String toString() {
        return "Stream{id=" + streamId + ", epoch=" + epoch + ", start=" + startOffset + ", confirmed="
                + confirmedOffset + '}';
    }
}
