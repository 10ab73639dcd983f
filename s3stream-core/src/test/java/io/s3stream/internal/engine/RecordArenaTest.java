package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.spi.WalRecordFormat;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

class RecordArenaTest {
    private final PooledByteBufAllocator alloc = new PooledByteBufAllocator(true);

    /** The bytes {@link WalRecordFormat#encode} makes for the same record: the arena's must be identical. */
    private byte[] reference(long streamId, long epoch, long baseOffset, int count, byte[] payload) {
        ByteBuf encoded = WalRecordFormat.encode(alloc, streamId, epoch, baseOffset, count,
                ByteBuffer.allocateDirect(payload.length).put(payload).flip());
        try {
            return ByteBufUtil.getBytes(encoded);
        } finally {
            encoded.release();
        }
    }

    private static ByteBuffer direct(byte[] bytes) {
        return ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
    }

    /** The record {@link RecordArena#encode} wrote at {@code index} of {@code buffer}: its size is in its header. */
    private static ByteBuf recordAt(ByteBuf buffer, int index) {
        return buffer.slice(index, WalRecordFormat.HEADER_SIZE
                + buffer.getInt(index + WalRecordFormat.PAYLOAD_LENGTH_OFFSET));
    }

    @Test
    void carvedRecordsHoldTheFormatsBytesAndTheirViewsShowTheSameBytes() {
        Random random = new Random(20261126);
        RecordArena arena = new RecordArena(alloc);
        List<ByteBuf> buffers = new ArrayList<>();
        ByteBuffer firstView = null;
        for (int i = 0; i < 600; i++) {
            byte[] payload = new byte[random.nextInt(9000)];
            random.nextBytes(payload);
            ByteBuffer source = direct(payload);
            ByteBuf buffer = arena.encode(7 + i % 3, 2, 1000L * i, 1 + i % 5, source);
            ByteBuf record = recordAt(buffer, arena.index());
            assertEquals(0, source.position(), "the payload's position is left alone");
            byte[] expected = reference(7 + i % 3, 2, 1000L * i, 1 + i % 5, payload);
            assertArrayEquals(expected, ByteBufUtil.getBytes(record), "record " + i);
            byte[] fromView = new byte[expected.length];
            arena.view().get(arena.index(), fromView);
            assertArrayEquals(expected, fromView, "view of record " + i);
            WalRecordFormat.Decoded decoded = WalRecordFormat.decode(record, "record " + i);
            assertEquals(1000L * i, decoded.baseOffset());
            if (firstView == null) {
                firstView = arena.view();
            }
            buffers.add(buffer);
        }
        // 600 records of ~4.5 KiB: several 1 MiB chunks, each record a region of one.
        assertNotSame(firstView, arena.view(), "later records come from a new chunk");
        buffers.forEach(ByteBuf::release);
        arena.close();
    }

    @Test
    void aChunkIsFreedOnlyOnceTheArenaAndEveryRecordCarvedFromItLetGo() {
        RecordArena arena = new RecordArena(alloc);
        ByteBuf first = arena.encode(1, 1, 0, 1, direct(new byte[100]));
        assertEquals(2, first.refCnt(), "a record holds a reference to its chunk, beside the arena's");
        ByteBuf second = arena.encode(1, 1, 1, 1, direct(new byte[100]));
        assertSame(first, second, "both carved from one chunk");
        assertEquals(3, first.refCnt());
        int secondIndex = arena.index();
        first.release();
        arena.close();
        assertEquals(1, second.refCnt(), "the second record still holds the chunk");
        assertEquals(100, WalRecordFormat.decode(recordAt(second, secondIndex), "second").payload().readableBytes());
        second.release();
        assertEquals(0, second.refCnt(), "the chunk went back to the pool");
    }

    @Test
    void aRecordLargerThanTheCarvingLimitGetsABufferOfItsOwn() {
        RecordArena arena = new RecordArena(alloc);
        ByteBuf small = arena.encode(1, 1, 0, 1, direct(new byte[10]));
        byte[] payload = new byte[RecordArena.MAX_CARVED_BYTES];
        new Random(1).nextBytes(payload);
        ByteBuf large = arena.encode(1, 1, 1, 1, direct(payload));
        assertEquals(1, large.refCnt(), "not a slice of a shared chunk");
        assertEquals(0, arena.index());
        assertArrayEquals(reference(1, 1, 1, 1, payload), ByteBufUtil.getBytes(recordAt(large, 0)));
        assertEquals(2, small.refCnt());
        ByteBuf next = arena.encode(1, 1, 2, 1, direct(new byte[10]));
        assertEquals(3, small.refCnt(), "carving goes on in the chunk it was using");
        large.release();
        small.release();
        next.release();
        arena.close();
    }
}
