package io.s3stream.internal.format;

/**
 * Describes one data block of an object: which offsets of which stream it holds and where its bytes are.
 *
 * @param streamId    the stream whose batches the block holds
 * @param startOffset base offset of the block's first batch
 * @param endOffset   end (exclusive) of the block's last batch
 * @param recordCount {@code endOffset - startOffset}
 * @param position    byte position of the block in the object
 * @param sizeBytes   size of the whole block, including its trailing CRC
 */
public record IndexEntry(long streamId, long startOffset, long endOffset, int recordCount, long position,
                         int sizeBytes) {

    /** Byte position just past the block. */
    public long endPosition() {
        return position + sizeBytes;
    }

    /** Whether the block holds any offset of {@code [start, end)} of {@code stream}. */
    public boolean overlaps(long stream, long start, long end) {
        return streamId == stream && startOffset < end && start < endOffset;
    }
}
