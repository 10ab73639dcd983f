package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.s3stream.cache.BlockCache;
import io.s3stream.cache.BlockKey;
import io.s3stream.cache.BlockSpan;
import io.s3stream.cache.RangeLoader;
import io.s3stream.internal.format.DataBlock;
import io.s3stream.internal.format.IndexEntry;
import io.s3stream.internal.format.ObjectIndex;
import io.s3stream.internal.format.ObjectTail;
import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.spi.ObjectMetadata;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Reads batches of one stream out of one object: the object's index (cached), then the data blocks covering the range,
 * from the block cache or with ranged GETs.
 *
 * <p>The blocks of one read are looked up together, so adjacent missing blocks are one ranged GET
 * ({@link BlockCache#getAll}). Reads of a sequential reader (see {@link ReadAhead}) go through the
 * {@link CatchUpThrottle} and read ahead into the block cache's read-ahead area, within the reader's window.
 *
 * <p>Design note: the first read of an object fetches its tail in one GET ({@link ObjectTail}) sized to hold the footer
 * and, usually, the whole index, so a cold object costs two requests (tail, block) rather than three.
 *
 * <p>Priority: reads of objects committed within the last {@link #TAIL_WINDOW_MS} are tail reads (a consumer slightly
 * behind); older objects are catch-up reads, which the object-store scheduler caps at half its slots so that a replay
 * never delays uploads.
 */
final class ObjectFetcher {
    static final long TAIL_WINDOW_MS = 60_000;

    private final ObjectStorage store;
    private final BlockCache blockCache;
    private final ReadAhead readAhead;
    private final CatchUpThrottle catchUp;
    private final Map<Long, CompletableFuture<ObjectIndex>> indexes;

    ObjectFetcher(ObjectStorage store, BlockCache blockCache, ReadAhead readAhead, CatchUpThrottle catchUp,
                  int maxCachedIndexes) {
        this.store = store;
        this.blockCache = blockCache;
        this.readAhead = readAhead;
        this.catchUp = catchUp;
        this.indexes = new LinkedHashMap<>(256, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, CompletableFuture<ObjectIndex>> eldest) {
                return size() > maxCachedIndexes;
            }
        };
    }

    /**
     * Batches of {@code streamId} in {@code object} from the one containing {@code startOffset}, below
     * {@code endOffset}, up to about {@code maxBytes}. Payloads are retained for the caller. {@code reader} is the
     * fetch's reader as recognised by {@link ReadAhead}: a sequential reader's reads are catch-up traffic, grow its
     * window when they wait for the store, and read ahead past the data returned.
     */
    CompletableFuture<List<LogCache.CachedRead>> read(ObjectMetadata object, long streamId, long startOffset,
                                                      long endOffset, long maxBytes, ReadAhead.Reader reader) {
        boolean catchUp = reader != null && reader.sequential();
        ObjectStorage.Priority priority = catchUp ? ObjectStorage.Priority.CATCH_UP_READ : priorityOf(object);
        RangeLoader store = catchUp ? catchUpLoader(object) : loader(object, priority);
        return index(object, priority).thenCompose(index -> {
            List<IndexEntry> entries = index.find(streamId, startOffset, endOffset, maxBytes);
            List<BlockSpan> spans = spans(object, entries);
            BlockCache.Lookup lookup = blockCache.getAll(spans, checked(object, entries, store));
            if (catchUp && lookup.missed() > 0) {
                reader.window.onMiss();
            }
            List<CompletableFuture<ByteBuf>> blocks = lookup.blocks();
            return CompletableFuture.allOf(blocks.toArray(CompletableFuture[]::new)).handle((ignored, error) -> {
                List<LogCache.CachedRead> out = new ArrayList<>();
                int stoppedIn = entries.size(); // the first block not read to its end
                try {
                    if (error != null) {
                        throw error instanceof RuntimeException re ? re : new java.util.concurrent.CompletionException(error);
                    }
                    // Every block was checked when it was read from the store (checked(...)): walk its headers.
                    Collector collect = new Collector(out, endOffset, maxBytes);
                    for (int i = 0; i < entries.size(); i++) {
                        collect.block = blocks.get(i).join();
                        if (!DataBlock.visitChecked(collect.block, startOffset, collect)) {
                            stoppedIn = i;
                            break;
                        }
                    }
                    if (catchUp && readAhead.enabled()) {
                        keepUnread(spans, blocks, stoppedIn, reader);
                        long next = out.isEmpty() ? startOffset : out.getLast().baseOffset() + out.getLast().count();
                        List<IndexEntry> ahead = index.find(streamId, next, Long.MAX_VALUE, reader.window.bytes());
                        blockCache.prefetch(spans(object, ahead), checked(object, ahead, store), reader.window);
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


    /**
     * Hands the blocks this fetch did not read to their end back to the read-ahead area: a fetch that stops inside a
     * block read ahead (and so consumed and dropped) would otherwise make the reader's next fetch GET it again.
     */
    private void keepUnread(List<BlockSpan> spans, List<CompletableFuture<ByteBuf>> blocks, int from,
                            ReadAhead.Reader reader) {
        for (int i = from; i < spans.size(); i++) {
            blockCache.keepReadAhead(spans.get(i).key(), blocks.get(i).join().retainedDuplicate(), reader.window);
        }
    }

    /** Takes a fetch's batches from blocks in turn, up to its end offset and about its byte budget. */
    private static final class Collector implements DataBlock.BatchVisitor {
        private final List<LogCache.CachedRead> out;
        private final long endOffset;
        private final long maxBytes;
        private long bytes;
        ByteBuf block;

        Collector(List<LogCache.CachedRead> out, long endOffset, long maxBytes) {
            this.out = out;
            this.endOffset = endOffset;
            this.maxBytes = maxBytes;
        }

        @Override
        public boolean visit(long baseOffset, int count, int payloadIndex, int payloadBytes) {
            if (baseOffset >= endOffset || (!out.isEmpty() && bytes >= maxBytes)) {
                return false;
            }
            out.add(new LogCache.CachedRead(baseOffset, count, block.retainedSlice(payloadIndex, payloadBytes)));
            bytes += payloadBytes;
            return true;
        }
    }

    /**
     * {@code loader} with each block it reads verified (CRC32C and headers against its index entry,
     * {@link DataBlock#verify}) before the cache may keep it, so a cached block is checked once, not at every hit.
     * The cache asks for runs of consecutive blocks of {@code entries}; a corrupt block fails its whole run.
     */
    private static RangeLoader checked(ObjectMetadata object, List<IndexEntry> entries, RangeLoader loader) {
        Map<Long, IndexEntry> byPosition = new HashMap<>(entries.size() * 2);
        for (IndexEntry e : entries) {
            byPosition.put(e.position(), e);
        }
        return new RangeLoader() {
            @Override
            public CompletableFuture<ByteBuf> load(long objectId, long position, int length) {
                return loader.load(objectId, position, length).thenApply(run -> {
                    try {
                        long at = position;
                        while (at < position + length) {
                            IndexEntry e = entryAt(at, position, length);
                            DataBlock.verify(run.slice(run.readerIndex() + (int) (at - position), e.sizeBytes()), e,
                                    object.key());
                            at += e.sizeBytes();
                        }
                        return run;
                    } catch (RuntimeException e) {
                        run.release();
                        throw e;
                    }
                });
            }

            @Override
            public CompletableFuture<List<ByteBuf>> loadSplit(long objectId, long position, int[] lengths) {
                return loader.loadSplit(objectId, position, lengths).thenApply(blocks -> {
                    try {
                        long at = position;
                        int total = Arrays.stream(lengths).sum();
                        for (int i = 0; i < lengths.length; i++) {
                            IndexEntry e = entryAt(at, position, total);
                            if (e.sizeBytes() != lengths[i]) {
                                throw new IllegalStateException("block at byte " + at + " of " + object.key()
                                        + " has " + e.sizeBytes() + " bytes in the index, " + lengths[i] + " asked for");
                            }
                            DataBlock.verify(blocks.get(i), e, object.key());
                            at += lengths[i];
                        }
                        return blocks;
                    } catch (RuntimeException e) {
                        blocks.forEach(ByteBuf::release);
                        throw e;
                    }
                });
            }

            private IndexEntry entryAt(long at, long position, int length) {
                IndexEntry e = byPosition.get(at);
                if (e == null) {
                    throw new IllegalStateException("no index entry of this read starts at byte " + at + " of "
                            + object.key() + " (run [" + position + ", +" + length + "))");
                }
                return e;
            }
        };
    }

    private static List<BlockSpan> spans(ObjectMetadata object, List<IndexEntry> entries) {
        List<BlockSpan> spans = new ArrayList<>(entries.size());
        for (IndexEntry entry : entries) {
            spans.add(new BlockSpan(new BlockKey(object.objectId(), entry.position()), entry.sizeBytes()));
        }
        return spans;
    }

    private RangeLoader loader(ObjectMetadata object, ObjectStorage.Priority priority) {
        return new RangeLoader() {
            @Override
            public CompletableFuture<ByteBuf> load(long objectId, long position, int length) {
                return store.get(object.key(), position, length, priority);
            }

            @Override
            public CompletableFuture<List<ByteBuf>> loadSplit(long objectId, long position, int[] lengths) {
                return store.getSplit(object.key(), position, lengths, priority);
            }
        };
    }

    /** Reads of sequential readers: throttled, and (in the store layer) at the lowest priority. */
    private RangeLoader catchUpLoader(ObjectMetadata object) {
        ObjectStorage.Priority priority = ObjectStorage.Priority.CATCH_UP_READ;
        return new RangeLoader() {
            @Override
            public CompletableFuture<ByteBuf> load(long objectId, long position, int length) {
                return catchUp.submit(length, () -> store.get(object.key(), position, length, priority));
            }

            @Override
            public CompletableFuture<List<ByteBuf>> loadSplit(long objectId, long position, int[] lengths) {
                return catchUp.submit(Arrays.stream(lengths).sum(),
                        () -> store.getSplit(object.key(), position, lengths, priority),
                        blocks -> blocks.forEach(ByteBuf::release));
            }
        };
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
        return ObjectTail.readIndex(object.key(), object.sizeBytes(),
                (position, length) -> store.get(object.key(), position, length, priority));
    }

    /** Forgets a deleted object's index. */
    void forget(long objectId) {
        synchronized (indexes) {
            indexes.remove(objectId);
        }
        blockCache.invalidateObject(objectId);
    }
}
