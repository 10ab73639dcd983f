package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.s3stream.cache.BlockCache;
import io.s3stream.cache.BlockKey;
import io.s3stream.internal.format.DataBlock;
import io.s3stream.internal.format.DecodedBatch;
import io.s3stream.internal.format.IndexEntry;
import io.s3stream.internal.format.ObjectFooter;
import io.s3stream.internal.format.ObjectFormat;
import io.s3stream.internal.format.ObjectIndex;
import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.spi.ObjectMetadata;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Reads batches of one stream out of one object: the object's index (cached), then the data blocks covering the range,
 * from the block cache or with ranged GETs.
 *
 * <p>Design note: the first read of an object fetches its tail in one GET sized to hold the footer and, usually, the
 * whole index, so a cold object costs two requests (tail, block) rather than three.
 *
 * <p>Priority: reads of objects committed within the last {@link #TAIL_WINDOW_MS} are tail reads (a consumer slightly
 * behind); older objects are catch-up reads, which the object-store scheduler caps at half its slots so that a replay
 * never delays uploads.
 */
final class ObjectFetcher {
    private static final int TAIL_READ_BYTES = 64 * 1024;
    static final long TAIL_WINDOW_MS = 60_000;

    private final ObjectStorage store;
    private final BlockCache blockCache;
    private final Map<Long, CompletableFuture<ObjectIndex>> indexes;

    ObjectFetcher(ObjectStorage store, BlockCache blockCache, int maxCachedIndexes) {
        this.store = store;
        this.blockCache = blockCache;
        this.indexes = new LinkedHashMap<>(256, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, CompletableFuture<ObjectIndex>> eldest) {
                return size() > maxCachedIndexes;
            }
        };
    }

    /**
     * Batches of {@code streamId} in {@code object} from the one containing {@code startOffset}, below
     * {@code endOffset}, up to about {@code maxBytes}. Payloads are retained for the caller.
     */
    CompletableFuture<List<LogCache.CachedRead>> read(ObjectMetadata object, long streamId, long startOffset,
                                                      long endOffset, long maxBytes) {
        ObjectStorage.Priority priority = priorityOf(object);
        return index(object, priority).thenCompose(index -> {
            List<IndexEntry> entries = index.find(streamId, startOffset, endOffset, maxBytes);
            List<CompletableFuture<ByteBuf>> blocks = new ArrayList<>(entries.size());
            for (IndexEntry entry : entries) {
                BlockKey key = new BlockKey(object.objectId(), entry.position());
                blocks.add(blockCache.get(key, k -> store.get(object.key(), entry.position(), entry.sizeBytes(), priority)));
            }
            return CompletableFuture.allOf(blocks.toArray(CompletableFuture[]::new)).handle((ignored, error) -> {
                List<LogCache.CachedRead> out = new ArrayList<>();
                try {
                    if (error != null) {
                        throw error instanceof RuntimeException re ? re : new java.util.concurrent.CompletionException(error);
                    }
                    long bytes = 0;
                    for (int i = 0; i < entries.size(); i++) {
                        ByteBuf block = blocks.get(i).join();
                        for (DecodedBatch b : DataBlock.decode(block, entries.get(i), object.key())) {
                            if (b.baseOffset() + b.count() <= startOffset) {
                                continue;
                            }
                            if (b.baseOffset() >= endOffset || (!out.isEmpty() && bytes >= maxBytes)) {
                                return out;
                            }
                            out.add(new LogCache.CachedRead(b.baseOffset(), b.count(), b.payload().retain()));
                            bytes += b.payload().readableBytes();
                        }
                    }
                    return out;
                } catch (RuntimeException e) {
                    out.forEach(r -> r.payload().release());
                    out.clear();
                    throw e;
                } finally {
                    for (CompletableFuture<ByteBuf> f : blocks) {
                        if (f.isDone() && !f.isCompletedExceptionally()) {
                            f.join().release();
                        }
                    }
                }
            });
        });
    }

    static ObjectStorage.Priority priorityOf(ObjectMetadata object) {
        return System.currentTimeMillis() - object.committedAtMs() < TAIL_WINDOW_MS
                ? ObjectStorage.Priority.TAIL_READ : ObjectStorage.Priority.CATCH_UP_READ;
    }

    private CompletableFuture<ObjectIndex> index(ObjectMetadata object, ObjectStorage.Priority priority) {
        CompletableFuture<ObjectIndex> cached;
        synchronized (indexes) {
            cached = indexes.get(object.objectId());
            if (cached == null || cached.isCompletedExceptionally()) {
                cached = loadIndex(object, priority);
                indexes.put(object.objectId(), cached);
            }
        }
        return cached;
    }

    private CompletableFuture<ObjectIndex> loadIndex(ObjectMetadata object, ObjectStorage.Priority priority) {
        long size = object.sizeBytes();
        int tailLength = (int) Math.min(size, TAIL_READ_BYTES);
        long tailStart = size - tailLength;
        return store.get(object.key(), tailStart, tailLength, priority).thenCompose(tail -> {
            try {
                ObjectFooter footer = ObjectFooter.decode(
                        tail.slice(tail.readerIndex() + tailLength - ObjectFormat.FOOTER_SIZE, ObjectFormat.FOOTER_SIZE),
                        size, object.key());
                if (footer.indexPosition() >= tailStart) {
                    int from = (int) (footer.indexPosition() - tailStart);
                    return CompletableFuture.completedFuture(ObjectIndex.decode(
                            tail.slice(tail.readerIndex() + from, footer.indexLength()), footer, object.key()));
                }
                return store.get(object.key(), footer.indexPosition(), footer.indexLength(), priority).thenApply(indexBytes -> {
                    try {
                        return ObjectIndex.decode(indexBytes, footer, object.key());
                    } finally {
                        indexBytes.release();
                    }
                });
            } finally {
                tail.release();
            }
        });
    }

    /** Forgets a deleted object's index. */
    void forget(long objectId) {
        synchronized (indexes) {
            indexes.remove(objectId);
        }
        blockCache.invalidateObject(objectId);
    }
}
