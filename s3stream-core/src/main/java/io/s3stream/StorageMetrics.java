package io.s3stream;

import java.util.Map;

/**
 * A snapshot of the engine's counters. Counters are cumulative since {@link StreamStorage#open}; gauges are current.
 *
 * @param appendedBatches      batches acknowledged
 * @param appendedBytes        payload bytes acknowledged
 * @param uploadedObjects      objects committed by uploads (stream set objects and stream objects)
 * @param uploadedBytes        bytes of those objects
 * @param logCacheBytes        gauge: bytes held by the log cache
 * @param blockCacheBytes      gauge: bytes held by the block cache
 * @param blockCacheHits       data-block reads served from the block cache
 * @param blockCacheMisses     data-block reads that went to the object store
 * @param objectStoreRequests  object-store requests by kind (PUT, PART, GET, LIST, DELETE, HEAD, CREATE_IF_ABSENT)
 * @param objectStoreBytesOut  bytes sent to the object store
 * @param objectStoreBytesIn   bytes received from the object store
 */
public record StorageMetrics(
        long appendedBatches,
        long appendedBytes,
        long uploadedObjects,
        long uploadedBytes,
        long logCacheBytes,
        long blockCacheBytes,
        long blockCacheHits,
        long blockCacheMisses,
        Map<String, Long> objectStoreRequests,
        long objectStoreBytesOut,
        long objectStoreBytesIn) {

    public StorageMetrics {
        objectStoreRequests = Map.copyOf(objectStoreRequests);
    }
}
