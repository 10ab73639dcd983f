package io.s3stream.internal.format;

import io.netty.buffer.ByteBuf;

import java.util.Objects;
import java.util.zip.CRC32C;

import static io.s3stream.internal.format.ObjectFormat.FOOTER_CRC_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.FOOTER_FLAGS_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.FOOTER_INDEX_CRC_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.FOOTER_INDEX_LENGTH_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.FOOTER_INDEX_POSITION_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.FOOTER_MAGIC_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.FOOTER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.FOOTER_VERSION_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.INDEX_ENTRY_SIZE;
import static io.s3stream.internal.format.ObjectFormat.MAGIC;
import static io.s3stream.internal.format.ObjectFormat.VERSION;
import static io.s3stream.internal.format.ObjectFormat.corrupt;

/**
 * The fixed-size tail of an object that locates and protects its index; encodes and validates the footer bytes
 * laid out in {@link ObjectFormat}.
 *
 * @param indexPosition   byte position of the index, which is also the size of the data region
 * @param indexLength     size of the index in bytes, a multiple of {@link ObjectFormat#INDEX_ENTRY_SIZE}
 * @param indexCrc        CRC32C of the index bytes
 * @param version         format version, {@link ObjectFormat#VERSION}
 * @param objectSizeBytes size of the whole object the footer was decoded from (not stored: it is
 *                        {@code indexPosition + indexLength + FOOTER_SIZE})
 */
public record ObjectFooter(long indexPosition, int indexLength, int indexCrc, int version, long objectSizeBytes) {

    /** Number of index entries, that is of data blocks. */
    public int entryCount() {
        return indexLength / INDEX_ENTRY_SIZE;
    }

    /** Position of the footer in the object. */
    public long footerPosition() {
        return objectSizeBytes - FOOTER_SIZE;
    }

    /**
     * Validates the last {@link ObjectFormat#FOOTER_SIZE} bytes of an object.
     *
     * @param footerBytes     exactly the footer's bytes, between reader and writer index (indexes untouched)
     * @param objectSizeBytes size of the whole object
     * @param objectKey       named in error messages
     * @throws io.s3stream.CorruptDataException if the magic, version, flags or CRC are wrong, or the index does
     *                                          not fill the space between the data region and the footer
     */
    public static ObjectFooter decode(ByteBuf footerBytes, long objectSizeBytes, String objectKey) {
        Objects.requireNonNull(footerBytes, "footerBytes");
        if (objectSizeBytes < FOOTER_SIZE) {
            throw corrupt(objectKey, 0, "object is " + objectSizeBytes + " bytes, shorter than the "
                    + FOOTER_SIZE + "-byte footer (truncated or not an s3stream object)");
        }
        long base = objectSizeBytes - FOOTER_SIZE;
        if (footerBytes.readableBytes() != FOOTER_SIZE) {
            throw corrupt(objectKey, base, "expected " + FOOTER_SIZE + " footer bytes, got "
                    + footerBytes.readableBytes());
        }
        int r = footerBytes.readerIndex();
        long magic = footerBytes.getLong(r + FOOTER_MAGIC_OFFSET);
        if (magic != MAGIC) {
            throw corrupt(objectKey, base + FOOTER_MAGIC_OFFSET, String.format(
                    "footer magic expected 0x%016x (\"S3STREAM\"), found 0x%016x (truncated, or not an s3stream "
                            + "object)", MAGIC, magic));
        }
        int version = footerBytes.getInt(r + FOOTER_VERSION_OFFSET);
        if (version != VERSION) {
            throw corrupt(objectKey, base + FOOTER_VERSION_OFFSET, "unsupported object format version " + version
                    + "; this reader understands only version " + VERSION
                    + " (object written by a newer release, or corrupt)");
        }
        int storedFooterCrc = footerBytes.getInt(r + FOOTER_CRC_OFFSET);
        int actualFooterCrc = footerCrc(footerBytes, r);
        if (storedFooterCrc != actualFooterCrc) {
            throw corrupt(objectKey, base + FOOTER_CRC_OFFSET, String.format(
                    "footer CRC32C expected 0x%08x (stored), computed 0x%08x", storedFooterCrc, actualFooterCrc));
        }
        int flags = footerBytes.getInt(r + FOOTER_FLAGS_OFFSET);
        if (flags != 0) {
            throw corrupt(objectKey, base + FOOTER_FLAGS_OFFSET, "footer flags expected 0 in version 1, found "
                    + flags);
        }
        long indexPosition = footerBytes.getLong(r + FOOTER_INDEX_POSITION_OFFSET);
        int indexLength = footerBytes.getInt(r + FOOTER_INDEX_LENGTH_OFFSET);
        if (indexLength < 0 || indexLength % INDEX_ENTRY_SIZE != 0) {
            throw corrupt(objectKey, base + FOOTER_INDEX_LENGTH_OFFSET, "index length " + indexLength
                    + " is not a non-negative multiple of the " + INDEX_ENTRY_SIZE + "-byte entry size");
        }
        if (indexPosition < 0 || indexPosition != base - indexLength) {
            throw corrupt(objectKey, base + FOOTER_INDEX_POSITION_OFFSET, "index [" + indexPosition + ", +"
                    + indexLength + ") must end where the footer starts, at byte " + base + " of a "
                    + objectSizeBytes + "-byte object (expected index position " + (base - indexLength) + ")");
        }
        int indexCrc = footerBytes.getInt(r + FOOTER_INDEX_CRC_OFFSET);
        return new ObjectFooter(indexPosition, indexLength, indexCrc, version, objectSizeBytes);
    }

    /** Writes the footer's {@link ObjectFormat#FOOTER_SIZE} bytes at {@code out}'s writer index. */
    void encode(ByteBuf out) {
        int w = out.writerIndex();
        out.ensureWritable(FOOTER_SIZE);
        out.setLong(w + FOOTER_INDEX_POSITION_OFFSET, indexPosition);
        out.setInt(w + FOOTER_INDEX_LENGTH_OFFSET, indexLength);
        out.setInt(w + FOOTER_INDEX_CRC_OFFSET, indexCrc);
        out.setInt(w + FOOTER_FLAGS_OFFSET, 0);
        out.setInt(w + FOOTER_VERSION_OFFSET, version);
        out.setLong(w + FOOTER_MAGIC_OFFSET, MAGIC);
        out.setInt(w + FOOTER_CRC_OFFSET, footerCrc(out, w));
        out.writerIndex(w + FOOTER_SIZE);
    }

    private static int footerCrc(ByteBuf buf, int footerStart) {
        CRC32C crc = new CRC32C();
        Crc32c.update(crc, buf, footerStart, FOOTER_CRC_OFFSET);
        int afterCrc = FOOTER_CRC_OFFSET + Integer.BYTES;
        Crc32c.update(crc, buf, footerStart + afterCrc, FOOTER_SIZE - afterCrc);
        return (int) crc.getValue();
    }
}
