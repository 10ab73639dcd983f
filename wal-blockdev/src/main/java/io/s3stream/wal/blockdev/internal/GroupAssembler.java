package io.s3stream.wal.blockdev.internal;

import io.s3stream.wal.blockdev.internal.ConductorCommands.AppendRequest;
import io.s3stream.wal.blockdev.internal.ConductorCommands.Group;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.Arrays;

import static io.s3stream.wal.blockdev.internal.WalDescriptor.BLOCK_BYTES;
import static io.s3stream.wal.blockdev.internal.WalDescriptor.RECORD_HEADER_BYTES;

/**
 * Lays out one group-commit write: takes appends from the head of the waiting queue, copies each payload into an
 * aligned buffer with its record header around it, and pads the last block with a padding record, so the write ends
 * on a block boundary. Buffers of {@code writeBytes} are pooled; a record larger than that gets a buffer of its own,
 * freed when the group is recycled. Conductor only.
 */
final class GroupAssembler {

    /** Whether a record of {@code footprint} bytes may be placed at ring position {@code position} (free space). */
    @FunctionalInterface
    interface Placement {
        boolean fits(long position, long footprint);
    }

    private final Arena arena;
    private final int writeBytes;
    private final ArrayDeque<MemorySegment> freeBuffers = new ArrayDeque<>();

    GroupAssembler(Arena arena, int writeBytes) {
        this.arena = arena;
        this.writeBytes = writeBytes;
    }

    /**
     * A group starting at {@code start} holding the first waiting append (which the caller checked fits) and as many
     * following ones as fit in its buffer and the ring; they are removed from {@code waiting}.
     */
    Group assemble(ArrayDeque<AppendRequest> waiting, long start, int walId, int session, Placement placement) {
        long firstFootprint = WalDescriptor.footprint(waiting.getFirst().size);
        MemorySegment buffer;
        Arena own = null;
        if (firstFootprint > writeBytes) {
            own = Arena.ofShared();
            buffer = own.allocate(WalDescriptor.alignUp(firstFootprint, BLOCK_BYTES), BLOCK_BYTES);
        } else {
            buffer = freeBuffers.isEmpty() ? arena.allocate(writeBytes, BLOCK_BYTES) : freeBuffers.pollFirst();
        }
        Group g = new Group(start, buffer, own);
        long offset = 0;
        long[] positions = new long[16];
        int count = 0;
        AppendRequest r;
        while ((r = waiting.peekFirst()) != null) {
            long footprint = WalDescriptor.footprint(r.size);
            if (!g.requests.isEmpty() && (offset + footprint > buffer.byteSize()
                    || !placement.fits(start + offset, footprint))) {
                break;
            }
            waiting.pollFirst();
            long position = start + offset;
            r.buf.getBytes(r.index, buffer.asSlice(offset + RECORD_HEADER_BYTES, r.size).asByteBuffer());
            WalDescriptor.encodeRecordAround(buffer, offset, r.size, position, walId, session);
            g.requests.add(r);
            if (count + 1 >= positions.length) {
                positions = Arrays.copyOf(positions, positions.length * 2);
            }
            positions[count++] = position;
            offset += footprint;
        }
        g.recordsEnd = start + offset;
        positions[count] = g.recordsEnd;
        g.positions = positions;
        long end = WalDescriptor.alignUp(offset, BLOCK_BYTES);
        if (end > offset) {
            WalDescriptor.encodePad(buffer, offset, (int) (end - offset), start + offset, walId, session);
        }
        g.end = start + end;
        return g;
    }

    /** Returns a written group's buffer to the pool, or frees it if it was the group's own. */
    void recycle(Group g) {
        if (g.ownArena != null) {
            g.ownArena.close();
        } else {
            freeBuffers.addLast(g.buffer);
        }
    }
}
