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
 * @param logCacheCapacityBytes      the log cache's budget
 * @param blockCacheCapacityBytes    the block cache's budget, read-ahead area included
 * @param fetchesFromLogCache        fetches answered from the log cache (tail reads: no object-store request)
 * @param fetchesFromObjects         fetches that read objects (through the block cache)
 * @param blockCacheEvictions        blocks evicted from the main block cache to respect its budget
 * @param mergedGets                 ranged GETs that read several adjacent blocks at once
 * @param readAheadBytes             gauge: bytes held by the read-ahead area (resident blocks)
 * @param readAheadHits              block reads served by a block read ahead (counted in blockCacheHits too)
 * @param readAheadBlocks            blocks read ahead
 * @param readAheadEvictedUnread     blocks read ahead and evicted before anyone read them
 * @param sequentialReaders          gauge: readers currently recognised as sequential (catch-up)
 * @param readAheadWindowMaxBytes    gauge: largest read-ahead window among them
 * @param readAheadWindowTotalBytes  gauge: sum of their read-ahead windows
 * @param catchUpReadsQueued         catch-up reads that waited for the catch-up concurrency limit
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
        long objectStoreBytesIn,
        long logCacheCapacityBytes,
        long blockCacheCapacityBytes,
        long fetchesFromLogCache,
        long fetchesFromObjects,
        long blockCacheEvictions,
        long mergedGets,
        long readAheadBytes,
        long readAheadHits,
        long readAheadBlocks,
        long readAheadEvictedUnread,
        long sequentialReaders,
        long readAheadWindowMaxBytes,
        long readAheadWindowTotalBytes,
        long catchUpReadsQueued) {

    public StorageMetrics {
        objectStoreRequests = Map.copyOf(objectStoreRequests);
    }

    /** Share of fetches answered from the log cache, or 0 before the first fetch. */
    public double logCacheHitRate() {
        long fetches = fetchesFromLogCache + fetchesFromObjects;
        return fetches == 0 ? 0 : (double) fetchesFromLogCache / fetches;
    }

    /** Share of data-block reads served from the block cache (read-ahead included), or 0 before the first. */
    public double blockCacheHitRate() {
        long reads = blockCacheHits + blockCacheMisses;
        return reads == 0 ? 0 : (double) blockCacheHits / reads;
    }
}
