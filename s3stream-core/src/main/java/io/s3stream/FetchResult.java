package io.s3stream;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Whole batches read from a stream, in offset order. The payloads point into reference-counted buffers held by the
 * library; {@link #close()} gives them back, after which the payloads must not be touched. Closing twice is
 * harmless. Forgetting to close leaks direct memory (in tests the leak detector reports it).
 */
public final class FetchResult implements AutoCloseable {
    private final List<StoredBatch> batches;
    private final Runnable release;
    private final AtomicBoolean closed = new AtomicBoolean();

    private FetchResult(List<StoredBatch> batches, Runnable release) {
        this.batches = List.copyOf(batches);
        this.release = Objects.requireNonNull(release, "release");
    }

    /**
     * For the engine: wraps batches whose memory {@code release} gives back exactly once, on the first close.
     */
    public static FetchResult of(List<StoredBatch> batches, Runnable release) {
        return new FetchResult(batches, release);
    }

    /** The batches, in offset order; the first covers the requested start offset. */
    public List<StoredBatch> batches() {
        return batches;
    }

    /** Offset just past the last batch, or {@code fallback} when the result is empty. */
    public long nextOffset(long fallback) {
        return batches.isEmpty() ? fallback : batches.getLast().endOffset();
    }

    /** Total payload bytes. */
    public long sizeBytes() {
        long total = 0;
        for (StoredBatch batch : batches) {
            total += batch.payload().remaining();
        }
        return total;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            release.run();
        }
    }
}
