package io.s3stream.internal.metadata;

import io.s3stream.spi.StreamMetadata;
import io.s3stream.spi.StreamState;

import java.util.Map;
import java.util.TreeMap;

/** Mutable state of one stream; guarded by the monitor of the {@link ManifestState} holding it. */
final class StreamEntry {
    final long streamId;
    final Map<String, String> tags;
    final TreeMap<Long, IndexedRange> index = new TreeMap<>();
    long epoch;
    long startOffset;
    long endOffset;
    StreamState state;
    long ownerNodeId;

    StreamEntry(long streamId, long startOffset, Map<String, String> tags) {
        this.streamId = streamId;
        this.startOffset = startOffset;
        this.endOffset = startOffset;
        this.tags = tags;
    }

    StreamMetadata toMetadata() {
        return new StreamMetadata(streamId, epoch, startOffset, endOffset, state, ownerNodeId, tags);
    }
}
