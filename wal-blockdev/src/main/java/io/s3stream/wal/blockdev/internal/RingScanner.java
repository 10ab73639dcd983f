package io.s3stream.wal.blockdev.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static io.s3stream.wal.blockdev.internal.WalDescriptor.BLOCK_BYTES;
import static io.s3stream.wal.blockdev.internal.WalDescriptor.PAD_MAGIC;
import static io.s3stream.wal.blockdev.internal.WalDescriptor.RECORD_HEADER_BYTES;
import static io.s3stream.wal.blockdev.internal.WalDescriptor.RECORD_MAGIC;
import static io.s3stream.wal.blockdev.internal.WalDescriptor.RING_OFFSET;

/**
 * Walks the ring from a scan start, in position order, and stops at the first block of bytes that is not a valid
 * record or padding of this WAL at exactly that position. Used by recovery and by {@code WalTool}.
 *
 * <p>A record is accepted only if all of these hold: the magic is a record or padding magic; the header CRC32C
 * matches; the {@code walId} is this WAL's; the {@code position} field equals the position being scanned (so a record
 * of an earlier lap, which sits at the same physical offset with a position smaller by a multiple of the ring size, is
 * refused); the session is not lower than the previous record's (so an orphan write of a crashed process, durable
 * behind a write that was lost, is refused once a later session has written in front of it); the length is within
 * bounds; and the payload CRC32C matches. The scan never goes past one full lap.
 *
 * <p>Reads are large (a few MiB) and aligned, so the scan runs at the device's sequential read speed; the CRC32C is
 * computed over the read buffer in place (an intrinsic on x86_64 and aarch64).
 */
public final class RingScanner implements AutoCloseable {
    private final BlockIo io;
    private final long ringBytes;
    private final int walId;
    private final int maxRecordBytes;
    private final int chunkBytes;
    private Arena arena;
    private MemorySegment window;
    private long windowStart;
    private long windowEnd;

    /** Receives what the scan finds; the payload segment is valid only during the call. */
    public interface Visitor {
        void record(long position, long nextPosition, int session, MemorySegment payload);

        default void padding(long position, int lengthBytes, int session) {
        }
    }

    /**
     * The outcome of a scan.
     *
     * @param endPosition position just past the last valid record or padding
     * @param records     records visited
     * @param payloadBytes payload bytes visited
     * @param torn        whether the scan stopped at something that looks like a damaged record of this lap (a
     *                    checksum mismatch) rather than at clean free space or a stale record
     * @param detail      what stopped the scan
     * @param lastSession session of the last valid entry, or -1
     */
    public record Result(long endPosition, long records, long payloadBytes, boolean torn, String detail,
                         int lastSession) {
    }

    public RingScanner(BlockIo io, long ringBytes, int walId, int maxRecordBytes, int chunkBytes) {
        this.io = io;
        this.ringBytes = ringBytes;
        this.walId = walId;
        this.maxRecordBytes = maxRecordBytes;
        this.chunkBytes = (int) Math.min(chunkBytes, ringBytes);
    }

    /** Scans from {@code scanStart} (a record or padding start). */
    public Result scan(long scanStart, Visitor visitor) {
        long p = scanStart;
        long limit = scanStart + ringBytes;
        long records = 0;
        long bytes = 0;
        int lastSession = -1;
        while (p + RECORD_HEADER_BYTES <= limit) {
            long off = ensure(p, RECORD_HEADER_BYTES);
            int magic = WalDescriptor.recordMagic(window, off);
            if (magic != RECORD_MAGIC && magic != PAD_MAGIC) {
                return new Result(p, records, bytes, false, "free space (no record magic) at position " + p,
                        lastSession);
            }
            if (!WalDescriptor.recordHeaderCrcMatches(window, off)) {
                return new Result(p, records, bytes, true, "record header checksum mismatch at position " + p
                        + " (torn or corrupt write)", lastSession);
            }
            if (WalDescriptor.recordWalId(window, off) != walId) {
                return new Result(p, records, bytes, false, "record of another WAL (id "
                        + Integer.toHexString(WalDescriptor.recordWalId(window, off)) + ") at position " + p,
                        lastSession);
            }
            long stored = WalDescriptor.recordPosition(window, off);
            if (stored != p) {
                return new Result(p, records, bytes, false, "stale record of position " + stored
                        + " from an earlier lap at position " + p, lastSession);
            }
            int session = WalDescriptor.recordSession(window, off);
            if (session < lastSession) {
                return new Result(p, records, bytes, false, "orphan record of session " + session
                        + " behind session " + lastSession + " at position " + p, lastSession);
            }
            int length = WalDescriptor.recordLength(window, off);
            if (magic == PAD_MAGIC) {
                if (length < RECORD_HEADER_BYTES || length > BLOCK_BYTES || (p + length) % BLOCK_BYTES != 0) {
                    return new Result(p, records, bytes, true, "invalid padding length " + length + " at position "
                            + p, lastSession);
                }
                visitor.padding(p, length, session);
                p += length;
                lastSession = session;
                continue;
            }
            if (length < 0 || length > maxRecordBytes) {
                return new Result(p, records, bytes, true, "invalid record length " + length + " at position " + p,
                        lastSession);
            }
            long footprint = WalDescriptor.footprint(length);
            if (p + footprint > limit) {
                return new Result(p, records, bytes, true, "record at position " + p + " longer than the ring",
                        lastSession);
            }
            off = ensure(p, footprint);
            int bodyCrc = WalDescriptor.crc(window, off + RECORD_HEADER_BYTES, length);
            if (bodyCrc != WalDescriptor.recordBodyCrc(window, off)) {
                return new Result(p, records, bytes, true, "record body checksum mismatch at position " + p
                        + " (" + length + " bytes; torn or corrupt write)", lastSession);
            }
            visitor.record(p, p + footprint, session, window.asSlice(off + RECORD_HEADER_BYTES, length));
            records++;
            bytes += length;
            p += footprint;
            lastSession = session;
        }
        return new Result(p, records, bytes, false, "scanned one full lap of the ring", lastSession);
    }

    /** Makes logical range [position, position+length) readable in the window; returns its offset there. */
    private long ensure(long position, long length) {
        if (window != null && position >= windowStart && position + length <= windowEnd) {
            return position - windowStart;
        }
        long start = WalDescriptor.alignDown(position, BLOCK_BYTES);
        long size = Math.max(chunkBytes, WalDescriptor.alignUp(position + length - start, BLOCK_BYTES));
        size = Math.min(size, ringBytes);
        if (window == null || window.byteSize() < size) {
            if (arena != null) {
                arena.close();
            }
            arena = Arena.ofConfined();
            window = arena.allocate(size, BLOCK_BYTES);
        }
        readRing(io, ringBytes, start, window.asSlice(0, size));
        windowStart = start;
        windowEnd = start + size;
        return position - start;
    }

    /** Reads {@code target.byteSize()} bytes of the ring from logical {@code position} (block-aligned), wrapping. */
    static void readRing(BlockIo io, long ringBytes, long position, MemorySegment target) {
        long physical = Math.floorMod(position, ringBytes);
        long size = target.byteSize();
        long first = Math.min(size, ringBytes - physical);
        io.read(RING_OFFSET + physical, target.asSlice(0, first));
        if (first < size) {
            io.read(RING_OFFSET, target.asSlice(first, size - first));
        }
    }

    /** Writes {@code source} into the ring at logical {@code position} (block-aligned), wrapping at the ring end. */
    static void writeRing(BlockIo io, long ringBytes, long position, MemorySegment source) {
        long physical = Math.floorMod(position, ringBytes);
        long size = source.byteSize();
        long first = Math.min(size, ringBytes - physical);
        io.write(RING_OFFSET + physical, source.asSlice(0, first));
        if (first < size) {
            io.write(RING_OFFSET, source.asSlice(first, size - first));
        }
    }

    @Override
    public void close() {
        if (arena != null) {
            arena.close();
            arena = null;
            window = null;
        }
    }
}
