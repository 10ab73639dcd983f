package io.s3stream.cache;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/** Blocks whose bytes are a function of a tag, so a reader can tell whose memory it is looking at. */
final class TestBlocks {
    static final int HEADER_BYTES = Long.BYTES;

    private TestBlocks() {
    }

    /** Allocates a block of {@code size} bytes (at least the header) filled from {@code tag}. */
    static ByteBuf block(ByteBufAllocator allocator, long tag, int size) {
        if (size < HEADER_BYTES) {
            throw new IllegalArgumentException("size " + size);
        }
        byte[] bytes = new byte[size];
        for (int i = HEADER_BYTES; i < size; i++) {
            bytes[i] = patternByte(tag, i);
        }
        // One bulk write: under PARANOID leak detection every buffer access records a stack trace.
        ByteBuf buf = allocator.directBuffer(size, size);
        buf.writeBytes(bytes);
        buf.setLong(0, tag);
        return buf;
    }

    /** Returns the tag of a block, after checking that every byte matches it. */
    static long verify(ByteBuf buf) {
        byte[] bytes = new byte[buf.readableBytes()];
        buf.getBytes(buf.readerIndex(), bytes);
        long tag = buf.getLong(buf.readerIndex());
        for (int i = HEADER_BYTES; i < bytes.length; i++) {
            if (bytes[i] != patternByte(tag, i)) {
                throw new AssertionError("block with tag " + tag + " corrupt at byte " + i);
            }
        }
        return tag;
    }

    private static byte patternByte(long tag, int index) {
        return (byte) (tag * 31 + index * 7);
    }
}
