package io.s3stream.internal.engine;

import io.s3stream.FetchResult;
import io.s3stream.OffsetOutOfRangeException;
import io.s3stream.StoredBatch;
import io.s3stream.internal.util.Futures;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectNotFoundException;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.LongAdder;

/**
 * The read path of every stream of one engine: the log cache for the tail, then the manifest's lookup of the objects
 * covering an offset, then the objects' data blocks through the block cache ({@link ObjectFetcher}), with read-ahead for
 * sequential readers ({@link ReadAhead}).
 *
 * <p>Stateless per call apart from read-ahead windows and counters; safe to call from any thread.
 */
final class ReadPath {
    private static final int OBJECTS_PER_LOOKUP = 4;
    private static final int MAX_LOOKUPS = 4;

    private final LogCache logCache;
    private final MetadataStore metadata;
    private final ObjectFetcher fetcher;
    private final ReadAhead readAhead;
    final LongAdder fetchesFromLogCache = new LongAdder();
    final LongAdder fetchesFromObjects = new LongAdder();

    ReadPath(LogCache logCache, MetadataStore metadata, ObjectFetcher fetcher, ReadAhead readAhead) {
        this.logCache = logCache;
        this.metadata = metadata;
        this.fetcher = fetcher;
        this.readAhead = readAhead;
    }

    /**
     * Whole batches of {@code streamId} covering {@code fetchStart}, below {@code endOffset}, up to about
     * {@code maxBytes} (at least one batch), given the stream's readable range {@code [startOffset, confirmedOffset]}.
     */
    CompletableFuture<FetchResult> fetch(long streamId, long startOffset, long confirmedOffset, long fetchStart,
                                         long endOffset, int maxBytes) {
        if (fetchStart < startOffset || fetchStart > confirmedOffset) {
            return CompletableFuture.failedFuture(new OffsetOutOfRangeException("stream " + streamId + ": offset "
                    + fetchStart + " is outside the readable range [" + startOffset + ", " + confirmedOffset + "]"));
        }
        if (endOffset < fetchStart || maxBytes < 0) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("fetch of stream " + streamId
                    + " needs startOffset <= endOffset and maxBytes >= 0, was [" + fetchStart + ", " + endOffset
                    + "), maxBytes " + maxBytes));
        }
        long end = Math.min(endOffset, confirmedOffset);
        if (fetchStart == end) {
            return CompletableFuture.completedFuture(FetchResult.of(List.of(), () -> { }));
        }
        List<LogCache.CachedRead> cached = logCache.read(streamId, fetchStart, end, maxBytes);
        if (cached != null) {
            fetchesFromLogCache.increment();
            return CompletableFuture.completedFuture(toResult(cached));
        }
        fetchesFromObjects.increment();
        ReadAhead.Reader reader = readAhead.begin(streamId, fetchStart);
        return fromObjects(streamId, fetchStart, end, maxBytes, 1, reader).thenApply(reads -> {
            if (!reads.isEmpty()) {
                readAhead.advance(streamId, reader, reads.getLast().baseOffset() + reads.getLast().count());
            }
            return toResult(reads);
        });
    }

    /** The stream is no longer read here (closed or deleted): drop its read-ahead state. */
    void forget(long streamId) {
        readAhead.forget(streamId);
    }

    /**
     * Looks the range up in the manifest and reads the objects. Compaction may retire an object between the lookup and
     * the read; it stays in the bucket for the deletion grace period, but a read slower than that finds it gone: then
     * the manifest, which by now names the compaction's outputs, is asked again.
     */
    private CompletableFuture<List<LogCache.CachedRead>> fromObjects(long streamId, long fetchStart, long end,
                                                                    int maxBytes, int attempt, ReadAhead.Reader reader) {
        return metadata.getObjects(streamId, fetchStart, end, OBJECTS_PER_LOOKUP)
                .thenCompose(objects -> readObjects(streamId, objects, 0, fetchStart, end, maxBytes, new ArrayList<>(),
                        reader))
                .exceptionallyCompose(error -> {
                    if (attempt < MAX_LOOKUPS && Futures.hasCause(error, ObjectNotFoundException.class)) {
                        return fromObjects(streamId, fetchStart, end, maxBytes, attempt + 1, reader);
                    }
                    return CompletableFuture.failedFuture(error);
                });
    }

    private CompletableFuture<List<LogCache.CachedRead>> readObjects(long streamId, List<ObjectMetadata> objects,
                                                                    int index, long next, long end, long maxBytes,
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
                List<LogCache.CachedRead> cached = logCache.read(streamId, next, end, (int) Math.min(maxBytes, Integer.MAX_VALUE));
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
        return fetcher.read(object, streamId, next, end, maxBytes - bytes, reader).handle((reads, error) -> {
            if (error != null) {
                acc.forEach(r -> r.payload().release());
                throw error instanceof RuntimeException re ? re : new CompletionException(error);
            }
            acc.addAll(reads);
            return acc;
        }).thenCompose(list -> {
            long after = list.isEmpty() ? next : list.getLast().baseOffset() + list.getLast().count();
            if (after == next) {
                return CompletableFuture.completedFuture(list);
            }
            return readObjects(streamId, objects, index + 1, after, end, maxBytes, list, reader);
        });
    }

    private static FetchResult toResult(List<LogCache.CachedRead> reads) {
        List<StoredBatch> batches = new ArrayList<>(reads.size());
        for (LogCache.CachedRead r : reads) {
            batches.add(new StoredBatch(r.baseOffset(), r.count(), r.payload().nioBuffer().asReadOnlyBuffer()));
        }
        return FetchResult.of(batches, () -> reads.forEach(r -> r.payload().release()));
    }
}
