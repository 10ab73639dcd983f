package io.s3stream.cache;

import io.netty.buffer.ByteBuf;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Reads byte ranges of an object: the seam between the cache and the object store.
 */
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

    /**
     * Starts reading consecutive ranges of an object with one request, each into a buffer of its own: the
     * {@code lengths[0]} bytes at {@code position}, the {@code lengths[1]} bytes after them, and so on. The cache
     * uses it for a run of adjacent blocks, so that each block it keeps is a buffer of its own without being copied
     * out of a larger one.
     *
     * @return a future of one buffer per length, in order, each of exactly that many readable bytes and handed over
     */
    CompletableFuture<List<ByteBuf>> loadSplit(long objectId, long position, int[] lengths);
}
