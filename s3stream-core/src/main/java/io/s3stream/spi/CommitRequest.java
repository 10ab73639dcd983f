package io.s3stream.spi;

import java.util.List;
import java.util.Objects;

/**
 * One atomic manifest change: new objects, and for compaction the objects they replace.
 *
 * @param nodeId             committing node
 * @param nodeEpoch          its node epoch (fenced if superseded)
 * @param objects            objects to commit
 * @param compactedObjectIds inputs replaced by {@code objects}; empty for an upload
 * @param walPosition        for an upload: every record of node {@code nodeId}'s WAL below this position is in objects
 *                           committed by now (this commit included), recorded as the node's
 *                           {@link NodeMetadata#walCommittedPosition()} (it only moves forward);
 *                           {@link WalContext#NO_POSITION} when the commit says nothing about the WAL
 */
public record CommitRequest(long nodeId, long nodeEpoch, List<NewObject> objects, List<Long> compactedObjectIds,
                            long walPosition) {

    public CommitRequest {
        objects = List.copyOf(objects);
        compactedObjectIds = List.copyOf(compactedObjectIds);
    }

    /** A commit that says nothing about the WAL (compaction, tests). */
    public CommitRequest(long nodeId, long nodeEpoch, List<NewObject> objects, List<Long> compactedObjectIds) {
        this(nodeId, nodeEpoch, objects, compactedObjectIds, WalContext.NO_POSITION);
    }

    /**
     * A new object. Either an object the committer wrote under an id from {@link MetadataStore#prepareObjects} (key
     * {@link ObjectKeys#dataKey}), or an <em>adopted</em> object written elsewhere (a WAL segment, {@link WalSegment}):
     * it names its own {@code key}, has {@code objectId == UNASSIGNED}, and is given the next free id by the commit.
     *
     * @param objectId  prepared id, or {@link #UNASSIGNED} for an adopted object
     * @param type      stream set or stream object
     * @param sizeBytes size in bytes
     * @param ranges    stream ranges held, sorted by (stream id, start offset); an adopted object may hold none (it is
     *                  then marked for deletion at once)
     * @param key       the adopted object's key, or null for a prepared id's data key
     */
    public record NewObject(long objectId, ObjectType type, long sizeBytes, List<StreamRange> ranges, String key) {

        /** {@link #objectId} of an adopted object: the commit assigns the id. */
        public static final long UNASSIGNED = -1;

        public NewObject {
            ranges = List.copyOf(ranges);
            if ((key == null) == (objectId == UNASSIGNED)) {
                throw new IllegalArgumentException(key == null
                        ? "an object without a key needs a prepared id"
                        : "adopted object " + key + " must have objectId UNASSIGNED, was " + objectId);
            }
        }

        /** An object written under a prepared id. */
        public NewObject(long objectId, ObjectType type, long sizeBytes, List<StreamRange> ranges) {
            this(objectId, type, sizeBytes, ranges, null);
        }

        /** An object written outside the prepare/commit protocol (a WAL segment), adopted under its own key. */
        public static NewObject adopted(String key, long sizeBytes, List<StreamRange> ranges) {
            return new NewObject(UNASSIGNED, ObjectType.STREAM_SET, sizeBytes, ranges, Objects.requireNonNull(key));
        }

        public boolean isAdopted() {
            return key != null;
        }
    }
}
