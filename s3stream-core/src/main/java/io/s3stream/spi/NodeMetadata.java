package io.s3stream.spi;

/**
 * A node as the manifest knows it.
 *
 * @param nodeId               id
 * @param nodeEpoch            its current node epoch; calls carrying an older one are fenced
 * @param walCommittedPosition every record of the node's WAL below this position is in committed objects (the highest
 *                             {@link CommitRequest#walPosition()} committed for the node), or
 *                             {@link WalContext#NO_POSITION}
 */
public record NodeMetadata(long nodeId, long nodeEpoch, long walCommittedPosition) {
}
