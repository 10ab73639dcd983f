package io.s3stream.cache;

import io.netty.buffer.ByteBuf;
import java.util.concurrent.CompletableFuture;

/**
 * Reads one contiguous byte range of an object: the seam between the cache and the object store.
 */
@FunctionalInterface
public interface RangeLoader {
    /**
     * Starts reading {@code [position, position + lengthBytes)} of an object.
     *
     * @param objectId the object
     * @param position first byte
     * @param lengthBytes bytes to read
     * @return a future of a buffer of exactly {@code lengthBytes} readable bytes, one reference handed over
     */
    CompletableFuture<ByteBuf> load(long objectId, long position, int lengthBytes);
}
