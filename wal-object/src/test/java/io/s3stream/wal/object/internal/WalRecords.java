package io.s3stream.wal.object.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.s3stream.spi.WalRecordFormat;

import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Valid engine records ({@link WalRecordFormat}) for WAL tests: each calling thread writes its own stream, with
 * contiguous offsets, as the engine's sequencer would.
 */
final class WalRecords {
    private final ConcurrentHashMap<Long, long[]> nextOffsetByStream = new ConcurrentHashMap<>();

    /** A record of exactly {@code size} bytes (at least the record header). */
    byte[] next(Random r, int size) {
        long stream = Thread.currentThread().threadId() % 1_000_000;
        int payloadBytes = Math.max(0, size - WalRecordFormat.HEADER_SIZE);
        byte[] payload = new byte[payloadBytes];
        r.nextBytes(payload);
        int count = 1 + r.nextInt(3);
        long[] next = nextOffsetByStream.computeIfAbsent(stream, k -> new long[1]);
        long base = next[0];
        next[0] += count;
        ByteBuf buf = WalRecordFormat.encode(UnpooledByteBufAllocator.DEFAULT, stream, 0, base, count,
                ByteBuffer.wrap(payload));
        try {
            byte[] out = new byte[buf.readableBytes()];
            buf.getBytes(buf.readerIndex(), out);
            return out;
        } finally {
            buf.release();
        }
    }
}
