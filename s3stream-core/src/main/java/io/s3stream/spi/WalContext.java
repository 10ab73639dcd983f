package io.s3stream.spi;

import java.nio.file.Path;
import java.time.Duration;

/**
 * What a WAL backend is told when it is opened.
 *
 * @param nodeId              owner node id, recorded in the log so that another node's log is refused
 * @param nodeEpoch           owner generation; a higher epoch fences a lower one
 * @param dataDir             the node's data directory (for backends that default to a file under it)
 * @param backpressureTimeout how long a full log lets an append wait for a trim
 */
public record WalContext(long nodeId, long nodeEpoch, Path dataDir, Duration backpressureTimeout) {
}
