package io.s3stream.spi;

import java.util.List;

/**
 * One atomic manifest change: new objects, and for compaction the objects they replace.
 *
 * @param nodeId            committing node
 * @param nodeEpoch         its node epoch (fenced if superseded)
 * @param objects           objects to commit; their ids come from {@link MetadataStore#prepareObjects}
 * @param compactedObjectIds inputs replaced by {@code objects}; empty for an upload
 */
public record CommitRequest(long nodeId, long nodeEpoch, List<NewObject> objects, List<Long> compactedObjectIds) {

    public CommitRequest {
        objects = List.copyOf(objects);
        compactedObjectIds = List.copyOf(compactedObjectIds);
    }

    /**
     * An uploaded object.
     *
     * @param objectId  prepared id
     * @param type      stream set or stream object
     * @param sizeBytes size in bytes
     * @param ranges    stream ranges held, sorted by (stream id, start offset)
     */
    public record NewObject(long objectId, ObjectType type, long sizeBytes, List<StreamRange> ranges) {
        public NewObject {
            ranges = List.copyOf(ranges);
        }
    }
}
