package io.s3stream.internal.format;

import io.netty.buffer.ByteBuf;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import static io.s3stream.internal.format.ObjectFormat.BATCH_BASE_OFFSET_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.BATCH_HEADER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.BATCH_PAYLOAD_LENGTH_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.BATCH_RECORD_COUNT_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_BATCH_COUNT_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_CRC_SIZE;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_HEADER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_STREAM_ID_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.corrupt;

/**
 * Decodes and verifies one data block (layout in {@link ObjectFormat}) into its batches, without copying; or verifies
 * it once and then walks its batch headers without checking again (the block cache's blocks).
 */
public final class DataBlock {

    private DataBlock() {
    }

    /** The CRC32C a block stores over its bytes {@code [index, index + length)}. */
    public static int checksum(ByteBuf buf, int index, int length) {
        return Crc32c.of(buf, index, length);
    }

    /**
     * Starts a block at {@code block}'s writer index, which must equal its reader index: the header, its batch count
     * left for {@link #seal}. The caller then appends whole batches (header and payload, as {@link ObjectFormat} lays
     * them out). The one block encoder: the engine's uploads and compaction's rewrites both write through it.
     */
    public static void writeHeader(ByteBuf block, long streamId) {
        block.writeLong(streamId);
        block.writeInt(0);
    }

    /**
     * Ends the block between {@code block}'s reader and writer index: records its batch count and appends the CRC32C
     * of everything before it. Returns the block's size, CRC included.
     */
    public static int seal(ByteBuf block, int batchCount) {
        block.setInt(block.readerIndex() + BLOCK_BATCH_COUNT_OFFSET, batchCount);
        block.writeInt(checksum(block, block.readerIndex(), block.readableBytes()));
        return block.readableBytes();
    }

    /**
     * Verifies the block's CRC32C and that its headers agree with its index entry, then returns its batches.
     *
     * @param block     exactly the block's bytes, between reader and writer index (indexes untouched)
     * @param entry     the block's index entry
     * @param objectKey named in error messages
     * @return the batches in offset order; each payload is an unretained slice of {@code block}
     * @throws io.s3stream.CorruptDataException on a CRC mismatch or any disagreement with {@code entry}
     */
    public static List<DecodedBatch> decode(ByteBuf block, IndexEntry entry, String objectKey) {
        List<DecodedBatch> batches = new ArrayList<>();
        check(block, entry, objectKey, batches);
        return batches;
    }

    /**
     * Verifies the block as {@link #decode} does, without collecting its batches: the check a block passes once,
     * when it is read from the object store, before {@link #visitChecked} walks it as often as it is read.
     *
     * @throws io.s3stream.CorruptDataException on a CRC mismatch or any disagreement with {@code entry}
     */
    public static void verify(ByteBuf block, IndexEntry entry, String objectKey) {
        check(block, entry, objectKey, null);
    }

    /** What {@link #visitChecked} calls per batch. */
    @FunctionalInterface
    public interface BatchVisitor {
        /**
         * @param baseOffset   the batch's first offset
         * @param count        its record count
         * @param payloadIndex the index of its payload in the block's buffer
         * @param payloadBytes the payload's length
         * @return whether to go on to the next batch
         */
        boolean visit(long baseOffset, int count, int payloadIndex, int payloadBytes);
    }

    /**
     * Walks the batch headers of a block that {@link #verify} (or {@link #decode}) accepted, calling {@code visitor}
     * for each batch that ends above {@code fromOffset}, until it returns false. Nothing is checked again and nothing
     * is allocated: a cached block costs a read of the headers up to the batches wanted, not a CRC of the whole block.
     *
     * @return false if the visitor stopped the walk, true if it reached the block's end
     */
    public static boolean visitChecked(ByteBuf block, long fromOffset, BatchVisitor visitor) {
        int r = block.readerIndex();
        int batchCount = block.getInt(r + BLOCK_BATCH_COUNT_OFFSET);
        int at = r + BLOCK_HEADER_SIZE;
        for (int i = 0; i < batchCount; i++) {
            long baseOffset = block.getLong(at + BATCH_BASE_OFFSET_OFFSET);
            int count = block.getInt(at + BATCH_RECORD_COUNT_OFFSET);
            int payloadLength = block.getInt(at + BATCH_PAYLOAD_LENGTH_OFFSET);
            int payloadAt = at + BATCH_HEADER_SIZE;
            if (baseOffset + count > fromOffset && !visitor.visit(baseOffset, count, payloadAt, payloadLength)) {
                return false;
            }
            at = payloadAt + payloadLength;
        }
        return true;
    }

    /** The checks of {@link #decode}; adds the batches to {@code batches} unless it is null. */
    private static void check(ByteBuf block, IndexEntry entry, String objectKey, List<DecodedBatch> batches) {
        Objects.requireNonNull(block, "block");
        Objects.requireNonNull(entry, "entry");
        long base = entry.position();
        int size = block.readableBytes();
        if (size != entry.sizeBytes()) {
            throw corrupt(objectKey, base, "block size expected " + entry.sizeBytes() + " (from its index entry), got "
                    + size + " bytes");
        }
        if (size < ObjectFormat.MIN_BLOCK_SIZE) {
            throw corrupt(objectKey, base, "block of " + size + " bytes is smaller than the minimum "
                    + ObjectFormat.MIN_BLOCK_SIZE);
        }
        int r = block.readerIndex();
        int crcAt = size - BLOCK_CRC_SIZE;
        int storedCrc = block.getInt(r + crcAt);
        int actualCrc = Crc32c.of(block, r, crcAt);
        if (storedCrc != actualCrc) {
            throw corrupt(objectKey, base + crcAt, String.format("block CRC32C expected 0x%08x (stored), computed "
                    + "0x%08x over block [%d, +%d) of stream %d", storedCrc, actualCrc, base, size, entry.streamId()));
        }
        long streamId = block.getLong(r + BLOCK_STREAM_ID_OFFSET);
        if (streamId != entry.streamId()) {
            throw corrupt(objectKey, base + BLOCK_STREAM_ID_OFFSET, "block stream expected " + entry.streamId()
                    + " (from its index entry), found " + streamId);
        }
        int batchCount = block.getInt(r + BLOCK_BATCH_COUNT_OFFSET);
        int maxBatches = (crcAt - BLOCK_HEADER_SIZE) / BATCH_HEADER_SIZE;
        if (batchCount < 1 || batchCount > maxBatches) {
            throw corrupt(objectKey, base + BLOCK_BATCH_COUNT_OFFSET, "batch count " + batchCount
                    + " must be in [1, " + maxBatches + "] for a " + size + "-byte block");
        }
        long expectedOffset = entry.startOffset();
        int at = BLOCK_HEADER_SIZE;
        for (int i = 0; i < batchCount; i++) {
            if (crcAt - at < BATCH_HEADER_SIZE) {
                throw corrupt(objectKey, base + at, "batch " + i + " header needs " + BATCH_HEADER_SIZE
                        + " bytes, only " + (crcAt - at) + " left before the block CRC");
            }
            long baseOffset = block.getLong(r + at + BATCH_BASE_OFFSET_OFFSET);
            if (baseOffset != expectedOffset) {
                throw corrupt(objectKey, base + at + BATCH_BASE_OFFSET_OFFSET, "batch " + i
                        + " base offset expected " + expectedOffset + ", found " + baseOffset);
            }
            int count = block.getInt(r + at + BATCH_RECORD_COUNT_OFFSET);
            if (count < 1 || count > entry.endOffset() - expectedOffset) {
                throw corrupt(objectKey, base + at + BATCH_RECORD_COUNT_OFFSET, "batch " + i + " record count "
                        + count + " must be in [1, " + (entry.endOffset() - expectedOffset)
                        + "] to stay inside the block's offsets [" + entry.startOffset() + ", " + entry.endOffset()
                        + ")");
            }
            int payloadLength = block.getInt(r + at + BATCH_PAYLOAD_LENGTH_OFFSET);
            int payloadAt = at + BATCH_HEADER_SIZE;
            if (payloadLength < 0 || payloadLength > crcAt - payloadAt) {
                throw corrupt(objectKey, base + at + BATCH_PAYLOAD_LENGTH_OFFSET, "batch " + i + " payload length "
                        + payloadLength + " must be in [0, " + (crcAt - payloadAt)
                        + "] to end before the block CRC");
            }
            if (batches != null) {
                batches.add(new DecodedBatch(baseOffset, count, block.slice(r + payloadAt, payloadLength)));
            }
            expectedOffset += count;
            at = payloadAt + payloadLength;
        }
        if (at != crcAt) {
            throw corrupt(objectKey, base + at, "the last batch ends at block byte " + at
                    + " but the block CRC is at block byte " + crcAt + " (unaccounted bytes)");
        }
        if (expectedOffset != entry.endOffset()) {
            throw corrupt(objectKey, base + at, "batches end at offset " + expectedOffset
                    + " but the index entry says " + entry.endOffset() + " (record counts sum to "
                    + (expectedOffset - entry.startOffset()) + ", expected " + entry.recordCount() + ")");
        }
    }
}
