package io.s3stream.internal.compaction;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.s3stream.internal.format.DataBlock;
import io.s3stream.internal.format.IndexEntry;
import io.s3stream.internal.format.ObjectFormat;
import io.s3stream.internal.format.ObjectIndex;
import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.StreamRange;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Writes one output object of format v1 as a stream of whole data blocks, without ever holding the object: blocks go
 * into a part buffer that is uploaded as a multipart part once it reaches the part size; ranges of whole blocks of an
 * existing object can instead be copied server-side ({@link #copyBlocks}); {@link #finish()} appends index and footer.
 * An object that never filled a part is written with a single PUT.
 *
 * <h2>Blocks</h2>
 * Adjacent small blocks of one stream (uploads of quiet streams produce many) are coalesced into one block of at most
 * the target block size: their batch bytes are concatenated under a new header and CRC. Batches themselves are never
 * re-encoded. Callers pass only blocks whose CRC they verified, so the new CRC never blesses corrupt bytes. Copied
 * blocks keep their own CRC, so corruption in them stays detectable by every reader.
 *
 * <h2>Memory</h2>
 * At most the open block, the part being filled and {@code maxInflightParts} parts being uploaded, all counted in the
 * gauge. Owner: the compactor thread.
 *
 * <h2>Throttle</h2>
 * Every part uploaded and every PUT takes its bytes from the compaction throttle before it starts. A server-side copy
 * moves nothing through the node and takes nothing, unless the store copies on this node
 * ({@link ObjectStore#copiesOnThisNode()}: a {@code file://} store), where it reads and writes its bytes on the disk
 * the WAL may share. Such a range is copied in parts of at most the part size, each taking twice its length (read
 * and written), since the throttle spaces requests and one copy of a whole range would still run at the disk's speed.
 * Unthrottled, the merges after 2 GB of produce on the machine of benchmarks/README.md wrote 1.9 GB in 4 s, and the
 * 60-s producer run at 2,000 rec/s they fell into had a p99.9 of 88 ms.
 */
final class ObjectWriter implements AutoCloseable {
    private final ObjectStorage store;
    private final ByteBufAllocator alloc;
    private final String key;
    private final int partSizeBytes;
    private final int minPartSizeBytes;
    private final int targetBlockBytes;
    private final int maxInflightParts;
    private final MemoryGauge gauge;
    private final Throttle throttle;
    /** Whether a part copy reads and writes its bytes on this node (see "Throttle"). */
    private final boolean copiesOnThisNode;

    private final List<IndexEntry> entries = new ArrayList<>();
    private final ArrayDeque<CompletableFuture<Void>> inflight = new ArrayDeque<>();
    private ObjectStore.MultipartUpload upload;
    private int nextPart = 1;
    private ByteBuf part;
    private long written;
    private ByteBuf block;
    private long blockStream;
    private long blockStart;
    private long blockEnd;
    private int blockBatches;
    private boolean done;
    long copiedBytes;
    long writtenThroughNodeBytes;

    ObjectWriter(ObjectStorage store, ByteBufAllocator alloc, String key, int partSizeBytes, int minPartSizeBytes,
                 int targetBlockBytes, int maxInflightParts, MemoryGauge gauge, Throttle throttle) {
        this.store = store;
        this.alloc = alloc;
        this.key = key;
        this.partSizeBytes = Math.max(partSizeBytes, minPartSizeBytes);
        this.minPartSizeBytes = minPartSizeBytes;
        this.targetBlockBytes = targetBlockBytes;
        this.maxInflightParts = Math.max(1, maxInflightParts);
        this.gauge = gauge;
        this.throttle = throttle;
        this.copiesOnThisNode = store.backend().copiesOnThisNode();
    }

    String key() {
        return key;
    }

    /**
     * Adds a verified block ({@code source} holds exactly its bytes; the caller keeps its reference). Blocks must come
     * in (stream, offset) order, contiguous within a stream.
     */
    void addBlock(IndexEntry entry, int batchCount, ByteBuf source) {
        int body = entry.sizeBytes() - ObjectFormat.BLOCK_HEADER_SIZE - ObjectFormat.BLOCK_CRC_SIZE;
        boolean extend = block != null && blockStream == entry.streamId() && blockEnd == entry.startOffset()
                && block.readableBytes() + body + ObjectFormat.BLOCK_CRC_SIZE <= targetBlockBytes
                && blockEnd - blockStart + entry.recordCount() <= Integer.MAX_VALUE;
        if (!extend) {
            closeBlock();
            int capacity = Math.max(targetBlockBytes, entry.sizeBytes());
            block = alloc.directBuffer(Math.min(capacity, entry.sizeBytes() * 4 + 64), capacity);
            gauge.add(capacity);
            DataBlock.writeHeader(block, entry.streamId());
            blockStream = entry.streamId();
            blockStart = entry.startOffset();
            blockEnd = entry.startOffset();
            blockBatches = 0;
        }
        block.writeBytes(source, source.readerIndex() + ObjectFormat.BLOCK_HEADER_SIZE, body);
        blockEnd = entry.endOffset();
        blockBatches += batchCount;
        writtenThroughNodeBytes += entry.sizeBytes();
    }

    /**
     * Adds one batch, re-encoded (key compaction rewrites payloads): it goes into the open block when that holds the
     * same stream up to {@code baseOffset} and has room, else into a new block. Batches of a stream must be contiguous.
     */
    void addBatch(long streamId, long baseOffset, int count, ByteBuffer payload) {
        int size = ObjectFormat.BATCH_HEADER_SIZE + payload.remaining();
        boolean extend = block != null && blockStream == streamId && blockEnd == baseOffset
                && block.readableBytes() + size + ObjectFormat.BLOCK_CRC_SIZE <= targetBlockBytes
                && blockEnd - blockStart + count <= Integer.MAX_VALUE;
        if (!extend) {
            closeBlock();
            int capacity = Math.max(targetBlockBytes, ObjectFormat.BLOCK_HEADER_SIZE + size + ObjectFormat.BLOCK_CRC_SIZE);
            block = alloc.directBuffer(Math.min(capacity, 64 * 1024), capacity);
            gauge.add(capacity);
            DataBlock.writeHeader(block, streamId);
            blockStream = streamId;
            blockStart = baseOffset;
            blockEnd = baseOffset;
            blockBatches = 0;
        }
        block.writeLong(baseOffset);
        block.writeInt(count);
        block.writeInt(payload.remaining());
        block.writeBytes(payload.duplicate());
        blockEnd = baseOffset + count;
        blockBatches++;
        writtenThroughNodeBytes += size;
    }

    /** Bytes of the object so far (closed blocks and the open one), before index and footer. */
    long sizeSoFar() {
        return written + (block == null ? 0 : block.readableBytes() + ObjectFormat.BLOCK_CRC_SIZE);
    }

    private void closeBlock() {
        if (block == null) {
            return;
        }
        int size = DataBlock.seal(block, blockBatches);
        entries.add(new IndexEntry(blockStream, blockStart, blockEnd, (int) (blockEnd - blockStart), written, size));
        written += size;
        if (part == null) {
            newPart();
        }
        if (part.writableBytes() < block.readableBytes()) {
            // Straight to the most a part holds (just under the part size, plus this block) rather than by the
            // buffer's own growth: doubling to 4 MiB, then 4 MiB at a time, which copied a 16 MiB part about 2.5 times
            // over (5 % of kafka-shell's CPU under 16-partition produce). A part under 1 MiB never grows.
            part.capacity(Math.max(partSizeBytes + targetBlockBytes, part.writerIndex() + block.readableBytes()));
        }
        part.writeBytes(block);
        gauge.remove(block.maxCapacity());
        block.release();
        block = null;
        if (part.readableBytes() >= partSizeBytes) {
            uploadPart(partSizeBytes);
        }
    }

    /** Starts the next part's buffer, counted at the part size it may grow to. */
    private void newPart() {
        part = alloc.directBuffer(Math.min(partSizeBytes, 1 << 20));
        gauge.add(partSizeBytes);
    }

    /**
     * Uploads the first {@code length} bytes of the part being filled as the next part and keeps the rest as the start
     * of a new one. Full parts are cut at exactly the part size, not at a block's end: a store that writes parts in
     * place (the file store) can then put every next part at a page-aligned offset.
     */
    private void uploadPart(int length) {
        // The part stays this writer's (close() releases it) until it is handed to the upload.
        if (upload == null) {
            upload = store.startMultipart(key).join();
        }
        while (inflight.size() >= maxInflightParts) {
            inflight.poll().join();
        }
        throttle.acquire(length);
        ByteBuf data = part;
        part = null;
        int carry = data.readableBytes() - length;
        if (carry > 0) { // at most a block
            newPart();
            part.writeBytes(data, data.readerIndex() + length, carry);
            data.writerIndex(data.readerIndex() + length);
        }
        inflight.add(store.uploadPart(upload, nextPart++, data).whenComplete((v, e) -> {
            gauge.remove(partSizeBytes);
            data.release();
        }));
    }

    /**
     * Closes the open block and, if the data written so far can end a part (nothing pending, or at least the minimum
     * part size pending), uploads it so the next part can be a server-side copy. Returns whether at a part boundary.
     */
    boolean reachPartBoundary() {
        closeBlock();
        if (part == null || part.readableBytes() == 0) {
            return true;
        }
        if (part.readableBytes() >= minPartSizeBytes) {
            uploadPart(part.readableBytes());
            return true;
        }
        return false;
    }

    /**
     * Copies whole adjacent blocks {@code blocks} of {@code sourceKey} server-side as one part, or as several on a
     * store that copies on this node (see "Throttle"); call only after {@link #reachPartBoundary()} returned true, with
     * at least the minimum part size of blocks.
     */
    void copyBlocks(String sourceKey, List<IndexEntry> blocks) {
        long from = blocks.getFirst().position();
        long length = blocks.getLast().endPosition() - from;
        if (upload == null) {
            upload = store.startMultipart(key).join();
        }
        // One part per range, unless the copy runs here: then parts of at most the part size, each throttled.
        int parts = copiesOnThisNode ? (int) Math.max(1, Math.min(Math.ceilDiv(length, partSizeBytes),
                length / minPartSizeBytes)) : 1;
        long copied = 0;
        for (int i = 0; i < parts; i++) {
            long piece = (length - copied) / (parts - i);
            while (inflight.size() >= maxInflightParts) {
                inflight.poll().join();
            }
            if (copiesOnThisNode) {
                throttle.acquire(2 * piece); // read and written here
            }
            inflight.add(store.uploadPartCopy(upload, nextPart++, sourceKey, from + copied, piece));
            copied += piece;
        }
        for (IndexEntry e : blocks) {
            entries.add(new IndexEntry(e.streamId(), e.startOffset(), e.endOffset(), e.recordCount(),
                    written + (e.position() - from), e.sizeBytes()));
        }
        written += length;
        copiedBytes += length;
    }

    /** Whether {@link #reachPartBoundary()} would succeed (nothing pending, or at least a minimum part). */
    boolean canReachPartBoundary() {
        long pending = (part == null ? 0 : part.readableBytes()) + (block == null ? 0 : block.readableBytes());
        return pending == 0 || pending >= minPartSizeBytes;
    }

    boolean isEmpty() {
        return entries.isEmpty() && block == null;
    }

    /** Writes index and footer and makes the object visible; returns its size. */
    long finish() {
        closeBlock();
        ByteBuf tail = ObjectIndex.encodeTail(entries, written, alloc);
        long size = written + tail.readableBytes();
        try {
            if (upload == null) {
                ByteBuf whole = part == null ? tail.retain()
                        : alloc.compositeBuffer(2).addComponents(true, part.retain(), tail.retain());
                try {
                    throttle.acquire(whole.readableBytes());
                    store.put(key, whole).join();
                } finally {
                    whole.release();
                }
            } else {
                if (part != null) {
                    part.writeBytes(tail);
                    ByteBuf last = part;
                    part = null;
                    gauge.remove(partSizeBytes);
                    throttle.acquire(last.readableBytes());
                    try {
                        store.uploadPart(upload, nextPart++, last).join();
                    } finally {
                        last.release();
                    }
                } else {
                    store.uploadPart(upload, nextPart++, tail).join();
                }
                while (!inflight.isEmpty()) {
                    inflight.poll().join();
                }
                store.completeMultipart(upload).join();
            }
            done = true;
            return size;
        } finally {
            tail.release();
        }
    }

    /** The stream ranges the finished object holds, one per stream, sorted by stream id. */
    List<StreamRange> ranges(java.util.function.LongUnaryOperator epochOf) {
        List<StreamRange> out = new ArrayList<>();
        for (IndexEntry e : entries) {
            if (!out.isEmpty() && out.getLast().streamId() == e.streamId()) {
                StreamRange last = out.getLast();
                out.set(out.size() - 1, new StreamRange(last.streamId(), last.epoch(), last.startOffset(), e.endOffset()));
            } else {
                out.add(new StreamRange(e.streamId(), epochOf.applyAsLong(e.streamId()), e.startOffset(), e.endOffset()));
            }
        }
        return out;
    }

    /** Releases buffers; an unfinished multipart upload is aborted. Idempotent. */
    @Override
    public void close() {
        if (block != null) {
            gauge.remove(block.maxCapacity());
            block.release();
            block = null;
        }
        if (part != null) {
            gauge.remove(partSizeBytes);
            part.release();
            part = null;
        }
        for (CompletableFuture<Void> f : inflight) {
            try {
                f.join();
            } catch (RuntimeException ignored) {
                // the upload is aborted below; its parts are garbage either way
            }
        }
        inflight.clear();
        if (!done && upload != null) {
            store.abortMultipart(upload).join();
            upload = null;
        }
    }
}
