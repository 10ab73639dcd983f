package io.s3stream.internal.compaction;

import io.s3stream.internal.format.IndexEntry;
import io.s3stream.internal.format.ObjectIndex;
import io.s3stream.internal.format.ObjectTail;
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
    static InputObject load(ObjectStorage store, ObjectMetadata object) {
        return new InputObject(object, ObjectTail.readIndex(object.key(), object.sizeBytes(),
                (position, length) -> store.get(object.key(), position, length, ObjectStorage.Priority.COMPACTION))
                .join());
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
