package io.s3stream.internal.format;

import io.s3stream.CorruptDataException;

/**
 * Describes the byte layout of object format version 1: offsets and sizes of every field of data blocks, index
 * entries and the footer, plus the format's magic and version.
 *
 * <p>An object is {@code [data block]* [index] [footer]}. All integers are big-endian (Netty's default byte
 * order) and signed two's complement; all checksums are CRC32C ({@link java.util.zip.CRC32C}) stored as the low
 * 32 bits of {@code CRC32C.getValue()}. Positions are byte positions from the start of the object.
 *
 * <h2>Data block</h2>
 * A run of contiguous batches of one stream. Its size is {@code 12 + Σ(16 + payloadLength) + 4} bytes.
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |                                                               |  0  block header
 *  +                       streamId (int64)                        +
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                    batchCount (int32, >= 1)                   |  8
 *  +===============================================================+
 *  |                                                               | 12  batch 0 header
 *  +                      baseOffset (int64)                       +
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                   recordCount (int32, >= 1)                   | 20
 *  +---------------------------------------------------------------+
 *  |                  payloadLength (int32, >= 0)                  | 24
 *  +---------------------------------------------------------------+
 *  |                  payload (payloadLength bytes)               ...  28  opaque batch bytes
 *  +===============================================================+
 *  |          batch 1 .. batchCount-1, same layout as batch 0     ...
 *  +===============================================================+
 *  |          CRC32C of block bytes [0, blockSize - 4)             |  blockSize - 4
 *  +---------------------------------------------------------------+
 * </pre>
 * Batch {@code i + 1} starts right after the payload of batch {@code i}, and its {@code baseOffset} equals
 * {@code baseOffset + recordCount} of batch {@code i}. The CRC is the last field, so nothing follows it.
 *
 * <h2>Index</h2>
 * One {@value #INDEX_ENTRY_SIZE}-byte entry per data block, nothing else; the entry count is
 * {@code indexLength / 40}. Entries are in block order, which is (streamId, startOffset) order.
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |                       streamId (int64)                        |  0
 *  +                                                               +
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                      startOffset (int64)                      |  8
 *  +                                                               +
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                endOffset (int64, exclusive)                   | 16
 *  +                                                               +
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                position of the block (int64)                  | 24
 *  +                                                               +
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |       recordCount (int32) = endOffset - startOffset           | 32
 *  +---------------------------------------------------------------+
 *  |      sizeBytes (int32), whole block including its CRC         | 36
 *  +---------------------------------------------------------------+
 * </pre>
 *
 * <h2>Footer</h2>
 * The last {@value #FOOTER_SIZE} bytes of the object. The last 12 bytes ({@code version}, {@code magic}) keep
 * their place in every future version, so a reader can tell "not an object", "newer format" and "corrupt" apart
 * before it interprets the rest. A reader checks, in this order: magic, version, footer CRC, flags, then that the
 * index fills exactly the space between the data region and the footer.
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |                   indexPosition (int64)                       |  0
 *  +                                                               +
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                    indexLength (int32)                        |  8
 *  +---------------------------------------------------------------+
 *  |                CRC32C of the index bytes                      | 12
 *  +---------------------------------------------------------------+
 *  |                 flags (int32), 0 in version 1                 | 16
 *  +---------------------------------------------------------------+
 *  |   CRC32C of footer bytes [0, 20) followed by [24, 36)         | 20
 *  +---------------------------------------------------------------+
 *  |                     version (int32) = 1                       | 24
 *  +---------------------------------------------------------------+
 *  |                 magic (int64) = "S3STREAM"                    | 28
 *  +                                                               +
 *  |                                                               |
 *  +---------------------------------------------------------------+
 * </pre>
 *
 * <h2>Invariants a version-1 reader checks</h2>
 * <ul>
 *   <li>Blocks are packed: the first starts at 0, each next one where the previous ends, and the last ends at
 *       {@code indexPosition}; the index ends where the footer starts ({@code indexPosition + indexLength ==
 *       objectSize - 36}).</li>
 *   <li>Entries are sorted by (streamId, startOffset); the blocks of one stream are contiguous in offsets
 *       (a block starts where the previous block of the same stream ends), since a writer only adds contiguous
 *       batches of a stream.</li>
 *   <li>Every byte of the object is covered by exactly one check: a block's CRC, the index CRC (in the footer),
 *       or the footer's own CRC, magic and version.</li>
 * </ul>
 *
 * <p>Design note: the block CRC sits at the end of the block rather than in its index entry, so a block read on
 * its own (block cache, ranged GET) is verifiable without its entry, and the index CRC in the footer covers the
 * entries. The {@code recordCount} fields are redundant with the offsets on purpose: they are cheap cross-checks.
 */
public final class ObjectFormat {

    /** Format version written by this build and the only one it reads. */
    public static final int VERSION = 1;
    /** The ASCII bytes {@code "S3STREAM"} read as a big-endian int64. */
    public static final long MAGIC = 0x5333_5354_5245_414DL;

    // ---- data block ----
    public static final int BLOCK_STREAM_ID_OFFSET = 0;
    public static final int BLOCK_BATCH_COUNT_OFFSET = 8;
    public static final int BLOCK_HEADER_SIZE = 12;

    public static final int BATCH_BASE_OFFSET_OFFSET = 0;
    public static final int BATCH_RECORD_COUNT_OFFSET = 8;
    public static final int BATCH_PAYLOAD_LENGTH_OFFSET = 12;
    public static final int BATCH_HEADER_SIZE = 16;

    /** The CRC32C that closes every block. */
    public static final int BLOCK_CRC_SIZE = 4;
    /** Smallest possible block: a header, one batch with an empty payload, the CRC. */
    public static final int MIN_BLOCK_SIZE = BLOCK_HEADER_SIZE + BATCH_HEADER_SIZE + BLOCK_CRC_SIZE;

    // ---- index entry ----
    public static final int ENTRY_STREAM_ID_OFFSET = 0;
    public static final int ENTRY_START_OFFSET_OFFSET = 8;
    public static final int ENTRY_END_OFFSET_OFFSET = 16;
    public static final int ENTRY_POSITION_OFFSET = 24;
    public static final int ENTRY_RECORD_COUNT_OFFSET = 32;
    public static final int ENTRY_SIZE_BYTES_OFFSET = 36;
    public static final int INDEX_ENTRY_SIZE = 40;

    // ---- footer ----
    public static final int FOOTER_INDEX_POSITION_OFFSET = 0;
    public static final int FOOTER_INDEX_LENGTH_OFFSET = 8;
    public static final int FOOTER_INDEX_CRC_OFFSET = 12;
    public static final int FOOTER_FLAGS_OFFSET = 16;
    public static final int FOOTER_CRC_OFFSET = 20;
    public static final int FOOTER_VERSION_OFFSET = 24;
    public static final int FOOTER_MAGIC_OFFSET = 28;
    public static final int FOOTER_SIZE = 36;

    /**
     * Largest object {@link ObjectBuilder} produces, since it returns one {@code ByteBuf}. The format itself keeps
     * positions in int64 so a later writer may stream larger objects; block sizes stay int32.
     */
    public static final long MAX_OBJECT_SIZE = Integer.MAX_VALUE;

    private ObjectFormat() {
    }

    static CorruptDataException corrupt(String objectKey, long position, String detail) {
        return new CorruptDataException("corrupt object '" + objectKey + "' at byte " + position + ": " + detail);
    }
}
