package io.s3stream.internal.compaction;

import io.netty.buffer.ByteBuf;
import io.s3stream.internal.format.IndexEntry;
import io.s3stream.internal.format.ObjectFooter;
import io.s3stream.internal.format.ObjectFormat;
import io.s3stream.internal.format.ObjectIndex;
import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.spi.ObjectMetadata;

import java.util.List;

/**
 * A compaction input: its manifest entry and its decoded index (read with one tail GET, a second one only when the
 * index is larger than the tail read).
 *
 * @param metadata the manifest's view of the object
 * @param index    its validated index
 */
record InputObject(ObjectMetadata metadata, ObjectIndex index) {
    private static final int TAIL_READ_BYTES = 64 * 1024;

    static InputObject load(ObjectStorage store, ObjectMetadata object) {
        long size = object.sizeBytes();
        int tailLength = (int) Math.min(size, TAIL_READ_BYTES);
        long tailStart = size - tailLength;
        ByteBuf tail = store.get(object.key(), tailStart, tailLength, ObjectStorage.Priority.COMPACTION).join();
        try {
            ObjectFooter footer = ObjectFooter.decode(
                    tail.slice(tail.readerIndex() + tailLength - ObjectFormat.FOOTER_SIZE, ObjectFormat.FOOTER_SIZE),
                    size, object.key());
            if (footer.indexPosition() >= tailStart) {
                int from = (int) (footer.indexPosition() - tailStart);
                return new InputObject(object, ObjectIndex.decode(
                        tail.slice(tail.readerIndex() + from, footer.indexLength()), footer, object.key()));
            }
            ByteBuf indexBytes = store.get(object.key(), footer.indexPosition(), footer.indexLength(),
                    ObjectStorage.Priority.COMPACTION).join();
            try {
                return new InputObject(object, ObjectIndex.decode(indexBytes, footer, object.key()));
            } finally {
                indexBytes.release();
            }
        } finally {
            tail.release();
        }
    }

    String key() {
        return metadata.key();
    }

    long objectId() {
        return metadata.objectId();
    }

    /** Blocks of {@code streamId} that hold any offset at or above {@code liveFrom}, in order. */
    List<IndexEntry> liveBlocks(long streamId, long liveFrom) {
        return index.entries().stream().filter(e -> e.streamId() == streamId && e.endOffset() > liveFrom).toList();
    }
}
