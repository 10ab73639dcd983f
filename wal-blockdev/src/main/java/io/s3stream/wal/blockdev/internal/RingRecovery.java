package io.s3stream.wal.blockdev.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.spi.WriteAheadLog.RecordHandler;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static io.s3stream.wal.blockdev.internal.WalDescriptor.BLOCK_BYTES;

/**
 * Recovery of a {@link BlockDeviceWal}'s ring: take ownership, deliver every untrimmed record, and leave the ring
 * ready for the first write of the new session. Runs once, before the WAL's conductor starts.
 *
 * <h2>Procedure and why nothing stale can follow the write point</h2>
 * Recovery takes ownership (a new header with the node epoch and a session number one higher, written before
 * anything else), then scans from the header's scan start with {@link RingScanner}, stopping at the first record
 * that fails a check (magic, header CRC, WAL id, position equal to where it is found, non-decreasing session, length,
 * body CRC). Why nothing stale can follow the write point: (1) a record of an earlier lap carries a smaller
 * position, so it fails the position check; (2) a write of the crashed process that became durable behind a lost
 * write (possible with several writes in flight, or a torn multi-block write) carries the old session, while
 * everything written after recovery carries the new, higher one, so once the new session has written in front of
 * such an orphan the session check refuses it, and before that the scan already stops at the lost write in front of
 * it; (3) if the last valid record ends inside a block, recovery rewrites that block with its valid prefix unchanged
 * and a padding record of the new session after it, so the rest of the block (which may hold the valid-looking head
 * of a torn record) can never be read as data once new records follow. Rewriting identical bytes is safe even if the
 * write tears: every byte is either old or new, and the prefix is the same in both.
 */
final class RingRecovery {

    private static final int SCAN_CHUNK_BYTES = 4 * 1024 * 1024;

    /**
     * What recovery leaves behind. {@code header} is the one now on the device (this session's);
     * {@code endPosition} is the end of the last valid record; {@code writePosition} the block boundary where the
     * next group is written.
     */
    record Recovered(WalDescriptor.Header header, long endPosition, long writePosition, long records,
                     long payloadBytes, boolean torn, String detail) {
    }

    private RingRecovery() {
    }

    /**
     * Writes {@code owned} (the previous header {@code previous} taken over by this session) into the header slots,
     * scans the ring from {@code previous}'s scan start, hands each record at or above its trim position to
     * {@code handler} (in a direct buffer the handler owns) and to {@code live}, and seals the block holding the end.
     * {@code arena} provides the one aligned block the seal needs.
     *
     * @throws BlockIoException on a device error; the caller reports it with the WAL's description
     */
    static Recovered run(BlockIo io, HeaderSlots headerSlots, WalDescriptor.Header previous, WalDescriptor.Header owned,
                         long ringBytes, int maxRecordBytes, Arena arena, LiveRanges live, RecordHandler handler) {
        headerSlots.write(owned);
        long trimPosition = previous.trimPosition();
        long[] count = new long[2];
        RingScanner.Result scan;
        try (RingScanner scanner = new RingScanner(io, ringBytes, previous.walId(), maxRecordBytes, SCAN_CHUNK_BYTES)) {
            scan = scanner.scan(previous.scanStart(), (position, next, session, payload) -> {
                if (position < trimPosition) {
                    return;
                }
                live.add(position, next);
                ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer((int) payload.byteSize());
                try {
                    buf.writeBytes(payload.asByteBuffer());
                } catch (RuntimeException e) {
                    buf.release();
                    throw e;
                }
                count[0]++;
                count[1] += payload.byteSize();
                handler.onRecord(position, next, buf);
            });
        }
        long end = scan.endPosition();
        long writePosition = sealTail(io, ringBytes, arena, end, owned);
        return new Recovered(owned, end, writePosition, count[0], count[1], scan.torn(), scan.detail());
    }

    /**
     * Makes the block holding {@code end} safe to write after: when {@code end} is inside a block, rewrites that block
     * with its valid prefix unchanged and a padding record of the new session after it. Returns the next write
     * position (the following block boundary).
     */
    private static long sealTail(BlockIo io, long ringBytes, Arena arena, long end, WalDescriptor.Header owned) {
        int within = (int) Math.floorMod(end, (long) BLOCK_BYTES);
        if (within == 0) {
            return end;
        }
        long blockStart = end - within;
        MemorySegment block = arena.allocate(BLOCK_BYTES, BLOCK_BYTES); // once per recovery; freed on close
        RingScanner.readRing(io, ringBytes, blockStart, block);
        WalDescriptor.encodePad(block, within, BLOCK_BYTES - within, end, owned.walId(), owned.session());
        RingScanner.writeRing(io, ringBytes, blockStart, block);
        return blockStart + BLOCK_BYTES;
    }
}
