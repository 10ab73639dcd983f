package io.s3stream.wal.object.internal;

import io.netty.buffer.ByteBuf;
import io.s3stream.CorruptDataException;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Layout of a WAL object: an object in object format v1 (so that the engine can commit it as a stream set object, see
 * {@code io.s3stream.internal.format.ObjectFormat}) whose first data block, of the reserved stream id
 * {@link #WAL_STREAM_ID}, holds the WAL's own metadata as one batch. Readers of stream data never ask for that
 * stream; the manifest never references it. All integers big-endian.
 *
 * <pre>
 * object:  [WAL block: stream -1, one batch, base offset = seq] [data blocks, sorted by stream] [index] [footer]
 *
 * WAL block payload (the batch's payload)
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +---------------------------------------------------------------+
 * |                  magic "S3WALOBJ" (int64)                     |  0
 * +-------------------------------+---------------+---------------+
 * |         version (1)           |  kind (1, 2)  | maxInFlight   |  8
 * +-------------------------------+---------------+---------------+
 * |                          node id (int64)                      | 12
 * +---------------------------------------------------------------+
 * |                        node epoch (int64)                     | 20
 * +---------------------------------------------------------------+
 * |               writer token (int64, random per session)        | 28
 * +---------------------------------------------------------------+
 * |                        sequence number (int64)                | 36
 * +---------------------------------------------------------------+
 * |                     record count (int32)                      | 44
 * +===============================================================+
 * | per record, in append order: stream id (8), stream epoch (8), | 48
 * | base offset (8), count (4) = 28 bytes                        ...
 * +---------------------------------------------------------------+
 * </pre>
 * Kind 1 is a data object; kind 2 a seal, written by a node that took the log over (or by its owner restarting): it
 * holds no record, and the objects after it whose node epoch is older than the seal's are orphans of a fenced writer.
 * {@code maxInFlight} is the writer's window of objects in flight (at most {@link #MAX_IN_FLIGHT}); a seal reserves the
 * next {@link #SEAL_SKIP} sequence numbers for such orphans, so the sealer's own objects never collide with them.
 * The block CRC of format v1 covers these bytes.
 *
 * <h2>Keys and positions</h2>
 * Object {@code seq} of node {@code n} is {@code wal/<n>/<seq as 16 hex digits>}, so a listing returns objects in
 * sequence order. The WAL position of record {@code i} of object {@code seq} is {@code seq << 24 | i}; positions whose
 * low 24 bits are zero are segment boundaries, and the last record of object {@code seq} ends at {@code (seq + 1) << 24}.
 */
final class WalObjectDescriptor {
    static final long WAL_STREAM_ID = -1;
    static final long MAGIC = 0x5333_5741_4C4F_424AL; // "S3WALOBJ"
    static final short VERSION = 1;
    static final byte KIND_DATA = 1;
    static final byte KIND_SEAL = 2;
    /** Largest window of objects in flight a writer may use; a seal skips this many sequence numbers. */
    static final int MAX_IN_FLIGHT = 64;
    static final int SEAL_SKIP = MAX_IN_FLIGHT;

    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 8;
    static final int KIND_OFFSET = 10;
    static final int MAX_IN_FLIGHT_OFFSET = 11;
    static final int NODE_ID_OFFSET = 12;
    static final int NODE_EPOCH_OFFSET = 20;
    static final int TOKEN_OFFSET = 28;
    static final int SEQ_OFFSET = 36;
    static final int RECORD_COUNT_OFFSET = 44;
    static final int HEADER_SIZE = 48;
    static final int RECORD_ENTRY_SIZE = 28;

    static final int POSITION_BITS = 24;
    static final long MAX_RECORDS_PER_OBJECT = (1L << POSITION_BITS) - 1;
    static final String PREFIX = "wal/";

    private WalObjectDescriptor() {
    }

    /** The prefix under which node {@code nodeId} keeps its log. */
    static String nodePrefix(long nodeId) {
        return PREFIX + nodeId + "/";
    }

    static String key(long nodeId, long seq) {
        return nodePrefix(nodeId) + String.format(Locale.ROOT, "%016x", seq);
    }

    /** The sequence number in a key of {@code nodePrefix}, or -1 when the key is not a WAL object's. */
    static long seqOf(String nodePrefix, String key) {
        if (!key.startsWith(nodePrefix) || key.length() != nodePrefix.length() + 16) {
            return -1;
        }
        try {
            return Long.parseUnsignedLong(key.substring(nodePrefix.length()), 16);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static long position(long seq, int index) {
        return (seq << POSITION_BITS) | index;
    }

    static long seqOfPosition(long position) {
        return position >>> POSITION_BITS;
    }

    static boolean isBoundary(long position) {
        return (position & MAX_RECORDS_PER_OBJECT) == 0;
    }

    /** One record as the WAL block lists it. */
    record RecordEntry(long streamId, long epoch, long baseOffset, int count) {
        long endOffset() {
            return baseOffset + count;
        }
    }

    /** The decoded WAL block. */
    record Header(byte kind, int maxInFlight, long nodeId, long nodeEpoch, long token, long seq,
                  List<RecordEntry> records) {
        boolean isSeal() {
            return kind == KIND_SEAL;
        }
    }

    static int headerSize(int records) {
        return HEADER_SIZE + records * RECORD_ENTRY_SIZE;
    }

    static void write(ByteBuf out, Header h) {
        out.writeLong(MAGIC).writeShort(VERSION).writeByte(h.kind()).writeByte(h.maxInFlight())
                .writeLong(h.nodeId()).writeLong(h.nodeEpoch()).writeLong(h.token()).writeLong(h.seq())
                .writeInt(h.records().size());
        for (RecordEntry r : h.records()) {
            out.writeLong(r.streamId()).writeLong(r.epoch()).writeLong(r.baseOffset()).writeInt(r.count());
        }
    }

    /**
     * Decodes the WAL block's payload of object {@code key}.
     *
     * @throws CorruptDataException when it is not a WAL block of a version this build reads
     */
    static Header read(ByteBuf in, String key) {
        int start = in.readerIndex();
        int size = in.readableBytes();
        if (size < HEADER_SIZE || in.getLong(start + MAGIC_OFFSET) != MAGIC) {
            throw new CorruptDataException("WAL object " + key + " has no WAL header (" + size + " bytes, magic 0x"
                    + (size >= 8 ? Long.toHexString(in.getLong(start)) : "?") + ")");
        }
        short version = in.getShort(start + VERSION_OFFSET);
        if (version != VERSION) {
            throw new CorruptDataException("WAL object " + key + " has WAL header version " + version
                    + "; this build reads version " + VERSION);
        }
        byte kind = in.getByte(start + KIND_OFFSET);
        int count = in.getInt(start + RECORD_COUNT_OFFSET);
        if ((kind != KIND_DATA && kind != KIND_SEAL) || count < 0 || count > MAX_RECORDS_PER_OBJECT
                || size != headerSize(count)) {
            throw new CorruptDataException("WAL object " + key + " has a malformed WAL header (kind " + kind
                    + ", " + count + " records, " + size + " bytes)");
        }
        List<RecordEntry> records = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int p = start + HEADER_SIZE + i * RECORD_ENTRY_SIZE;
            records.add(new RecordEntry(in.getLong(p), in.getLong(p + 8), in.getLong(p + 16), in.getInt(p + 24)));
        }
        return new Header(kind, Byte.toUnsignedInt(in.getByte(start + MAX_IN_FLIGHT_OFFSET)),
                in.getLong(start + NODE_ID_OFFSET), in.getLong(start + NODE_EPOCH_OFFSET),
                in.getLong(start + TOKEN_OFFSET), in.getLong(start + SEQ_OFFSET), records);
    }
}
