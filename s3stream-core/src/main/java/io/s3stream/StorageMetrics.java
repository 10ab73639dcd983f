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
        long objectStoreRetries) {

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
}
