package io.s3stream.internal.engine;

import io.s3stream.cache.ReadAheadWindow;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Recognises sequential readers of each stream and keeps one {@link ReadAheadWindow} per reader.
 *
 * <p>Design note: the engine does not know its readers (a fetch carries a stream and an offset, nothing else), so a
 * reader is recognised by its position: a fetch from objects that starts after the start of an earlier fetch of the
 * same stream and no later than where that fetch's data ended continues that reader; any other fetch (a retry from
 * the same offset included) starts a new one. "No later than the end", not "at the end": a reader need not take every
 * batch a fetch returned. kafka-shell leaves out the batches that would overflow the client's byte limit, and the
 * client asks again from the first one left out; until 2026-11-27 only an exact continuation counted, so no Kafka
 * consumer was ever recognised, read ahead or throttled as catch-up traffic. A reader becomes <em>sequential</em> on its
 * second consecutive fetch; only sequential readers read ahead and are treated as catch-up traffic. Each stream
 * remembers a few readers ({@value #READERS_PER_STREAM}, least recently active dropped first), enough for several
 * consumers replaying one partition; a dropped reader only loses its window. Fetches served by the log cache never
 * get here: tail readers neither read ahead nor count.
 */
final class ReadAhead {
    static final int READERS_PER_STREAM = 4;

    private final int minWindowBytes;
    private final int maxWindowBytes;
    private final boolean enabled;
    private final Map<Long, Readers> streams = new ConcurrentHashMap<>();
    final LongAdder sequentialFetches = new LongAdder();

    /**
     * @param minWindowBytes the first window of a sequential reader
     * @param maxWindowBytes the largest window; 0 disables read-ahead (readers are still recognised as catch-up)
     */
    ReadAhead(int minWindowBytes, int maxWindowBytes) {
        this.enabled = maxWindowBytes > 0;
        this.minWindowBytes = Math.max(1, Math.min(minWindowBytes, Math.max(1, maxWindowBytes)));
        this.maxWindowBytes = Math.max(this.minWindowBytes, maxWindowBytes);
    }

    boolean enabled() {
        return enabled;
    }

    /** One reader's position and window. */
    static final class Reader {
        final ReadAheadWindow window;
        /** Where the reader's current (or last) fetch started. */
        long fetchStart;
        /** Where the data of the reader's last fetch ended. */
        long nextOffset;
        int consecutiveFetches;

        Reader(ReadAheadWindow window, long fetchStart) {
            this.window = window;
            this.fetchStart = fetchStart;
            this.nextOffset = fetchStart;
        }

        boolean sequential() {
            return consecutiveFetches >= 1;
        }

        /** A fetch from {@code offset} continues this reader: past its last fetch's start, not past that data's end. */
        boolean continuedBy(long offset) {
            return offset > fetchStart && offset <= nextOffset;
        }
    }

    /** The readers of one stream between their fetches, most recently active last. */
    private static final class Readers {
        final List<Reader> idle = new ArrayList<>(READERS_PER_STREAM + 1);
    }

    /**
     * Finds the reader a fetch from {@code fetchStart} continues (the most recently active one, if several could), or
     * starts one. The returned reader is this fetch's until {@link #advance}.
     */
    Reader begin(long streamId, long fetchStart) {
        Readers readers = streams.computeIfAbsent(streamId, k -> new Readers());
        synchronized (readers) {
            for (int i = readers.idle.size() - 1; i >= 0; i--) {
                Reader r = readers.idle.get(i);
                if (r.continuedBy(fetchStart)) {
                    readers.idle.remove(i);
                    r.fetchStart = fetchStart;
                    r.consecutiveFetches++;
                    sequentialFetches.increment();
                    return r;
                }
            }
            return new Reader(new ReadAheadWindow(minWindowBytes, maxWindowBytes), fetchStart);
        }
    }

    /** Records where the data of the reader's fetch ended; its next fetch is expected up to there. */
    void advance(long streamId, Reader reader, long nextOffset) {
        Readers readers = streams.computeIfAbsent(streamId, k -> new Readers());
        synchronized (readers) {
            reader.nextOffset = nextOffset;
            readers.idle.add(reader);
            while (readers.idle.size() > READERS_PER_STREAM) {
                readers.idle.removeFirst();
            }
        }
    }

    /** Forgets a stream's readers (the stream was closed on this node). */
    void forget(long streamId) {
        streams.remove(streamId);
    }

    /** Current windows of the known sequential readers, for metrics. */
    List<Integer> windows() {
        List<Integer> out = new ArrayList<>();
        for (Readers readers : streams.values()) {
            synchronized (readers) {
                for (Reader r : readers.idle) {
                    if (r.sequential()) {
                        out.add(r.window.bytes());
                    }
                }
            }
        }
        return out;
    }
}
