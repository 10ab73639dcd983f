package io.s3stream.kafka.shell.log;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The transaction state of one partition: which producers have a transaction open in it (from which offset), which
 * transactions ended by an abort marker (the aborted-transactions index), and what follows for readers: the last
 * stable offset (LSO), below which every transaction is decided.
 *
 * <h2>Concurrency</h2>
 * Mutated only by the partition's appender, at the moment an append or a marker is given its offset. Readers use the
 * immutable {@link View} it publishes after each change; the view keeps a transaction open until its marker is below
 * the high watermark, so a reader never passes a transaction whose marker is not durable yet.
 *
 * <h2>Durability</h2>
 * Everything here is derived from the stream: transactional batches and control batches (markers) are in the
 * partition's data, in order. A {@link #checkpoint checkpoint} in the shared key-value space only bounds how much of
 * the stream is scanned to rebuild it after an open; losing one costs a longer scan, never a wrong answer.
 */
public final class PartitionTxns {
    /** A transaction of {@code producerId} that started at {@code firstOffset} and was aborted by the marker at {@code lastOffset}. */
    public record Aborted(long producerId, long firstOffset, long lastOffset) {
    }

    /** A transaction not decided for readers yet: no marker, or a marker at {@code markerOffset} not yet durable. */
    public record Open(long producerId, long firstOffset, long markerOffset) {
        static final long NO_MARKER = Long.MAX_VALUE;
    }

    /** What readers see: immutable. */
    record View(List<Open> open, List<Aborted> aborted) {
        static final View EMPTY = new View(List.of(), List.of());

        /** The first offset a read_committed reader may not read: the start of the oldest undecided transaction. */
        long lastStableOffset(long highWatermark) {
            long lso = highWatermark;
            for (Open o : open) {
                if (o.markerOffset >= highWatermark && o.firstOffset < lso) {
                    lso = o.firstOffset;
                }
            }
            return lso;
        }

        /** The aborted transactions that overlap offsets {@code [from, upTo)}, oldest first. */
        List<Aborted> abortedBetween(long from, long upTo) {
            List<Aborted> out = new ArrayList<>();
            for (Aborted a : aborted) {
                if (a.lastOffset >= from && a.firstOffset < upTo) {
                    out.add(a);
                }
            }
            return out;
        }
    }

    /** Producer id → first offset of its open transaction here; no marker assigned yet. */
    private final Map<Long, Long> open = new HashMap<>();
    /** Transactions whose marker has an offset but may not be durable: kept in views until the HW passes it. */
    private final List<Open> marked = new ArrayList<>();
    private final List<Aborted> aborted = new ArrayList<>();
    private volatile View view = View.EMPTY;

    View view() {
        return view;
    }

    /** The first offset of {@code producerId}'s open transaction here, -1 if it has none. */
    long openSince(long producerId) {
        return open.getOrDefault(producerId, -1L);
    }

    boolean isOpen(long producerId) {
        return open.containsKey(producerId);
    }

    /** A transactional batch of {@code producerId} got offset {@code baseOffset}: opens its transaction if it has none. */
    void onTransactionalBatch(long producerId, long baseOffset) {
        if (open.putIfAbsent(producerId, baseOffset) == null) {
            publish(-1);
        }
    }

    /**
     * A marker of {@code producerId} got offset {@code markerOffset}: its transaction ends there (a marker without an
     * open transaction, a coordinator's retry, changes nothing). {@code highWatermark} lets settled markers go.
     */
    void onMarker(long producerId, boolean commit, long markerOffset, long highWatermark) {
        Long first = open.remove(producerId);
        if (first == null) {
            return;
        }
        if (!commit) {
            aborted.add(new Aborted(producerId, first, markerOffset));
        }
        marked.add(new Open(producerId, first, markerOffset));
        publish(highWatermark);
    }

    /** Forgets aborted transactions that end below {@code logStartOffset} (retention trimmed them). */
    void trimBelow(long logStartOffset) {
        if (aborted.removeIf(a -> a.lastOffset < logStartOffset)) {
            publish(-1);
        }
    }

    private void publish(long highWatermark) {
        if (highWatermark >= 0) {
            marked.removeIf(m -> m.markerOffset < highWatermark);
        }
        List<Open> all = new ArrayList<>(marked);
        open.forEach((pid, first) -> all.add(new Open(pid, first, Open.NO_MARKER)));
        view = new View(List.copyOf(all), List.copyOf(aborted));
    }

    // ---------------------------------------------------------------- checkpoint

    /**
     * The state as of {@code offset}, encoded for the key-value space: only transactions opened below {@code offset}
     * and aborts whose marker is below it. Taken on the appender when {@code offset} is the next offset to assign, so
     * the encoding is exactly the state of the first {@code offset} offsets; written once they are durable.
     */
    byte[] checkpoint(long offset) {
        StringBuilder b = new StringBuilder("v1 ").append(offset).append('\n');
        open.forEach((pid, first) -> {
            if (first < offset) {
                b.append("o ").append(pid).append(' ').append(first).append('\n');
            }
        });
        for (Open m : marked) {
            // Marked but before the checkpoint's offset: decided, so not open in the checkpoint.
            if (m.firstOffset < offset && m.markerOffset >= offset) {
                b.append("o ").append(m.producerId).append(' ').append(m.firstOffset).append('\n');
            }
        }
        for (Aborted a : aborted) {
            if (a.lastOffset < offset) {
                b.append("a ").append(a.producerId).append(' ').append(a.firstOffset).append(' ').append(a.lastOffset).append('\n');
            }
        }
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Replaces the state by a decoded checkpoint; returns the offset it holds the state of. A checkpoint beyond
     * {@code end} (the stream's durable end: appends after it were lost with a failed writer) is cut back to it.
     */
    long restore(byte[] encoded, long end) {
        open.clear();
        marked.clear();
        aborted.clear();
        String[] lines = new String(encoded, StandardCharsets.UTF_8).split("\n");
        String[] head = lines[0].split(" ");
        if (!head[0].equals("v1")) {
            throw new IllegalArgumentException("unknown transaction checkpoint format: " + lines[0]);
        }
        for (int i = 1; i < lines.length; i++) {
            String[] f = lines[i].split(" ");
            switch (f[0]) {
                case "o" -> {
                    long first = Long.parseLong(f[2]);
                    if (first < end) {
                        open.put(Long.parseLong(f[1]), first);
                    }
                }
                case "a" -> {
                    Aborted a = new Aborted(Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]));
                    if (a.lastOffset < end) {
                        aborted.add(a);
                    }
                }
                default -> throw new IllegalArgumentException("bad transaction checkpoint line: " + lines[i]);
            }
        }
        publish(-1);
        return Math.min(Long.parseLong(head[1]), end);
    }
}
