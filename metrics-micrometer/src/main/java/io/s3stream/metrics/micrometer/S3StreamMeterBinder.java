package io.s3stream.metrics.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.s3stream.StorageMetrics;
import io.s3stream.StreamStorage;

import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * Binds the engine's counters ({@link StorageMetrics}) to a Micrometer registry: cumulative counts become
 * {@link FunctionCounter}s, current values {@link Gauge}s, all under {@code s3stream.*} with the tags given.
 *
 * <pre>{@code
 * new S3StreamMeterBinder(storage).bindTo(registry);   // storage: an open StreamStorage
 * }</pre>
 *
 * <p>Design note: the meters read one snapshot of {@link StreamStorage#metrics()} taken at most every
 * {@value #SNAPSHOT_TTL_MS} ms, so a scrape sees one consistent set of values and costs one snapshot, not one per
 * meter. The registry holds the binder (and through it the storage) until its meters are removed: the caller need
 * not keep a reference. The engine keeps no latency histograms; request latencies belong to the embedding system, which sees its
 * own calls (kafka-shell times each Kafka request).
 *
 * <p>Meters ({@code s3stream.} omitted): counters {@code appends.batches}, {@code appends.bytes},
 * {@code uploads.objects}, {@code uploads.bytes}, {@code uploads.adopted.objects}, {@code uploads.adopted.bytes},
 * {@code block.cache.hits}, {@code block.cache.misses}, {@code block.cache.evictions},
 * {@code block.cache.merged.loads}, {@code read.ahead.hits}, {@code read.ahead.blocks},
 * {@code read.ahead.evicted.unread}, {@code reads} (tag {@code source}: {@code log.cache} or {@code objects}),
 * {@code reads.catch.up.queued}, {@code reads.catch.up.cuts}, {@code object.store.requests} (tag {@code kind}),
 * {@code object.store.bytes} (tag {@code direction}: {@code out} or {@code in}), {@code object.store.retries}; gauges
 * {@code log.cache.bytes}, {@code log.cache.capacity}, {@code block.cache.bytes}, {@code block.cache.capacity},
 * {@code read.ahead.bytes}, {@code read.ahead.sequential.readers}, {@code read.ahead.window.bytes},
 * {@code reads.catch.up.limit}, {@code object.store.write.requests.per.gib}.
 */
public final class S3StreamMeterBinder implements MeterBinder {
    static final long SNAPSHOT_TTL_MS = 100;
    /** The request kinds the object stores count (StorageMetrics.ObjectStore). */
    static final List<String> REQUEST_KINDS = List.of("PUT", "PART", "PART_COPY", "COMPLETE", "CREATE_MULTIPART",
            "ABORT_MULTIPART", "GET", "HEAD", "LIST", "DELETE", "CREATE_IF_ABSENT");

    private final Supplier<StorageMetrics> source;
    private final Tags tags;
    private StorageMetrics last; // guarded by this
    private long lastNanos; // guarded by this

    /** Meters of {@code storage}, untagged. */
    public S3StreamMeterBinder(StreamStorage storage) {
        this(storage::metrics, Tags.empty());
    }

    /**
     * @param metrics where snapshots come from (usually {@code storage::metrics})
     * @param tags    added to every meter (for example the node id when one process runs several engines)
     */
    public S3StreamMeterBinder(Supplier<StorageMetrics> metrics, Iterable<Tag> tags) {
        this.source = Objects.requireNonNull(metrics, "metrics");
        this.tags = Tags.of(tags);
    }

    private synchronized StorageMetrics snapshot() {
        long now = System.nanoTime();
        if (last == null || now - lastNanos > SNAPSHOT_TTL_MS * 1_000_000) {
            last = source.get();
            lastNanos = now;
        }
        return last;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        counter(registry, "appends.batches", "batches acknowledged (durable in the WAL)", null, m -> m.appends().batches());
        counter(registry, "appends.bytes", "payload bytes acknowledged", BaseUnits.BYTES, m -> m.appends().bytes());
        counter(registry, "uploads.objects", "objects written and committed by uploads", null, m -> m.uploads().objects());
        counter(registry, "uploads.bytes", "bytes of uploaded objects", BaseUnits.BYTES, m -> m.uploads().bytes());
        counter(registry, "uploads.adopted.objects", "WAL segments committed as objects as they were", null,
                m -> m.uploads().adoptedObjects());
        counter(registry, "uploads.adopted.bytes", "bytes of adopted WAL segments", BaseUnits.BYTES,
                m -> m.uploads().adoptedBytes());
        gauge(registry, "log.cache.bytes", "bytes of recent appends held in memory", BaseUnits.BYTES,
                m -> m.logCache().bytes());
        gauge(registry, "log.cache.capacity", "the log cache's budget", BaseUnits.BYTES, m -> m.logCache().capacityBytes());
        gauge(registry, "block.cache.bytes", "bytes of data blocks held (read-ahead area included)", BaseUnits.BYTES,
                m -> m.blockCache().bytes());
        gauge(registry, "block.cache.capacity", "the block cache's budget", BaseUnits.BYTES,
                m -> m.blockCache().capacityBytes());
        counter(registry, "block.cache.hits", "data-block reads served from memory", null, m -> m.blockCache().hits());
        counter(registry, "block.cache.misses", "data-block reads that went to the object store", null,
                m -> m.blockCache().misses());
        counter(registry, "block.cache.evictions", "blocks evicted to respect the budget", null,
                m -> m.blockCache().evictions());
        counter(registry, "block.cache.merged.loads", "ranged GETs that read several adjacent blocks", null,
                m -> m.blockCache().mergedLoads());
        gauge(registry, "read.ahead.bytes", "bytes held by the read-ahead area", BaseUnits.BYTES,
                m -> m.readAhead().bytes());
        counter(registry, "read.ahead.hits", "block reads served by a block read ahead", null, m -> m.readAhead().hits());
        counter(registry, "read.ahead.blocks", "blocks read ahead", null, m -> m.readAhead().blocks());
        counter(registry, "read.ahead.evicted.unread", "blocks read ahead and evicted before anyone read them", null,
                m -> m.readAhead().evictedUnread());
        gauge(registry, "read.ahead.sequential.readers", "readers recognised as sequential", null,
                m -> m.readAhead().sequentialReaders());
        gauge(registry, "read.ahead.window.bytes", "sum of the sequential readers' read-ahead windows", BaseUnits.BYTES,
                m -> m.readAhead().windowTotalBytes());
        FunctionCounter.builder("s3stream.reads", this, b -> b.snapshot().reads().fromLogCache())
                .description("fetches by where they were served from").tags(tags).tag("source", "log.cache")
                .register(registry);
        FunctionCounter.builder("s3stream.reads", this, b -> b.snapshot().reads().fromObjects())
                .description("fetches by where they were served from").tags(tags).tag("source", "objects")
                .register(registry);
        counter(registry, "reads.catch.up.queued", "catch-up reads that waited for the catch-up concurrency limit", null,
                m -> m.reads().catchUpQueued());
        gauge(registry, "reads.catch.up.limit", "bandwidth catch-up reads may take now (0: no limit)", "bytes/s",
                m -> m.reads().catchUpLimit());
        counter(registry, "reads.catch.up.cuts", "times the CPU governor lowered the catch-up limit", null,
                m -> m.reads().catchUpCuts());
        for (String kind : REQUEST_KINDS) {
            FunctionCounter.builder("s3stream.object.store.requests", this, b -> b.snapshot().objectStore().requests(kind))
                    .description("object-store requests by kind, every attempt").tags(tags).tag("kind", kind)
                    .register(registry);
        }
        FunctionCounter.builder("s3stream.object.store.bytes", this, b -> b.snapshot().objectStore().bytesOut())
                .description("bytes sent to and received from the object store").baseUnit(BaseUnits.BYTES).tags(tags)
                .tag("direction", "out").register(registry);
        FunctionCounter.builder("s3stream.object.store.bytes", this, b -> b.snapshot().objectStore().bytesIn())
                .description("bytes sent to and received from the object store").baseUnit(BaseUnits.BYTES).tags(tags)
                .tag("direction", "in").register(registry);
        counter(registry, "object.store.retries", "requests repeated after a retriable failure", null,
                m -> m.objectStore().retries());
        gauge(registry, "object.store.write.requests.per.gib", "billed write requests per GiB sent (the ingest cost)",
                null, m -> m.objectStore().writeRequestsPerGiB());
    }

    private void counter(MeterRegistry registry, String name, String description, String unit,
                         ToDoubleFunction<StorageMetrics> value) {
        FunctionCounter.builder("s3stream." + name, this, b -> value.applyAsDouble(b.snapshot()))
                .description(description).baseUnit(unit).tags(tags).register(registry);
    }

    private void gauge(MeterRegistry registry, String name, String description, String unit,
                       ToDoubleFunction<StorageMetrics> value) {
        // Strongly held: Micrometer holds the state of function counters weakly, and every meter's state is this
        // binder; the gauges keep it alive as long as the registry has them.
        Gauge.builder("s3stream." + name, this, b -> value.applyAsDouble(b.snapshot())).strongReference(true)
                .description(description).baseUnit(unit).tags(tags).register(registry);
    }
}
