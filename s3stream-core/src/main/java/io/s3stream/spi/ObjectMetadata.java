package io.s3stream.spi;

import java.util.List;
import java.util.Optional;

/**
 * An object as the manifest knows it.
 *
 * @param objectId      id; the key is {@link ObjectKeys#dataKey(long)}
 * @param type          stream set or stream object
 * @param sizeBytes     size of the object
 * @param ranges        stream ranges it holds, sorted by (stream id, start offset)
 * @param nodeId        node that wrote it
 * @param committedAtMs commit time in epoch milliseconds
 * @param state         lifecycle state
 */
public record ObjectMetadata(long objectId, ObjectType type, long sizeBytes, List<StreamRange> ranges, long nodeId,
                             long committedAtMs, ObjectState state) {

    public ObjectMetadata {
        ranges = List.copyOf(ranges);
    }

    public String key() {
        return ObjectKeys.dataKey(objectId);
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
