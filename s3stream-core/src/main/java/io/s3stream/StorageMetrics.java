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
 * @param objectStoreRequests  object-store requests by kind, every attempt counted (PUT, PART, COMPLETE,
 *                             CREATE_MULTIPART, ABORT_MULTIPART, GET, HEAD, LIST, DELETE, CREATE_IF_ABSENT)
 * @param objectStoreBytesOut  bytes sent to the object store
 * @param objectStoreBytesIn   bytes received from the object store
 * @param objectStoreRetries   requests repeated after a retriable failure (included in the request counts)
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
 *
 * <h2>The cost model</h2>
 * Requests and bytes are what an object store bills. {@link #writeRequestsPerGiB()} is the figure to watch for
 * ingest; the engine also logs a report like this one every minute ({@code StorageConfig.costLogInterval}):
 * <pre>
 * object store s3://bucket/prefix/: requests PUT=35 PART=58 COMPLETE=2 CREATE_MULTIPART=2 ABORT_MULTIPART=0 GET=12
 * HEAD=0 LIST=0 DELETE=0 CREATE_IF_ABSENT=0; out 1.00 GiB (97.0 write requests/GiB), in 0.01 GiB; retries 0
 * (budget refusals 0), merged reads 4, hedged reads 0, in flight 0, queued 0
 * </pre>
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
        long objectStoreRetries,
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

    /** Write requests (PUT, parts, multipart create and complete, conditional creates) per GiB sent; 0 before any. */
    public double writeRequestsPerGiB() {
        long writes = 0;
        for (String kind : new String[] {"PUT", "PART", "COMPLETE", "CREATE_MULTIPART", "CREATE_IF_ABSENT"}) {
            writes += objectStoreRequests.getOrDefault(kind, 0L);
        }
        return objectStoreBytesOut == 0 ? 0 : writes / (objectStoreBytesOut / (1024.0 * 1024 * 1024));
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
