package io.s3stream;

import java.nio.ByteBuffer;

/**
 * One record batch as read back from a stream.
 *
 * @param baseOffset offset of the batch's first record
 * @param count      number of records in the batch
 * @param payload    read-only view of the payload; valid only until the enclosing {@link FetchResult} is closed
 */
public record StoredBatch(long baseOffset, int count, ByteBuffer payload) {

    /** Offset just past the batch's last record. */
    public long endOffset() {
        return baseOffset + count;
    }
}
