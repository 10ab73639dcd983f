package io.s3stream.internal.format;

import io.netty.buffer.ByteBuf;

import java.util.concurrent.CompletableFuture;

/**
 * Reads an object's index the way every reader does: one ranged read of the object's last {@link #READ_BYTES}, which
 * holds the footer and, for all but the largest objects, the whole index; a second read only for an index that does
 * not fit. The footer and the index are validated (sizes, CRC) by {@link ObjectFooter} and {@link ObjectIndex}.
 */
public final class ObjectTail {
    /** How much of an object's end the first read fetches. */
    public static final int READ_BYTES = 64 * 1024;

    private ObjectTail() {
    }

    /** A ranged read of the object: the caller's store, priority and accounting. The returned buffer is released here. */
    @FunctionalInterface
    public interface RangeReader {
        CompletableFuture<ByteBuf> read(long position, int length);
    }

    /** The validated index of the object {@code key} of {@code sizeBytes} bytes, read through {@code reader}. */
    public static CompletableFuture<ObjectIndex> readIndex(String key, long sizeBytes, RangeReader reader) {
        int tailLength = (int) Math.min(sizeBytes, READ_BYTES);
        long tailStart = sizeBytes - tailLength;
        return reader.read(tailStart, tailLength).thenCompose(tail -> {
            try {
                ObjectFooter footer = ObjectFooter.decode(
                        tail.slice(tail.readerIndex() + tailLength - ObjectFormat.FOOTER_SIZE, ObjectFormat.FOOTER_SIZE),
                        sizeBytes, key);
                if (footer.indexPosition() >= tailStart) {
                    int from = (int) (footer.indexPosition() - tailStart);
                    return CompletableFuture.completedFuture(ObjectIndex.decode(
                            tail.slice(tail.readerIndex() + from, footer.indexLength()), footer, key));
                }
                return reader.read(footer.indexPosition(), footer.indexLength()).thenApply(indexBytes -> {
                    try {
                        return ObjectIndex.decode(indexBytes, footer, key);
                    } finally {
                        indexBytes.release();
                    }
                });
            } finally {
                tail.release();
            }
        });
    }
}
