package io.s3stream.internal.store.common;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The buffers of a split read ({@code ObjectStore.getSplit}) filled in order as the body arrives: one direct buffer
 * per range, allocated when its first byte comes, so the body is copied once, from the client's buffers into the ones
 * the caller keeps. Bytes past the last range are refused, never kept. Not thread-safe: one body, one writer.
 */
public final class SplitBuffers {
    private final int[] lengths;
    private final ByteBufAllocator allocator;
    private final List<ByteBuf> parts;
    private long received;
    private final long total;

    public SplitBuffers(int[] lengths, ByteBufAllocator allocator) {
        this.lengths = lengths;
        this.allocator = allocator;
        this.parts = new ArrayList<>(lengths.length);
        long sum = 0;
        for (int length : lengths) {
            sum += length;
        }
        this.total = sum;
    }

    /** Takes all of {@code chunk}; {@code false} (and nothing past the last range kept) when it goes past the end. */
    public boolean write(ByteBuffer chunk) {
        while (chunk.hasRemaining()) {
            ByteBuf part = current();
            if (part == null) {
                return false;
            }
            int n = Math.min(chunk.remaining(), part.writableBytes());
            int limit = chunk.limit();
            chunk.limit(chunk.position() + n);
            part.writeBytes(chunk);
            chunk.limit(limit);
            received += n;
        }
        return true;
    }

    /** Takes {@code bytes[offset, offset + length)}, as {@link #write(ByteBuffer)} does. */
    public boolean write(byte[] bytes, int offset, int length) {
        return write(ByteBuffer.wrap(bytes, offset, length));
    }

    /** The buffer the next byte goes to, or {@code null} when every range is full. */
    private ByteBuf current() {
        ByteBuf part = parts.isEmpty() ? null : parts.getLast();
        if (part != null && part.isWritable()) {
            return part;
        }
        if (parts.size() == lengths.length) {
            return null;
        }
        int length = lengths[parts.size()];
        part = allocator.directBuffer(length, length);
        parts.add(part);
        return part;
    }

    /** Bytes taken so far. */
    public long received() {
        return received;
    }

    /** The sum of the ranges' lengths. */
    public long total() {
        return total;
    }

    /** The filled buffers, handed over to the caller; only once every range is full. */
    public List<ByteBuf> take() {
        if (received != total) {
            throw new IllegalStateException("split read has " + received + " of its " + total + " bytes");
        }
        List<ByteBuf> out = List.copyOf(parts);
        parts.clear();
        return out;
    }

    /** Releases what was gathered (a failed or abandoned read). */
    public void release() {
        parts.forEach(ByteBuf::release);
        parts.clear();
    }
}
