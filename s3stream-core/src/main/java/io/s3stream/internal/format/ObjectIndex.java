package io.s3stream.internal.format;

import io.netty.buffer.ByteBuf;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

import static io.s3stream.internal.format.ObjectFormat.ENTRY_END_OFFSET_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.ENTRY_POSITION_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.ENTRY_RECORD_COUNT_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.ENTRY_SIZE_BYTES_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.ENTRY_START_OFFSET_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.ENTRY_STREAM_ID_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.INDEX_ENTRY_SIZE;
import static io.s3stream.internal.format.ObjectFormat.MIN_BLOCK_SIZE;
import static io.s3stream.internal.format.ObjectFormat.corrupt;

/**
 * The decoded, validated index of one object: its data blocks in (streamId, startOffset) order, and the lookup
 * of the blocks a read needs.
 *
 * <p>Immutable after {@link #decode}; safe to share between threads and to cache.
 */
public final class ObjectIndex {

    private final List<IndexEntry> entries;

    private ObjectIndex(IndexEntry[] entries) {
        this.entries = Collections.unmodifiableList(Arrays.asList(entries));
    }

    /**
     * Verifies the index CRC and that the entries describe a well-formed object (see the invariants in
     * {@link ObjectFormat}).
     *
     * @param indexBytes exactly the index bytes, between reader and writer index (indexes untouched)
     * @param footer     the object's decoded footer
     * @param objectKey  named in error messages
     * @throws io.s3stream.CorruptDataException on a CRC mismatch or an entry that breaks an invariant
     */
    public static ObjectIndex decode(ByteBuf indexBytes, ObjectFooter footer, String objectKey) {
        Objects.requireNonNull(indexBytes, "indexBytes");
        Objects.requireNonNull(footer, "footer");
        long base = footer.indexPosition();
        if (indexBytes.readableBytes() != footer.indexLength()) {
            throw corrupt(objectKey, base, "expected " + footer.indexLength() + " index bytes (from the footer), got "
                    + indexBytes.readableBytes());
        }
        int r = indexBytes.readerIndex();
        int actualCrc = Crc32c.of(indexBytes, r, footer.indexLength());
        if (actualCrc != footer.indexCrc()) {
            throw corrupt(objectKey, base, String.format("index CRC32C expected 0x%08x (from the footer), computed "
                    + "0x%08x over %d bytes", footer.indexCrc(), actualCrc, footer.indexLength()));
        }
        int count = footer.entryCount();
        IndexEntry[] entries = new IndexEntry[count];
        long expectedPosition = 0;
        for (int i = 0; i < count; i++) {
            int at = r + i * INDEX_ENTRY_SIZE;
            long entryPosition = base + (long) i * INDEX_ENTRY_SIZE;
            IndexEntry e = readEntry(indexBytes, at);
            String where = "index entry " + i + " " + e;
            if (e.startOffset() < 0 || e.endOffset() <= e.startOffset()) {
                throw corrupt(objectKey, entryPosition, where + ": offsets must satisfy 0 <= start < end");
            }
            if (e.recordCount() != e.endOffset() - e.startOffset()) {
                throw corrupt(objectKey, entryPosition, where + ": recordCount expected "
                        + (e.endOffset() - e.startOffset()) + " (end - start), found " + e.recordCount());
            }
            if (e.position() != expectedPosition) {
                throw corrupt(objectKey, entryPosition, where + ": block position expected " + expectedPosition
                        + " (blocks are packed from byte 0), found " + e.position());
            }
            if (e.sizeBytes() < MIN_BLOCK_SIZE || e.sizeBytes() > footer.indexPosition() - e.position()) {
                throw corrupt(objectKey, entryPosition, where + ": block size must be in [" + MIN_BLOCK_SIZE + ", "
                        + (footer.indexPosition() - e.position()) + "] to stay inside the data region [0, "
                        + footer.indexPosition() + ")");
            }
            if (i > 0) {
                IndexEntry prev = entries[i - 1];
                if (e.streamId() < prev.streamId()) {
                    throw corrupt(objectKey, entryPosition, where + ": stream " + e.streamId()
                            + " after stream " + prev.streamId() + " (entries must be sorted by stream)");
                }
                if (e.streamId() == prev.streamId() && e.startOffset() != prev.endOffset()) {
                    throw corrupt(objectKey, entryPosition, where + ": start offset expected " + prev.endOffset()
                            + " (end of the previous block of stream " + e.streamId() + "), found "
                            + e.startOffset());
                }
            }
            entries[i] = e;
            expectedPosition = e.endPosition();
        }
        if (expectedPosition != footer.indexPosition()) {
            throw corrupt(objectKey, base, "blocks end at byte " + expectedPosition
                    + " but the index starts at byte " + footer.indexPosition()
                    + " (the data region must be exactly the blocks)");
        }
        return new ObjectIndex(entries);
    }

    private static IndexEntry readEntry(ByteBuf buf, int at) {
        return new IndexEntry(
                buf.getLong(at + ENTRY_STREAM_ID_OFFSET),
                buf.getLong(at + ENTRY_START_OFFSET_OFFSET),
                buf.getLong(at + ENTRY_END_OFFSET_OFFSET),
                buf.getInt(at + ENTRY_RECORD_COUNT_OFFSET),
                buf.getLong(at + ENTRY_POSITION_OFFSET),
                buf.getInt(at + ENTRY_SIZE_BYTES_OFFSET));
    }

    /** Writes {@code e} as one index entry at {@code out}'s writer index. */
    static void encode(IndexEntry e, ByteBuf out) {
        int w = out.writerIndex();
        out.ensureWritable(INDEX_ENTRY_SIZE);
        out.setLong(w + ENTRY_STREAM_ID_OFFSET, e.streamId());
        out.setLong(w + ENTRY_START_OFFSET_OFFSET, e.startOffset());
        out.setLong(w + ENTRY_END_OFFSET_OFFSET, e.endOffset());
        out.setLong(w + ENTRY_POSITION_OFFSET, e.position());
        out.setInt(w + ENTRY_RECORD_COUNT_OFFSET, e.recordCount());
        out.setInt(w + ENTRY_SIZE_BYTES_OFFSET, e.sizeBytes());
        out.writerIndex(w + INDEX_ENTRY_SIZE);
    }

    /**
     * Encodes the index and footer of an object whose data region is {@code dataBytes} long and holds exactly the
     * blocks of {@code entries} (positions packed from 0, sorted as {@link ObjectFormat} requires), for writers that
     * lay out blocks themselves (compaction copies whole blocks and appends this tail). The caller owns the result.
     */
    public static ByteBuf encodeTail(List<IndexEntry> entries, long dataBytes, io.netty.buffer.ByteBufAllocator alloc) {
        int indexLength = entries.size() * INDEX_ENTRY_SIZE;
        ByteBuf tail = alloc.buffer(indexLength + ObjectFormat.FOOTER_SIZE);
        try {
            for (IndexEntry e : entries) {
                encode(e, tail);
            }
            int indexCrc = Crc32c.of(tail, tail.readerIndex(), indexLength);
            new ObjectFooter(dataBytes, indexLength, indexCrc, ObjectFormat.VERSION,
                    dataBytes + indexLength + ObjectFormat.FOOTER_SIZE).encode(tail);
            return tail;
        } catch (RuntimeException e) {
            tail.release();
            throw e;
        }
    }

    /** All entries, in block order. */
    public List<IndexEntry> entries() {
        return entries;
    }

    /**
     * The blocks to read for {@code [startOffset, endOffset)} of a stream: the entries of that stream that overlap
     * the range, in order, starting with the one that holds {@code startOffset} (or the first after it), and
     * stopping as soon as their summed sizes reach {@code maxBytes}. Returns at least one entry when any overlaps.
     */
    public List<IndexEntry> find(long streamId, long startOffset, long endOffset, long maxBytes) {
        if (startOffset >= endOffset) {
            return List.of();
        }
        int i = firstEndingAfter(streamId, startOffset);
        List<IndexEntry> found = new ArrayList<>();
        long bytes = 0;
        for (; i < entries.size(); i++) {
            IndexEntry e = entries.get(i);
            if (e.streamId() != streamId || e.startOffset() >= endOffset) {
                break;
            }
            found.add(e);
            bytes += e.sizeBytes();
            if (bytes >= maxBytes) {
                break;
            }
        }
        return found;
    }

    /** Index of the first entry ordered after (streamId, offset): larger stream, or same stream ending past offset. */
    private int firstEndingAfter(long streamId, long offset) {
        int lo = 0;
        int hi = entries.size();
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            IndexEntry e = entries.get(mid);
            boolean before = e.streamId() < streamId || (e.streamId() == streamId && e.endOffset() <= offset);
            if (before) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    @Override
    public String toString() {
        return "ObjectIndex[" + entries.size() + " entries]";
    }
}
