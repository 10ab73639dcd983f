package io.s3stream;

import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * The unit of append: an opaque payload that stands for {@code count} records. A batch appended at base offset
 * {@code b} covers the offset range {@code [b, b + count)}; the library never looks inside the payload.
 *
 * @param count   number of records the batch stands for, at least 1
 * @param payload the bytes between {@code position()} and {@code limit()}; read, never modified, and copied before
 *                {@link Stream#append} returns, so the caller may reuse the buffer at once
 */
public record RecordBatch(int count, ByteBuffer payload) {

    public RecordBatch {
        if (count < 1) {
            throw new IllegalArgumentException("RecordBatch.count must be >= 1, was " + count);
        }
        Objects.requireNonNull(payload, "payload");
    }

    public static RecordBatch of(int count, ByteBuffer payload) {
        return new RecordBatch(count, payload);
    }

    /** Size of the payload in bytes. */
    public int sizeBytes() {
        return payload.remaining();
    }
}
