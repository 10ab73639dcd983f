package io.s3stream;

/**
 * What {@link StreamStorage#takeOverNode} did.
 *
 * @param nodeId            the node taken over
 * @param fencingNodeEpoch  the node epoch the manifest issued to fence it; the node, if still running, is refused from
 *                          then on and must restart (it then registers a newer epoch)
 * @param walRecords        records its WAL held after the last trim
 * @param walBytes          their bytes
 * @param committedRecords  records that were not yet in committed objects and now are (the rest were committed already,
 *                          or followed a failed append and were never acknowledged)
 * @param streamsReleased   streams the node held open, now closed so that other nodes can open them
 * @param fenceMillis       time to fence the node in the manifest
 * @param recoverMillis     time to read its WAL and commit what it held
 * @param releaseMillis     time to close its streams
 * @param totalMillis       the whole takeover
 */
public record TakeoverResult(long nodeId, long fencingNodeEpoch, long walRecords, long walBytes, long committedRecords,
                             int streamsReleased, long fenceMillis, long recoverMillis, long releaseMillis,
                             long totalMillis) {
}
