package io.s3stream.internal.engine;

import io.s3stream.cache.ReadAheadWindow;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Recognises sequential readers of each stream and keeps one {@link ReadAheadWindow} per reader.
 *
 * <p>Design note: the engine does not know its readers (a fetch carries a stream and an offset, nothing else), so a
 * reader is recognised by its position: a fetch from objects that starts exactly where an earlier fetch of the same
 * stream ended continues that reader; any other fetch starts a new one. A reader becomes <em>sequential</em> on its
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
        long nextOffset;
        int consecutiveFetches;

        Reader(ReadAheadWindow window, long nextOffset) {
            this.window = window;
            this.nextOffset = nextOffset;
        }

        boolean sequential() {
            return consecutiveFetches >= 1;
        }
    }

    /** The readers of one stream, most recently active last. */
    private static final class Readers {
        final LinkedHashMap<Long, Reader> byNextOffset = new LinkedHashMap<>(8, 0.75f, true);
    }

    /**
     * Finds the reader continuing at {@code fetchStart}, or starts one. The returned reader is this fetch's until
     * {@link #advance}; a second fetch at the same offset (a retry) starts its own.
     */
    Reader begin(long streamId, long fetchStart) {
        Readers readers = streams.computeIfAbsent(streamId, k -> new Readers());
        synchronized (readers) {
            Reader r = readers.byNextOffset.remove(fetchStart);
            if (r != null) {
                r.consecutiveFetches++;
                sequentialFetches.increment();
                return r;
            }
            return new Reader(new ReadAheadWindow(minWindowBytes, maxWindowBytes), fetchStart);
        }
    }

    /** Records where the reader's fetch ended; its next fetch is expected there. */
    void advance(long streamId, Reader reader, long nextOffset) {
        Readers readers = streams.computeIfAbsent(streamId, k -> new Readers());
        synchronized (readers) {
            reader.nextOffset = nextOffset;
            readers.byNextOffset.put(nextOffset, reader);
            Iterator<Reader> oldest = readers.byNextOffset.values().iterator();
            while (readers.byNextOffset.size() > READERS_PER_STREAM) {
                oldest.next();
                oldest.remove();
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
                for (Reader r : readers.byNextOffset.values()) {
                    if (r.sequential()) {
                        out.add(r.window.bytes());
                    }
                }
            }
        }
        return out;
    }
}
