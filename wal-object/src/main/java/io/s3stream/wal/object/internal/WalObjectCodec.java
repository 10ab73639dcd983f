package io.s3stream.wal.object.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.s3stream.CorruptDataException;
import io.s3stream.internal.format.DecodedBatch;
import io.s3stream.internal.format.IndexEntry;
import io.s3stream.internal.format.ObjectBuilder;
import io.s3stream.internal.format.ObjectReader;
import io.s3stream.spi.StreamRange;
import io.s3stream.spi.WalRecordFormat;
import io.s3stream.wal.object.internal.WalObjectDescriptor.Header;
import io.s3stream.wal.object.internal.WalObjectDescriptor.RecordEntry;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Builds a WAL object from the records of one window and reads records back from one (layout in
 * {@link WalObjectDescriptor}). Stateless.
 */
final class WalObjectCodec {
    private WalObjectCodec() {
    }

    /** A record appended to the WAL: the engine's encoded record and its decoded header fields. */
    record Appended(ByteBuf record, long streamId, long epoch, long baseOffset, int count) {
        int payloadBytes() {
            return record.readableBytes() - WalRecordFormat.HEADER_SIZE;
        }
    }

    /** A built object: its bytes (owned by the caller) and the stream ranges it holds. */
    record Built(ByteBuf bytes, List<StreamRange> ranges) {
    }

    /**
     * Lays out the records of one window, in append order, as object {@code header.seq()}. Within the window each
     * stream's records must be contiguous and of one epoch (the writer closes a window before a record that is not).
     */
    static Built build(ByteBufAllocator alloc, int blockSizeBytes, Header header, List<Appended> records) {
        TreeMap<Long, List<Appended>> byStream = new TreeMap<>();
        for (Appended a : records) {
            byStream.computeIfAbsent(a.streamId(), k -> new ArrayList<>()).add(a);
        }
        List<StreamRange> ranges = new ArrayList<>(byStream.size());
        ByteBuf walBlock = alloc.heapBuffer(WalObjectDescriptor.headerSize(records.size()));
        try (ObjectBuilder builder = new ObjectBuilder(alloc, blockSizeBytes)) {
            WalObjectDescriptor.write(walBlock, header);
            builder.add(WalObjectDescriptor.WAL_STREAM_ID, header.seq(), 1, walBlock);
            for (Map.Entry<Long, List<Appended>> e : byStream.entrySet()) {
                List<Appended> stream = e.getValue();
                for (Appended a : stream) {
                    builder.add(a.streamId(), a.baseOffset(), a.count(), a.record(),
                            a.record().readerIndex() + WalRecordFormat.HEADER_SIZE, a.payloadBytes(), false);
                }
                ranges.add(new StreamRange(e.getKey(), stream.getFirst().epoch(), stream.getFirst().baseOffset(),
                        stream.getLast().baseOffset() + stream.getLast().count()));
            }
            return new Built(builder.build(), ranges);
        } finally {
            walBlock.release();
        }
    }

    /** The WAL block of a whole object, checked. */
    static Header header(ObjectReader reader, String key) {
        List<IndexEntry> entries = reader.index().entries();
        if (entries.isEmpty() || entries.getFirst().streamId() != WalObjectDescriptor.WAL_STREAM_ID) {
            throw new CorruptDataException("object " + key + " is not a WAL object: its first block is not the WAL "
                    + "block (stream " + WalObjectDescriptor.WAL_STREAM_ID + ")");
        }
        List<DecodedBatch> batches = reader.readBlock(entries.getFirst());
        if (batches.size() != 1) {
            throw new CorruptDataException("WAL object " + key + ": the WAL block holds " + batches.size()
                    + " batches, expected 1");
        }
        Header header = WalObjectDescriptor.read(batches.getFirst().payload(), key);
        if (batches.getFirst().baseOffset() != header.seq()) {
            throw new CorruptDataException("WAL object " + key + ": the WAL block says sequence number " + header.seq()
                    + " but is stored as " + batches.getFirst().baseOffset());
        }
        return header;
    }

    /**
     * The engine's records of a data object, in append order, each a new buffer the caller owns. Checks that the data
     * blocks hold exactly the records the WAL block lists.
     */
    static List<ByteBuf> records(ByteBufAllocator alloc, ObjectReader reader, Header header, String key) {
        Map<Long, ArrayDeque<DecodedBatch>> byStream = new HashMap<>();
        for (IndexEntry e : reader.index().entries()) {
            if (e.streamId() != WalObjectDescriptor.WAL_STREAM_ID) {
                byStream.computeIfAbsent(e.streamId(), k -> new ArrayDeque<>()).addAll(reader.readBlock(e));
            }
        }
        List<ByteBuf> out = new ArrayList<>(header.records().size());
        try {
            for (RecordEntry r : header.records()) {
                ArrayDeque<DecodedBatch> stream = byStream.get(r.streamId());
                DecodedBatch b = stream == null ? null : stream.poll();
                if (b == null || b.baseOffset() != r.baseOffset() || b.count() != r.count()) {
                    throw new CorruptDataException("WAL object " + key + ": record of stream " + r.streamId() + " at "
                            + r.baseOffset() + " (+" + r.count() + ") listed in the WAL block does not match the data "
                            + "blocks (found " + (b == null ? "nothing" : b.baseOffset() + " (+" + b.count() + ")") + ")");
                }
                out.add(WalRecordFormat.encode(alloc, r.streamId(), r.epoch(), r.baseOffset(), r.count(),
                        b.payload().nioBuffer()));
            }
            for (Map.Entry<Long, ArrayDeque<DecodedBatch>> e : byStream.entrySet()) {
                if (!e.getValue().isEmpty()) {
                    throw new CorruptDataException("WAL object " + key + ": stream " + e.getKey() + " has "
                            + e.getValue().size() + " batches the WAL block does not list");
                }
            }
            return out;
        } catch (RuntimeException e) {
            out.forEach(ByteBuf::release);
            throw e;
        }
    }

    /** The stream ranges of a data object, from its WAL block (one per stream, sorted by stream id). */
    static List<StreamRange> ranges(Header header) {
        TreeMap<Long, StreamRange> byStream = new TreeMap<>();
        for (RecordEntry r : header.records()) {
            byStream.merge(r.streamId(), new StreamRange(r.streamId(), r.epoch(), r.baseOffset(), r.endOffset()),
                    (a, b) -> new StreamRange(a.streamId(), a.epoch(), Math.min(a.startOffset(), b.startOffset()),
                            Math.max(a.endOffset(), b.endOffset())));
        }
        return List.copyOf(byStream.values());
    }
}
