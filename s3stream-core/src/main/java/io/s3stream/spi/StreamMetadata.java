package io.s3stream.spi;

import java.util.Map;

/**
 * A stream as the manifest knows it.
 *
 * @param streamId    id
 * @param epoch       current writer epoch
 * @param startOffset first readable offset
 * @param endOffset   offset past the last one in committed objects
 * @param state       lifecycle state
 * @param ownerNodeId node holding it open, or -1
 * @param tags        attributes given at creation
 */
public record StreamMetadata(long streamId, long epoch, long startOffset, long endOffset, StreamState state,
                             long ownerNodeId, Map<String, String> tags) {

    public StreamMetadata {
        tags = Map.copyOf(tags);
    }
}
