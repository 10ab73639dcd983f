package io.s3stream.wal.blockdev.internal;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.zip.CRC32C;

/**
 * The on-device layout of the blockdev WAL, version 1: offsets, sizes, and in-place encoding and decoding. All
 * integers are little-endian.
 *
 * <pre>
 * device / file (capacity bytes, a multiple of 4096)
 * +-------------------+-------------------+---------------------------------------------------------------+
 * | header slot 0     | header slot 1     | ring: ringBytes = capacity - 8192                             |
 * | 4 KiB @ 0         | 4 KiB @ 4096      | logical position p lives at 8192 + (p mod ringBytes)          |
 * +-------------------+-------------------+---------------------------------------------------------------+
 *
 * header slot (the valid slot with the higher sequence wins; the other keeps the previous header)
 *  0               8       12      16              24              32
 *  +---------------+-------+-------+---------------+---------------+
 *  | magic (8)     |version|blkSize| capacity (8)  | sequence (8)  |
 *  | "S3SWALHD"    | (1)   | (4096)|               |               |
 *  +---------------+-------+-------+---------------+---------------+
 *  32              40              48              56              64      68      72      76 .. 4096
 *  +---------------+---------------+---------------+---------------+-------+-------+-------+
 *  | trimPosition  | scanStart     | nodeId        | nodeEpoch     | walId |session|crc32c | zeros
 *  +---------------+---------------+---------------+---------------+-------+-------+-------+
 *  crc32c covers bytes [0,72). scanStart is a record (or padding) start (32-aligned) at or below trimPosition where recovery
 *  begins; records below trimPosition are skipped, not delivered.
 *
 * record (positions and footprints are multiples of 32 bytes)
 *  0       4       8               16      20      24      28      32
 *  +-------+-------+---------------+-------+-------+-------+-------+----------------------+----------+
 *  | magic |length | position (8)  | walId |session|bodyCrc|hdrCrc | payload (length)     | zero pad |
 *  +-------+-------+---------------+-------+-------+-------+-------+----------------------+----------+
 *  magic "WREC" for a record, "WPAD" for padding (then length counts the whole padding, header included,
 *  and bodyCrc is 0); hdrCrc is the CRC32C of bytes [0,28); bodyCrc the CRC32C of the payload.
 * </pre>
 *
 * <p>Why each field: {@code position} equal to where the record is found rejects stale records of earlier laps of
 * the ring; {@code walId} (random at format time) rejects records of an earlier WAL on a reused device;
 * {@code session} (incremented and made durable by every recovery, never decreasing along a valid scan) rejects
 * orphans of an earlier process that were written after a write which never became durable.
 */
public final class WalDescriptor {
    public static final int VERSION = 1;
    public static final int BLOCK_BYTES = 4096;
    public static final int HEADER_SLOTS = 2;
    public static final long RING_OFFSET = (long) HEADER_SLOTS * BLOCK_BYTES;
    /** Smallest capacity accepted: the two header slots plus a ring of 256 blocks. */
    public static final long MIN_CAPACITY_BYTES = RING_OFFSET + 256L * BLOCK_BYTES;

    public static final long HEADER_MAGIC = 0x44484c4157533353L; // "S3SWALHD" little-endian
    public static final int H_MAGIC = 0;
    public static final int H_VERSION = 8;
    public static final int H_BLOCK_SIZE = 12;
    public static final int H_CAPACITY = 16;
    public static final int H_SEQUENCE = 24;
    public static final int H_TRIM_POSITION = 32;
    public static final int H_SCAN_START = 40;
    public static final int H_NODE_ID = 48;
    public static final int H_NODE_EPOCH = 56;
    public static final int H_WAL_ID = 64;
    public static final int H_SESSION = 68;
    public static final int H_CRC = 72;
    public static final int HEADER_BYTES = 76;

    public static final int RECORD_MAGIC = 0x43455257; // "WREC"
    public static final int PAD_MAGIC = 0x44415057;    // "WPAD"
    public static final int R_MAGIC = 0;
    public static final int R_LENGTH = 4;
    public static final int R_POSITION = 8;
    public static final int R_WAL_ID = 16;
    public static final int R_SESSION = 20;
    public static final int R_BODY_CRC = 24;
    public static final int R_HEADER_CRC = 28;
    public static final int RECORD_HEADER_BYTES = 32;
    /** Records start at multiples of this, so the space left in a block is 0 or room for a padding header. */
    public static final int RECORD_ALIGN = 32;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);

    private WalDescriptor() {
    }

    /** The largest record a WAL of this capacity accepts (half the ring, at most 32 MiB, less two record headers). */
    public static int maxRecordBytes(long capacityBytes) {
        return (int) Math.min(32 * 1024 * 1024, (capacityBytes - RING_OFFSET) / 2) - 2 * RECORD_HEADER_BYTES;
    }

    /** Bytes a record with {@code payloadBytes} occupies in the ring. */
    public static long footprint(int payloadBytes) {
        return alignUp(RECORD_HEADER_BYTES + (long) payloadBytes, RECORD_ALIGN);
    }

    public static long alignUp(long value, long alignment) {
        return (value + alignment - 1) / alignment * alignment;
    }

    public static long alignDown(long value, long alignment) {
        return value / alignment * alignment;
    }

    /** A decoded header slot. */
    public record Header(long capacityBytes, long sequence, long trimPosition, long scanStart, long nodeId,
                         long nodeEpoch, int walId, int session) {
        /** A header with these fields changed. */
        public Header next(long trimPosition, long scanStart, long nodeId, long nodeEpoch, int session) {
            return new Header(capacityBytes, sequence + 1, trimPosition, scanStart, nodeId, nodeEpoch, walId, session);
        }
    }

    /** Why a header slot could not be used, or the header itself. */
    public record HeaderRead(Header header, String problem, int version, boolean hasMagic) {
        public boolean valid() {
            return header != null;
        }
    }

    /** Encodes {@code h} into the first {@link #BLOCK_BYTES} of {@code block} (the rest is zeroed). */
    public static void encodeHeader(MemorySegment block, Header h) {
        block.asSlice(0, BLOCK_BYTES).fill((byte) 0);
        block.set(LONG, H_MAGIC, HEADER_MAGIC);
        block.set(INT, H_VERSION, VERSION);
        block.set(INT, H_BLOCK_SIZE, BLOCK_BYTES);
        block.set(LONG, H_CAPACITY, h.capacityBytes());
        block.set(LONG, H_SEQUENCE, h.sequence());
        block.set(LONG, H_TRIM_POSITION, h.trimPosition());
        block.set(LONG, H_SCAN_START, h.scanStart());
        block.set(LONG, H_NODE_ID, h.nodeId());
        block.set(LONG, H_NODE_EPOCH, h.nodeEpoch());
        block.set(INT, H_WAL_ID, h.walId());
        block.set(INT, H_SESSION, h.session());
        block.set(INT, H_CRC, crc(block, 0, H_CRC));
    }

    /** Decodes one header slot; never throws for bad content. */
    public static HeaderRead decodeHeader(MemorySegment block) {
        boolean magic = block.get(LONG, H_MAGIC) == HEADER_MAGIC;
        if (!magic) {
            return new HeaderRead(null, "no header magic", 0, false);
        }
        int storedCrc = block.get(INT, H_CRC);
        if (storedCrc != crc(block, 0, H_CRC)) {
            return new HeaderRead(null, "header checksum mismatch (torn or corrupt header slot)", 0, true);
        }
        int version = block.get(INT, H_VERSION);
        if (version != VERSION) {
            return new HeaderRead(null, "incompatible layout version " + version + " (this build reads version "
                    + VERSION + ")", version, true);
        }
        int blockSize = block.get(INT, H_BLOCK_SIZE);
        if (blockSize != BLOCK_BYTES) {
            return new HeaderRead(null, "unsupported block size " + blockSize, version, true);
        }
        return new HeaderRead(new Header(block.get(LONG, H_CAPACITY), block.get(LONG, H_SEQUENCE),
                block.get(LONG, H_TRIM_POSITION), block.get(LONG, H_SCAN_START), block.get(LONG, H_NODE_ID),
                block.get(LONG, H_NODE_EPOCH), block.get(INT, H_WAL_ID), block.get(INT, H_SESSION)), null, version,
                true);
    }

    /** Writes a record header at {@code offset} of {@code buf}; the payload must already be in place after it. */
    public static void encodeRecordHeader(MemorySegment buf, long offset, int magic, int length, long position,
                                          int walId, int session, int bodyCrc) {
        buf.set(INT, offset + R_MAGIC, magic);
        buf.set(INT, offset + R_LENGTH, length);
        buf.set(LONG, offset + R_POSITION, position);
        buf.set(INT, offset + R_WAL_ID, walId);
        buf.set(INT, offset + R_SESSION, session);
        buf.set(INT, offset + R_BODY_CRC, bodyCrc);
        buf.set(INT, offset + R_HEADER_CRC, crc(buf, offset, R_HEADER_CRC));
    }

    /**
     * Completes a record whose {@code length} payload bytes are already in place after its header at {@code offset}:
     * zeroes the padding up to its {@link #footprint} and writes the header with the payload's CRC.
     */
    public static void encodeRecordAround(MemorySegment buf, long offset, int length, long position, int walId,
                                          int session) {
        long tail = footprint(length) - RECORD_HEADER_BYTES - length;
        if (tail > 0) {
            buf.asSlice(offset + RECORD_HEADER_BYTES + length, tail).fill((byte) 0);
        }
        encodeRecordHeader(buf, offset, RECORD_MAGIC, length, position, walId, session,
                crc(buf, offset + RECORD_HEADER_BYTES, length));
    }

    /** Writes a padding record covering {@code length} bytes (header included) at {@code offset}. */
    public static void encodePad(MemorySegment buf, long offset, int length, long position, int walId, int session) {
        buf.asSlice(offset, length).fill((byte) 0);
        encodeRecordHeader(buf, offset, PAD_MAGIC, length, position, walId, session, 0);
    }

    public static int recordMagic(MemorySegment buf, long offset) {
        return buf.get(INT, offset + R_MAGIC);
    }

    public static int recordLength(MemorySegment buf, long offset) {
        return buf.get(INT, offset + R_LENGTH);
    }

    public static long recordPosition(MemorySegment buf, long offset) {
        return buf.get(LONG, offset + R_POSITION);
    }

    public static int recordWalId(MemorySegment buf, long offset) {
        return buf.get(INT, offset + R_WAL_ID);
    }

    public static int recordSession(MemorySegment buf, long offset) {
        return buf.get(INT, offset + R_SESSION);
    }

    public static int recordBodyCrc(MemorySegment buf, long offset) {
        return buf.get(INT, offset + R_BODY_CRC);
    }

    public static boolean recordHeaderCrcMatches(MemorySegment buf, long offset) {
        return buf.get(INT, offset + R_HEADER_CRC) == crc(buf, offset, R_HEADER_CRC);
    }

    /** CRC32C of {@code length} bytes at {@code offset}. */
    public static int crc(MemorySegment buf, long offset, long length) {
        CRC32C crc = new CRC32C();
        crc.update(buf.asSlice(offset, length).asByteBuffer());
        return (int) crc.getValue();
    }
}
