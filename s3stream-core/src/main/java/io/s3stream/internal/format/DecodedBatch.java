package io.s3stream.internal.format;

import io.netty.buffer.ByteBuf;

/**
 * One record batch read from a data block.
 *
 * @param baseOffset offset of the batch's first record
 * @param count      number of records, at least 1
 * @param payload    a slice of the block buffer it was decoded from, not retained: valid only while the caller
 *                   keeps that buffer
 */
public record DecodedBatch(long baseOffset, int count, ByteBuf payload) {

    /** End (exclusive) of the batch's offset range. */
    public long endOffset() {
        return baseOffset + count;
    }
}
