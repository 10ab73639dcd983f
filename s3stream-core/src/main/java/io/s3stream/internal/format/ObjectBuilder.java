package io.s3stream.internal.format;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.zip.CRC32C;

import static io.s3stream.internal.format.ObjectFormat.BATCH_BASE_OFFSET_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.BATCH_HEADER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.BATCH_PAYLOAD_LENGTH_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.BATCH_RECORD_COUNT_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_BATCH_COUNT_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_CRC_SIZE;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_HEADER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_STREAM_ID_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.FOOTER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.INDEX_ENTRY_SIZE;
import static io.s3stream.internal.format.ObjectFormat.MAX_OBJECT_SIZE;

/**
 * Lays out one object (format in {@link ObjectFormat}) from batches added in (streamId, offset) order, without
 * copying their payloads.
 *
 * <p>Each added payload is kept as a retained slice; the headers go into small pooled chunks, and
 * {@link #build()} returns a {@link CompositeByteBuf} over headers and payload slices. Block CRCs are computed when
 * a block is closed, so each payload byte is read once by the builder.
 *
 * <p>Lifetime: the builder owns every retained slice until {@link #build()} hands them to the returned buffer
 * (which the caller releases) or {@link #close()} releases them. The caller's own references to the payloads are
 * never taken. Not thread-safe: one owner (the upload pipeline or the compactor) drives it.
 */
public final class ObjectBuilder implements AutoCloseable {

    /** Size of the pooled chunks that hold block headers, batch headers and block CRCs. */
    private static final int HEADER_CHUNK_SIZE = 4096;

    private enum State { OPEN, BUILT, CLOSED }

    private final ByteBufAllocator alloc;
    private final int targetBlockSizeBytes;

    /** Owned references, in object order, up to the end of the open block. */
    private final List<ByteBuf> components = new ArrayList<>();
    private final List<IndexEntry> closedBlocks = new ArrayList<>();
    private ByteBuf headerChunk;
    private State state = State.OPEN;

    /** Bytes of the closed blocks. */
    private long closedBytes;

    private boolean hasOpenBlock;
    private long blockStreamId;
    private long blockStartOffset;
    private long blockEndOffset;
    /** Bytes of the open block without its CRC. */
    private int blockSize;
    private int blockBatchCount;
    private int blockFirstComponent;
    private ByteBuf blockHeader;

    public ObjectBuilder(ByteBufAllocator alloc, int targetBlockSizeBytes) {
        this.alloc = Objects.requireNonNull(alloc, "alloc");
        if (targetBlockSizeBytes < 1) {
            throw new IllegalArgumentException("targetBlockSizeBytes must be >= 1, was " + targetBlockSizeBytes);
        }
        this.targetBlockSizeBytes = targetBlockSizeBytes;
    }

    /**
     * Adds the batch {@code [baseOffset, baseOffset + count)} of a stream. The payload's readable bytes are kept as
     * a retained slice; its reader and writer index and the caller's reference are left alone.
     *
     * @throws IllegalArgumentException if the batch is out of order (a smaller stream id than the previous batch,
     *                                  or not starting where the previous batch of the same stream ended), has a
     *                                  count below 1 or a negative offset, or would make the object exceed 2 GiB
     * @throws IllegalStateException    after {@link #build()} or {@link #close()}
     */
    public void add(long streamId, long baseOffset, int count, ByteBuf payload) {
        Objects.requireNonNull(payload, "payload");
        requireOpen("add");
        if (count < 1) {
            throw new IllegalArgumentException("stream " + streamId + ": batch at base offset " + baseOffset
                    + " has count " + count + ", must be >= 1");
        }
        if (baseOffset < 0 || baseOffset > Long.MAX_VALUE - count) {
            throw new IllegalArgumentException("stream " + streamId + ": batch [" + baseOffset + ", +" + count
                    + ") has offsets outside [0, Long.MAX_VALUE]");
        }
        boolean sameStream = hasOpenBlock && streamId == blockStreamId;
        if (hasOpenBlock && streamId < blockStreamId) {
            throw new IllegalArgumentException("stream " + streamId + " added after stream " + blockStreamId
                    + ": batches must be added in ascending stream id order");
        }
        if (sameStream && baseOffset != blockEndOffset) {
            throw new IllegalArgumentException("stream " + streamId + ": batch at base offset " + baseOffset
                    + " is not contiguous: the previous batch ends at " + blockEndOffset + ", so expected base offset "
                    + blockEndOffset);
        }
        int payloadLength = payload.readableBytes();
        long batchSize = (long) BATCH_HEADER_SIZE + payloadLength;
        boolean newBlock = !sameStream
                || blockSize + batchSize + BLOCK_CRC_SIZE > targetBlockSizeBytes
                || blockEndOffset - blockStartOffset + count > Integer.MAX_VALUE;
        long newObjectSize = sizeBytes() + batchSize
                + (newBlock ? BLOCK_HEADER_SIZE + BLOCK_CRC_SIZE + INDEX_ENTRY_SIZE : 0);
        if (newObjectSize > MAX_OBJECT_SIZE) {
            throw new IllegalArgumentException("stream " + streamId + ": batch at base offset " + baseOffset + " of "
                    + payloadLength + " bytes would make the object " + newObjectSize + " bytes, more than the "
                    + MAX_OBJECT_SIZE + " one object may hold");
        }

        ByteBuf slice = payloadLength > 0 ? payload.retainedSlice() : null;
        try {
            if (newBlock) {
                if (hasOpenBlock) {
                    closeBlock();
                }
                openBlock(streamId, baseOffset);
            }
            ByteBuf header = headerSlot(BATCH_HEADER_SIZE);
            header.setLong(BATCH_BASE_OFFSET_OFFSET, baseOffset);
            header.setInt(BATCH_RECORD_COUNT_OFFSET, count);
            header.setInt(BATCH_PAYLOAD_LENGTH_OFFSET, payloadLength);
            if (slice != null) {
                components.add(slice);
                slice = null;
            }
            blockSize += (int) batchSize;
            blockBatchCount++;
            blockEndOffset = baseOffset + count;
        } finally {
            if (slice != null) {
                slice.release();
            }
        }
    }

    private void openBlock(long streamId, long baseOffset) {
        hasOpenBlock = true;
        blockStreamId = streamId;
        blockStartOffset = baseOffset;
        blockEndOffset = baseOffset;
        blockSize = BLOCK_HEADER_SIZE;
        blockBatchCount = 0;
        blockFirstComponent = components.size();
        blockHeader = headerSlot(BLOCK_HEADER_SIZE);
        blockHeader.setLong(BLOCK_STREAM_ID_OFFSET, streamId);
    }

    private void closeBlock() {
        blockHeader.setInt(BLOCK_BATCH_COUNT_OFFSET, blockBatchCount);
        CRC32C crc = new CRC32C();
        for (int i = blockFirstComponent; i < components.size(); i++) {
            ByteBuf c = components.get(i);
            Crc32c.update(crc, c, c.readerIndex(), c.readableBytes());
        }
        ByteBuf crcSlot = headerSlot(BLOCK_CRC_SIZE);
        crcSlot.setInt(0, (int) crc.getValue());
        closedBlocks.add(openBlockEntry());
        closedBytes += blockSize + BLOCK_CRC_SIZE;
        hasOpenBlock = false;
        blockHeader = null;
    }

    private IndexEntry openBlockEntry() {
        return new IndexEntry(blockStreamId, blockStartOffset, blockEndOffset,
                (int) (blockEndOffset - blockStartOffset), closedBytes, blockSize + BLOCK_CRC_SIZE);
    }

    /** Appends a {@code size}-byte owned component carved from the current header chunk, for the caller to fill. */
    private ByteBuf headerSlot(int size) {
        if (headerChunk == null || headerChunk.capacity() - headerChunk.writerIndex() < size) {
            if (headerChunk != null) {
                headerChunk.release();
                headerChunk = null;
            }
            headerChunk = alloc.buffer(HEADER_CHUNK_SIZE, HEADER_CHUNK_SIZE);
        }
        int at = headerChunk.writerIndex();
        ByteBuf slot = headerChunk.retainedSlice(at, size);
        headerChunk.writerIndex(at + size);
        components.add(slot);
        return slot;
    }

    /**
     * Closes the last block, appends index and footer and returns the whole object; the builder holds nothing
     * afterwards. The caller owns (and releases) the returned buffer.
     *
     * @throws IllegalStateException if already built or closed
     */
    public ByteBuf build() {
        requireOpen("build");
        try {
            if (hasOpenBlock) {
                closeBlock();
            }
            int indexLength = closedBlocks.size() * INDEX_ENTRY_SIZE;
            ByteBuf tail = alloc.buffer(indexLength + FOOTER_SIZE, indexLength + FOOTER_SIZE);
            components.add(tail);
            for (IndexEntry e : closedBlocks) {
                ObjectIndex.encode(e, tail);
            }
            int indexCrc = Crc32c.of(tail, 0, indexLength);
            new ObjectFooter(closedBytes, indexLength, indexCrc, ObjectFormat.VERSION,
                    closedBytes + indexLength + FOOTER_SIZE).encode(tail);
            CompositeByteBuf object = alloc.compositeBuffer(components.size());
            // Ownership of every component moves to the composite, even if adding fails part-way.
            List<ByteBuf> handOver = List.copyOf(components);
            components.clear();
            object.addComponents(true, handOver);
            releaseHeaderChunk();
            state = State.BUILT;
            return object;
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    /** Blocks laid out so far, the open one included with its current extent. */
    public List<IndexEntry> entries() {
        List<IndexEntry> all = new ArrayList<>(closedBlocks.size() + 1);
        all.addAll(closedBlocks);
        if (hasOpenBlock) {
            all.add(openBlockEntry());
        }
        return List.copyOf(all);
    }

    /** Size of the buffer {@link #build()} returns if nothing more is added. */
    public long sizeBytes() {
        long data = closedBytes + (hasOpenBlock ? blockSize + BLOCK_CRC_SIZE : 0);
        long entryCount = closedBlocks.size() + (hasOpenBlock ? 1 : 0);
        return data + entryCount * INDEX_ENTRY_SIZE + FOOTER_SIZE;
    }

    /** One summary per stream added so far, in stream order. */
    public List<StreamSummary> streams() {
        List<StreamSummary> out = new ArrayList<>();
        StreamSummary current = null;
        for (IndexEntry e : entries()) {
            if (current != null && current.streamId() == e.streamId()) {
                current = new StreamSummary(e.streamId(), current.startOffset(), e.endOffset(),
                        current.sizeBytes() + e.sizeBytes());
            } else {
                if (current != null) {
                    out.add(current);
                }
                current = new StreamSummary(e.streamId(), e.startOffset(), e.endOffset(), e.sizeBytes());
            }
        }
        if (current != null) {
            out.add(current);
        }
        return List.copyOf(out);
    }

    /** Releases everything retained if {@link #build()} was not called; idempotent. */
    @Override
    public void close() {
        if (state == State.CLOSED) {
            return;
        }
        state = State.CLOSED;
        for (ByteBuf c : components) {
            c.release();
        }
        components.clear();
        releaseHeaderChunk();
        blockHeader = null;
    }

    private void releaseHeaderChunk() {
        if (headerChunk != null) {
            headerChunk.release();
            headerChunk = null;
        }
    }

    private void requireOpen(String operation) {
        if (state != State.OPEN) {
            throw new IllegalStateException("cannot " + operation + ": the builder is "
                    + (state == State.BUILT ? "already built" : "closed"));
        }
    }
}
