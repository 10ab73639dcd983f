package io.s3stream.internal.metadata;

import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamRange;

import java.time.Instant;
import java.util.List;

/** Mutable state of one object id; guarded by the monitor of the {@link ManifestState} holding it. */
final class ObjectEntry {
    final long objectId;
    final Instant deadline;
    ObjectType type = ManifestState.UNCOMMITTED_TYPE;
    long sizeBytes;
    List<StreamRange> ranges = List.of();
    long nodeId = -1;
    long committedAtMs = -1;
    ObjectState state = ObjectState.PREPARED;
    boolean expired;
    int liveRanges;
    /** The key of an adopted object; null for the id's data key. */
    String key;

    ObjectEntry(long objectId, Instant deadline) {
        this.objectId = objectId;
        this.deadline = deadline;
    }

    ObjectMetadata toMetadata() {
        return new ObjectMetadata(objectId, type, sizeBytes, ranges, nodeId, committedAtMs, state, key);
    }

    @Override
    public String toString() {
        return "object " + objectId + " " + state + " " + ranges;
    }
}
