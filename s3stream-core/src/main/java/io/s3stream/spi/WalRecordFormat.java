package io.s3stream.spi;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.s3stream.CorruptDataException;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * Layout of the engine's record inside a write-ahead log: one record batch of one stream.
 *
 * <p>A WAL backend stores records as opaque bytes; this layout is part of the SPI for backends that need to look inside:
 * a WAL that keeps its records as objects in object format v1 (wal-object) reads the header to group records by stream,
 * and rebuilds records with {@link #encode} when it recovers them.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |            magic (0x5357)     |    version    |   reserved    |  0
 * +---------------------------------------------------------------+
 * |                        record count                           |  4
 * +---------------------------------------------------------------+
 * |                         stream id                             |  8
 * |                                                               |
 * +---------------------------------------------------------------+
 * |                       stream epoch                            | 16
 * |                                                               |
 * +---------------------------------------------------------------+
 * |                        base offset                            | 24
 * |                                                               |
 * +---------------------------------------------------------------+
 * |                      payload length                           | 32
 * +---------------------------------------------------------------+
 * |        CRC32C of bytes 0..35 and of the payload               | 36
 * +---------------------------------------------------------------+
 * |                     payload ...                               | 40
 * +---------------------------------------------------------------+
 * </pre>
 * All integers are big-endian. The WAL backend frames and checksums records on its own; this checksum makes the
 * engine independent of that, so a backend bug can never turn into silently wrong stream data.
 */
public final class WalRecordFormat {
    public static final short MAGIC = 0x5357; // "SW"
    public static final byte VERSION = 1;
    public static final int MAGIC_OFFSET = 0;
    public static final int VERSION_OFFSET = 2;
    public static final int COUNT_OFFSET = 4;
    public static final int STREAM_ID_OFFSET = 8;
    public static final int EPOCH_OFFSET = 16;
    public static final int BASE_OFFSET_OFFSET = 24;
    public static final int PAYLOAD_LENGTH_OFFSET = 32;
    public static final int CRC_OFFSET = 36;
    public static final int HEADER_SIZE = 40;

    private WalRecordFormat() {
    }

    /** Encodes a record into a new direct buffer: header followed by a copy of {@code payload}'s remaining bytes. */
    public static ByteBuf encode(ByteBufAllocator alloc, long streamId, long epoch, long baseOffset, int count,
                                 ByteBuffer payload) {
        int length = payload.remaining();
        ByteBuf buf = alloc.directBuffer(HEADER_SIZE + length);
        buf.writeShort(MAGIC);
        buf.writeByte(VERSION);
        buf.writeByte(0);
        buf.writeInt(count);
        buf.writeLong(streamId);
        buf.writeLong(epoch);
        buf.writeLong(baseOffset);
        buf.writeInt(length);
        buf.writeInt(0); // CRC placeholder
        if (length > 0) {
            // An absolute bulk copy: no duplicate of the caller's buffer, and its position stays where it was. The
            // internal view spans the whole pooled chunk, positioned at our region: index from its position, not 0.
            ByteBuffer target = buf.internalNioBuffer(HEADER_SIZE, length);
            target.put(target.position(), payload, payload.position(), length);
        }
        buf.writerIndex(HEADER_SIZE + length);
        buf.setInt(CRC_OFFSET, crc(buf, 0, true));
        return buf;
    }

    /**
     * Encodes a record at absolute index {@code at} of {@code target}: header followed by a copy of {@code payload}'s
     * remaining bytes ({@link #HEADER_SIZE} + that many bytes in all). Nothing is allocated. {@code target} must be
     * big-endian and belong to the caller: its position and limit are moved for the checksum and then restored;
     * {@code payload}'s are left alone.
     *
     * @return the record's size
     */
    public static int encodeInto(ByteBuffer target, int at, long streamId, long epoch, long baseOffset, int count,
                                 ByteBuffer payload) {
        int length = payload.remaining();
        target.putShort(at + MAGIC_OFFSET, MAGIC);
        target.put(at + VERSION_OFFSET, VERSION);
        target.put(at + VERSION_OFFSET + 1, (byte) 0);
        target.putInt(at + COUNT_OFFSET, count);
        target.putLong(at + STREAM_ID_OFFSET, streamId);
        target.putLong(at + EPOCH_OFFSET, epoch);
        target.putLong(at + BASE_OFFSET_OFFSET, baseOffset);
        target.putInt(at + PAYLOAD_LENGTH_OFFSET, length);
        target.put(at + HEADER_SIZE, payload, payload.position(), length);
        int position = target.position();
        int limit = target.limit();
        CRC32C crc = new CRC32C();
        target.limit(at + CRC_OFFSET).position(at);
        crc.update(target);
        target.limit(at + HEADER_SIZE + length).position(at + HEADER_SIZE);
        crc.update(target);
        target.limit(limit).position(position);
        target.putInt(at + CRC_OFFSET, (int) crc.getValue());
        return HEADER_SIZE + length;
    }

    /**
     * CRC32C of the header (without the CRC field) and the payload. {@code owned}: the caller is the buffer's only user,
     * so its cached internal NIO view may be used (no allocation); otherwise fresh views are made.
     */
    private static int crc(ByteBuf buf, int start, boolean owned) {
        CRC32C crc = new CRC32C();
        int length = buf.getInt(start + PAYLOAD_LENGTH_OFFSET);
        crc.update(owned ? buf.internalNioBuffer(start, CRC_OFFSET) : buf.nioBuffer(start, CRC_OFFSET));
        if (length > 0) {
            crc.update(owned ? buf.internalNioBuffer(start + HEADER_SIZE, length)
                    : buf.nioBuffer(start + HEADER_SIZE, length));
        }
        return (int) crc.getValue();
    }

    /**
     * Checks and decodes a record; the returned payload is a slice of {@code buf} (not retained).
     *
     * @throws CorruptDataException when the layout or the checksum does not hold; {@code where} names the position
     */
    public static Decoded decode(ByteBuf buf, String where) {
        int start = buf.readerIndex();
        int size = buf.readableBytes();
        if (size < HEADER_SIZE) {
            throw new CorruptDataException(where + ": WAL record of " + size + " bytes is shorter than its "
                    + HEADER_SIZE + "-byte header");
        }
        short magic = buf.getShort(start + MAGIC_OFFSET);
        byte version = buf.getByte(start + VERSION_OFFSET);
        if (magic != MAGIC || version != VERSION) {
            throw new CorruptDataException(String.format("%s: not an s3stream WAL record (magic 0x%04x, version %d;"
                    + " expected 0x%04x, %d)", where, magic, version, MAGIC, VERSION));
        }
        int length = buf.getInt(start + PAYLOAD_LENGTH_OFFSET);
        if (length < 0 || length != size - HEADER_SIZE) {
            throw new CorruptDataException(where + ": WAL record payload length " + length + " does not match its "
                    + (size - HEADER_SIZE) + " bytes");
        }
        int expected = buf.getInt(start + CRC_OFFSET);
        int actual = crc(buf, start, false);
        if (expected != actual) {
            throw new CorruptDataException(String.format("%s: WAL record CRC32C mismatch (stored 0x%08x, computed 0x%08x)",
                    where, expected, actual));
        }
        int count = buf.getInt(start + COUNT_OFFSET);
        if (count < 1) {
            throw new CorruptDataException(where + ": WAL record count " + count + " is not positive");
        }
        return new Decoded(buf.getLong(start + STREAM_ID_OFFSET), buf.getLong(start + EPOCH_OFFSET),
                buf.getLong(start + BASE_OFFSET_OFFSET), count, buf.slice(start + HEADER_SIZE, length));
    }

    /** A decoded record; {@code payload} is a slice of the decoded buffer. */
    public record Decoded(long streamId, long epoch, long baseOffset, int count, ByteBuf payload) {
    }
}
