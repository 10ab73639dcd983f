package io.s3stream.wal.object.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.s3stream.internal.format.IndexEntry;
import io.s3stream.internal.format.ObjectReader;
import io.s3stream.wal.object.internal.WalObjectDescriptor.Header;
import io.s3stream.wal.object.internal.WalObjectDescriptor.RecordEntry;

/** A human-readable description of one WAL object, every checksum verified (for {@code WalObjectTool}). */
public final class WalObjectDump {
    private WalObjectDump() {
    }

    /** Describes {@code object}; throws {@link io.s3stream.CorruptDataException} when a checksum or the layout fails. */
    public static String describe(ByteBuf object, String name) {
        ObjectReader reader = ObjectReader.of(object, name);
        Header h = WalObjectCodec.header(reader, name);
        StringBuilder sb = new StringBuilder();
        sb.append(name).append(": ").append(h.isSeal() ? "SEAL" : "DATA").append(" seq ").append(h.seq())
                .append(" node ").append(h.nodeId()).append(" epoch ").append(h.nodeEpoch())
                .append(String.format(" token %016x", h.token())).append(" maxInFlight ").append(h.maxInFlight())
                .append(", ").append(object.readableBytes()).append(" bytes, ").append(h.records().size())
                .append(" records");
        for (var range : WalObjectCodec.ranges(h)) {
            sb.append("\n  stream ").append(range.streamId()).append(" epoch ").append(range.epoch()).append(" [")
                    .append(range.startOffset()).append(", ").append(range.endOffset()).append(')');
        }
        int i = 0;
        for (RecordEntry r : h.records()) {
            sb.append("\n  record ").append(i++).append(": stream ").append(r.streamId()).append(" [")
                    .append(r.baseOffset()).append(", ").append(r.endOffset()).append(')');
        }
        // Decoding every record checks each data block's CRC and that the blocks hold exactly the listed records.
        WalObjectCodec.records(UnpooledByteBufAllocator.DEFAULT, reader, h, name).forEach(ByteBuf::release);
        for (IndexEntry e : reader.index().entries()) {
            reader.readBlock(e);
        }
        sb.append("\n  checksums OK");
        return sb.toString();
    }
}
