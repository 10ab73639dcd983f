package io.s3stream;

import java.util.Map;

/**
 * A stream as the shared metadata knows it ({@link StreamStorage#listStreams}).
 *
 * @param streamId    id
 * @param epoch       the epoch it was last opened at
 * @param startOffset first readable offset
 * @param endOffset   offset past the last record in committed objects; records its writer acknowledged since may
 *                    still be in that writer's WAL and log cache
 * @param ownerNodeId the node holding it open for writing, or -1 when nobody does
 * @param tags        the tags given at creation ({@link StreamOptions#tags})
 */
public record StreamInfo(long streamId, long epoch, long startOffset, long endOffset, long ownerNodeId,
                         Map<String, String> tags) {

    public StreamInfo {
        tags = Map.copyOf(tags);
    }

    /** Whether some node holds the stream open for writing. */
    public boolean isOpen() {
        return ownerNodeId >= 0;
    }
}
