package io.s3stream.internal.store.common;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The buffers of a split read ({@code ObjectStore.getSplit}) filled in order as the body arrives: one direct buffer
 * per range, allocated when its first byte comes, so the body is copied once, from the client's buffers into the ones
 * the caller keeps. Bytes past the last range are refused, never kept.
 *
 * <p>Once the buffers are {@linkplain #take() taken} or {@linkplain #release() released} every later write is refused
 * and allocates nothing: a client may still be writing a body on its own thread (an event loop) after the thread that
 * waited for it gave up, and a buffer allocated then would be owned by no one. Thread-safe for that reason; the lock
 * is uncontended on the ordinary path (one writer, then one taker).
 */
public final class SplitBuffers {
    private final int[] lengths;
    private final ByteBufAllocator allocator;
    private final List<ByteBuf> parts;
    private final long total;
    private long received; // guarded by this
    private boolean closed; // guarded by this: taken or released

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

    /**
     * Takes all of {@code chunk}; {@code false} (and nothing past the last range kept) when it goes past the end or
     * arrives after the buffers were taken or released.
     */
    public synchronized boolean write(ByteBuffer chunk) {
        if (closed) {
            return false;
        }
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
    public synchronized long received() {
        return received;
    }

    /** Whether the buffers were taken or released: every write from now on is refused. */
    public synchronized boolean isClosed() {
        return closed;
    }

    /** The sum of the ranges' lengths. */
    public long total() {
        return total;
    }

    /** The filled buffers, handed over to the caller; only once every range is full, and only once. */
    public synchronized List<ByteBuf> take() {
        if (closed) {
            throw new IllegalStateException("split read already taken or released");
        }
        if (received != total) {
            throw new IllegalStateException("split read has " + received + " of its " + total + " bytes");
        }
        List<ByteBuf> out = List.copyOf(parts);
        parts.clear();
        closed = true;
        return out;
    }

    /** Releases what was gathered (a failed or abandoned read) and refuses any later write; idempotent. */
    public synchronized void release() {
        closed = true;
        parts.forEach(ByteBuf::release);
        parts.clear();
    }
}
