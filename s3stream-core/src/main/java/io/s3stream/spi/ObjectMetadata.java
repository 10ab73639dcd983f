package io.s3stream.spi;

import java.util.List;
import java.util.Optional;

/**
 * An object as the manifest knows it.
 *
 * @param objectId      id
 * @param type          stream set or stream object
 * @param sizeBytes     size of the object
 * @param ranges        stream ranges it holds, sorted by (stream id, start offset)
 * @param nodeId        node that wrote it
 * @param committedAtMs commit time in epoch milliseconds
 * @param state         lifecycle state
 * @param key           its key in the object store: {@link ObjectKeys#dataKey(long)} for objects written under a
 *                      prepared id, the segment's own key for an adopted WAL segment
 */
public record ObjectMetadata(long objectId, ObjectType type, long sizeBytes, List<StreamRange> ranges, long nodeId,
                             long committedAtMs, ObjectState state, String key) {

    public ObjectMetadata {
        ranges = List.copyOf(ranges);
        if (key == null) {
            key = ObjectKeys.dataKey(objectId);
        }
    }

    /** An object stored under its id's data key. */
    public ObjectMetadata(long objectId, ObjectType type, long sizeBytes, List<StreamRange> ranges, long nodeId,
                          long committedAtMs, ObjectState state) {
        this(objectId, type, sizeBytes, ranges, nodeId, committedAtMs, state, null);
    }

    /** The range of {@code streamId} held by this object, if any. */
    public Optional<StreamRange> rangeOf(long streamId) {
        for (StreamRange range : ranges) {
            if (range.streamId() == streamId) {
                return Optional.of(range);
            }
        }
        return Optional.empty();
    }
}
