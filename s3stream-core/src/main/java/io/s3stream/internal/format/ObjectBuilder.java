package io.s3stream.internal.format;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import static io.s3stream.internal.format.ObjectFormat.BATCH_HEADER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_CRC_SIZE;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_HEADER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.FOOTER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.INDEX_ENTRY_SIZE;
import static io.s3stream.internal.format.ObjectFormat.MAX_OBJECT_SIZE;

/**
 * Lays out one object (format in {@link ObjectFormat}) from batches added in (streamId, offset) order.
 *
 * <p>Each data block is written into one pooled direct buffer: the block header, then each batch's header and a copy
 * of its payload, then the CRC when the block closes. {@link #build()} returns a {@link CompositeByteBuf} over the
 * blocks and a tail holding the index and footer.
 *
 * <p>Design note: an earlier version kept every payload as a retained slice (zero copy). Measured with JMH
 * ({@code AppendPipelineBenchmark -prof gc}), the slices, header slots, composite components and NIO views it needed
 * cost several hundred bytes of garbage per batch and slowed the upload path; copying 4 KiB costs less than managing
 * four small objects for it. Allocation is now per block, not per batch, and each CRC runs over one contiguous region.
 * The price is a transient copy of the upload (bounded by the upload threshold).
 *
 * <p>Lifetime: the builder owns its block buffers until {@link #build()} hands them to the returned buffer (which the
 * caller releases) or {@link #close()} releases them. Payloads are only read: the caller's references and indexes are
 * left alone. Not thread-safe: one owner (the upload pipeline or the compactor) drives it.
 */
public final class ObjectBuilder implements AutoCloseable {


    private enum State { OPEN, BUILT, CLOSED }

    private final ByteBufAllocator alloc;
    private final int targetBlockSizeBytes;

    /** Owned references, in object order, up to the end of the open block. */
    private final List<ByteBuf> components = new ArrayList<>();
    private final List<IndexEntry> closedBlocks = new ArrayList<>();
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
    /** The open data block: header, batches, and at close its CRC; a pooled direct buffer owned here. */
    private ByteBuf block;

    public ObjectBuilder(ByteBufAllocator alloc, int targetBlockSizeBytes) {
        this.alloc = Objects.requireNonNull(alloc, "alloc");
        if (targetBlockSizeBytes < 1) {
            throw new IllegalArgumentException("targetBlockSizeBytes must be >= 1, was " + targetBlockSizeBytes);
        }
        this.targetBlockSizeBytes = targetBlockSizeBytes;
    }

    /**
     * Adds the batch {@code [baseOffset, baseOffset + count)} of a stream. The payload's readable bytes are
     * copied; its reader and writer index and the caller's reference are left alone.
     *
     * @throws IllegalArgumentException if the batch is out of order (a smaller stream id than the previous batch,
     *                                  or not starting where the previous batch of the same stream ended), has a
     *                                  count below 1 or a negative offset, or would make the object exceed 2 GiB
     * @throws IllegalStateException    after {@link #build()} or {@link #close()}
     */
    public void add(long streamId, long baseOffset, int count, ByteBuf payload) {
        Objects.requireNonNull(payload, "payload");
        add(streamId, baseOffset, count, payload, payload.readerIndex(), payload.readableBytes(), false);
    }

    /**
     * {@link #add(long, long, int, ByteBuf)} for {@code length} bytes of {@code source} at {@code index}, without a
     * slice. With {@code exclusiveView}, the source's cached internal NIO view is used for the copy (no allocation):
     * allowed only when no other thread can use that buffer's internal view meanwhile.
     */
    public void add(long streamId, long baseOffset, int count, ByteBuf source, int index, int length,
                    boolean exclusiveView) {
        Objects.requireNonNull(source, "source");
        int at = beginBatch(streamId, baseOffset, count, length);
        if (length > 0) {
            if (exclusiveView && source.nioBufferCount() == 1) {
                ByteBuffer from = source.internalNioBuffer(index, length);
                ByteBuffer to = block.internalNioBuffer(at, length);
                // Both views span whole pooled chunks, positioned at the regions: index from their positions.
                to.put(to.position(), from, from.position(), length);
            } else {
                block.setBytes(at, source, index, length);
            }
        }
        endBatch(baseOffset, count, length);
    }

    /**
     * {@link #add(long, long, int, ByteBuf)} for {@code length} bytes of {@code source} at absolute index
     * {@code index}. The copy is an absolute bulk get: {@code source}'s position and limit are neither read nor
     * changed, so one view of memory that no one writes may be shared by threads (the engine's record arena).
     */
    public void add(long streamId, long baseOffset, int count, ByteBuffer source, int index, int length) {
        Objects.requireNonNull(source, "source");
        int at = beginBatch(streamId, baseOffset, count, length);
        if (length > 0) {
            ByteBuffer to = block.internalNioBuffer(at, length);
            to.put(to.position(), source, index, length);
        }
        endBatch(baseOffset, count, length);
    }

    /**
     * Checks a batch of {@code length} payload bytes, opens a block if needed and writes the batch header; returns the
     * block index where the payload goes (the caller copies it there, then calls {@link #endBatch}).
     */
    private int beginBatch(long streamId, long baseOffset, int count, int length) {
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
        int payloadLength = length;
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

        if (newBlock) {
            if (hasOpenBlock) {
                closeBlock();
            }
            openBlock(streamId, baseOffset, (int) Math.min(Integer.MAX_VALUE - 64,
                    Math.max(targetBlockSizeBytes, BLOCK_HEADER_SIZE + batchSize + BLOCK_CRC_SIZE)));
        }
        block.ensureWritable((int) batchSize + BLOCK_CRC_SIZE);
        block.writeLong(baseOffset);
        block.writeInt(count);
        block.writeInt(payloadLength);
        return block.writerIndex();
    }

    /** Accounts for a batch whose payload was copied to the block after {@link #beginBatch}. */
    private void endBatch(long baseOffset, int count, int payloadLength) {
        block.writerIndex(block.writerIndex() + payloadLength);
        long batchSize = (long) BATCH_HEADER_SIZE + payloadLength;
        blockSize += (int) batchSize;
        blockBatchCount++;
        blockEndOffset = baseOffset + count;
    }

    private void openBlock(long streamId, long baseOffset, int capacity) {
        hasOpenBlock = true;
        blockStreamId = streamId;
        blockStartOffset = baseOffset;
        blockEndOffset = baseOffset;
        blockSize = BLOCK_HEADER_SIZE;
        blockBatchCount = 0;
        block = alloc.directBuffer(capacity);
        DataBlock.writeHeader(block, streamId);
    }

    private void closeBlock() {
        DataBlock.seal(block, blockBatchCount);
        components.add(block);
        block = null;
        closedBlocks.add(openBlockEntry());
        closedBytes += blockSize + BLOCK_CRC_SIZE;
        hasOpenBlock = false;
    }

    private IndexEntry openBlockEntry() {
        return new IndexEntry(blockStreamId, blockStartOffset, blockEndOffset,
                (int) (blockEndOffset - blockStartOffset), closedBytes, blockSize + BLOCK_CRC_SIZE);
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
        if (block != null) {
            block.release();
            block = null;
        }
    }

    private void requireOpen(String operation) {
        if (state != State.OPEN) {
            throw new IllegalStateException("cannot " + operation + ": the builder is "
                    + (state == State.BUILT ? "already built" : "closed"));
        }
    }
}
