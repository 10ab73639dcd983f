package io.s3stream;

import java.util.Map;

/**
 * A snapshot of the engine's counters, grouped by subsystem. Counters are cumulative since {@link StreamStorage#open};
 * gauges (marked) are current. Each group is a record of its own, so a new counter extends one group without
 * breaking code that reads the others.
 *
 * @param appends     what was acknowledged
 * @param uploads     what became objects
 * @param logCache    memory of recent appends
 * @param blockCache  memory of data blocks read from objects
 * @param readAhead   sequential (catch-up) readers and the blocks read ahead for them
 * @param reads       where fetches were served from
 * @param objectStore requests and bytes, as a store bills them
 * @param compaction  what compaction rewrote and deleted
 *
 * <h2>The cost model</h2>
 * Requests and bytes are what an object store bills. {@link ObjectStore#writeRequestsPerGiB()} is the figure to watch
 * for ingest; the engine also logs a report like this one every minute ({@code StorageConfig.costLogInterval}):
 * <pre>
 * object store s3://bucket/prefix/: requests PUT=35 PART=58 COMPLETE=2 CREATE_MULTIPART=2 ABORT_MULTIPART=0 GET=12
 * HEAD=0 LIST=0 DELETE=0 CREATE_IF_ABSENT=0; out 1.00 GiB (97.0 write requests/GiB), in 0.01 GiB; retries 0
 * (budget refusals 0), merged reads 4, hedged reads 0, in flight 0, queued 0
 * </pre>
 */
public record StorageMetrics(Appends appends, Uploads uploads, LogCache logCache, BlockCache blockCache,
                             ReadAhead readAhead, Reads reads, ObjectStore objectStore, Compaction compaction) {

    /**
     * @param batches batches acknowledged
     * @param bytes   payload bytes acknowledged
     */
    public record Appends(long batches, long bytes) {
    }

    /**
     * @param objects        objects written and committed by uploads (stream set objects and stream objects)
     * @param bytes          bytes of those objects
     * @param adoptedObjects WAL segments committed as objects as they were, with no data written again (wal-object)
     * @param adoptedBytes   bytes of those segments
     */
    public record Uploads(long objects, long bytes, long adoptedObjects, long adoptedBytes) {
    }

    /**
     * @param bytes         gauge: bytes held
     * @param capacityBytes the budget
     */
    public record LogCache(long bytes, long capacityBytes) {
    }

    /**
     * @param bytes         gauge: bytes held, read-ahead area included
     * @param capacityBytes the budget, read-ahead area included
     * @param hits          data-block reads served from the cache (read-ahead hits included)
     * @param misses        data-block reads that went to the object store
     * @param evictions     blocks evicted from the main area to respect its budget
     * @param mergedLoads   ranged GETs that read several adjacent blocks at once
     */
    public record BlockCache(long bytes, long capacityBytes, long hits, long misses, long evictions,
                             long mergedLoads) {

        /** Share of data-block reads served from the cache (read-ahead included), or 0 before the first. */
        public double hitRate() {
            long reads = hits + misses;
            return reads == 0 ? 0 : (double) hits / reads;
        }
    }

    /**
     * @param bytes             gauge: bytes held by the read-ahead area (resident blocks)
     * @param hits              block reads served by a block read ahead (counted in {@link BlockCache#hits} too)
     * @param blocks            blocks read ahead
     * @param evictedUnread     blocks read ahead and evicted before anyone read them
     * @param sequentialReaders gauge: readers currently recognised as sequential
     * @param windowMaxBytes    gauge: largest read-ahead window among them
     * @param windowTotalBytes  gauge: sum of their windows
     */
    public record ReadAhead(long bytes, long hits, long blocks, long evictedUnread, long sequentialReaders,
                            long windowMaxBytes, long windowTotalBytes) {
    }

    /**
     * @param fromLogCache   fetches answered from the log cache (tail reads: no object-store request)
     * @param fromObjects    fetches that read objects (through the block cache)
     * @param catchUpQueued  catch-up reads that waited for the catch-up concurrency limit
     * @param catchUpLimit   the bandwidth catch-up reads may take now, bytes per second (the configured cap, lowered
     *                       by the CPU governor while appends contend with catch-up); 0 for no limit
     * @param catchUpCuts    times the CPU governor lowered that limit
     */
    public record Reads(long fromLogCache, long fromObjects, long catchUpQueued, long catchUpLimit, long catchUpCuts) {

        /** Share of fetches answered from the log cache, or 0 before the first fetch. */
        public double logCacheHitRate() {
            long fetches = fromLogCache + fromObjects;
            return fetches == 0 ? 0 : (double) fromLogCache / fetches;
        }
    }

    /**
     * @param requests requests by kind, every attempt counted (PUT, PART, PART_COPY, COMPLETE, CREATE_MULTIPART,
     *                 ABORT_MULTIPART, GET, HEAD, LIST, DELETE, CREATE_IF_ABSENT); WAL objects (wal-object) and the
     *                 manifest's own requests are included
     * @param bytesOut bytes sent
     * @param bytesIn  bytes received
     * @param retries  requests repeated after a retriable failure (included in the request counts)
     */
    public record ObjectStore(Map<String, Long> requests, long bytesOut, long bytesIn, long retries) {

        public ObjectStore {
            requests = Map.copyOf(requests);
        }

        /** Requests of {@code kind}, 0 when none. */
        public long requests(String kind) {
            return requests.getOrDefault(kind, 0L);
        }

        /** Billed write requests: PUT, parts, part copies, multipart create and complete, conditional creates. */
        public long writeRequests() {
            long writes = 0;
            for (String kind : new String[] {"PUT", "PART", "PART_COPY", "COMPLETE", "CREATE_MULTIPART",
                    "CREATE_IF_ABSENT"}) {
                writes += requests(kind);
            }
            return writes;
        }

        /** {@link #writeRequests()} per GiB sent; 0 before any byte. */
        public double writeRequestsPerGiB() {
            return bytesOut == 0 ? 0 : writeRequests() / (bytesOut / (1024.0 * 1024 * 1024));
        }
    }

    /**
     * @param runs                  compaction runs that committed (stream set, stream object and key compaction)
     * @param failedRuns            runs that failed and changed nothing
     * @param bytesRead             bytes read through the node by compaction
     * @param bytesWritten          bytes written through the node by compaction
     * @param objectsDeleted        retired objects deleted from the bucket
     * @param keyCompactionRuns     key compaction runs that committed
     * @param keyCompactionBytesIn  bytes of blocks key compaction rewrote
     * @param keyCompactionBytesOut bytes of blocks it wrote in their place
     */
    public record Compaction(long runs, long failedRuns, long bytesRead, long bytesWritten, long objectsDeleted,
                             long keyCompactionRuns, long keyCompactionBytesIn, long keyCompactionBytesOut) {
    }
}
