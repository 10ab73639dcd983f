package io.s3stream.internal.compaction;

import io.netty.buffer.ByteBuf;
import io.s3stream.internal.format.IndexEntry;
import io.s3stream.internal.store.ObjectStorage;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Reads chosen blocks of one object in position order with ranged GETs, never the whole object: adjacent blocks are
 * fetched together in spans of at most {@code chunkBytes} (a larger block is one span of its own), and up to
 * {@code readAhead} spans are in flight. Memory held is at most {@code readAhead} spans, counted in the gauge.
 *
 * <p>Owner: the compactor thread. {@link #next()} hands out a retained slice the caller releases; {@link #close()}
 * releases whatever is still buffered or in flight.
 */
final class SpanReader implements AutoCloseable {
    private final ObjectStorage store;
    private final String key;
    private final MemoryGauge gauge;
    private final Throttle throttle;
    private final int readAhead;
    private final ArrayDeque<List<IndexEntry>> spans = new ArrayDeque<>();
    private final ArrayDeque<Pending> inflight = new ArrayDeque<>();
    private Pending current;
    private int nextInSpan;

    private record Pending(List<IndexEntry> span, long bytes, CompletableFuture<ByteBuf> data) {
    }

    SpanReader(ObjectStorage store, String key, List<IndexEntry> blocks, long chunkBytes, int readAhead,
               MemoryGauge gauge, Throttle throttle) {
        this.store = store;
        this.key = key;
        this.gauge = gauge;
        this.throttle = throttle;
        this.readAhead = Math.max(1, readAhead);
        List<IndexEntry> span = new ArrayList<>();
        long spanBytes = 0;
        for (IndexEntry e : blocks) {
            boolean adjacent = !span.isEmpty() && span.getLast().endPosition() == e.position();
            if (!span.isEmpty() && (!adjacent || spanBytes + e.sizeBytes() > chunkBytes)) {
                spans.add(span);
                span = new ArrayList<>();
                spanBytes = 0;
            }
            span.add(e);
            spanBytes += e.sizeBytes();
        }
        if (!span.isEmpty()) {
            spans.add(span);
        }
    }

    /** The next block (a retained slice; the caller releases it), or null when every chosen block was returned. */
    ByteBuf next() {
        if (current != null && nextInSpan == current.span.size()) {
            releaseCurrent();
        }
        if (current == null) {
            fill();
            if (inflight.isEmpty()) {
                return null;
            }
            current = inflight.poll();
            nextInSpan = 0;
            fill();
            current.data.join(); // failures surface here, on the owner thread
        }
        ByteBuf data = current.data.join();
        IndexEntry first = current.span.getFirst();
        IndexEntry e = current.span.get(nextInSpan++);
        return data.retainedSlice(data.readerIndex() + (int) (e.position() - first.position()), e.sizeBytes());
    }

    /** The entry of the block the last {@link #next()} returned. */
    IndexEntry lastEntry() {
        return current.span.get(nextInSpan - 1);
    }

    private void fill() {
        while (inflight.size() < readAhead && !spans.isEmpty()) {
            List<IndexEntry> span = spans.poll();
            long start = span.getFirst().position();
            long bytes = span.getLast().endPosition() - start;
            throttle.acquire(bytes);
            gauge.add(bytes);
            inflight.add(new Pending(span, bytes, store.get(key, start, (int) bytes, ObjectStorage.Priority.COMPACTION)));
        }
    }

    private void releaseCurrent() {
        release(current);
        current = null;
    }

    private void release(Pending p) {
        gauge.remove(p.bytes);
        p.data.whenComplete((buf, error) -> {
            if (buf != null) {
                buf.release();
            }
        });
    }

    @Override
    public void close() {
        if (current != null) {
            releaseCurrent();
        }
        while (!inflight.isEmpty()) {
            release(inflight.poll());
        }
        spans.clear();
    }
}
