package io.s3stream.kafka.shell.log;

import io.s3stream.KeyValues;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * One partition's sparse index from timestamps to offsets, so that ListOffsets by timestamp reads about one entry's
 * worth of batches instead of the whole partition.
 *
 * <h2>What it knows</h2>
 * A <em>run</em> is a range of offsets {@code [start, end)} whose batches the index saw appended, in order, none
 * missed. Its {@code max} is the largest batch max timestamp in it, and each of its entries
 * {@code (offset o, timestamp t)} says that no record in {@code [start, o)} has a timestamp above {@code t}; entries
 * are about {@link #MIN_SPACING} bytes of batches apart, further when a partition grows past {@link #MAX_ENTRIES}
 * entries. An append that continues
 * the last run extends it; one that does not (the first after an open that follows a crash: the batches since the last
 * checkpoint were never indexed) starts a new run. Between runs, and before the first (a partition written before the
 * index existed), nothing is known: a search reads those ranges. Records removed later (retention, DeleteRecords, key
 * compaction) leave every maximum an upper bound, so every statement stays true.
 *
 * <h2>A search</h2>
 * The first record whose timestamp is at least {@code ts} is where a scan of the whole partition would find it; a
 * search scans the same way but jumps over what {@link #skips} proves holds no such record: a run whose max is below
 * {@code ts}, and in a run that reaches it, the part before its last entry below {@code ts}. Timestamps that mostly
 * grow leave one entry's worth to read; disordered ones leave more, never a wrong answer.
 *
 * <h2>Checkpoints</h2>
 * The runs are stored in the key-value space ({@code kafka/time-index/<stream id>}) every {@link #CHECKPOINT_BYTES}
 * appended or {@link #CHECKPOINT_MS} while appends continue, once the appends they cover are durable (a failed append's
 * offsets are written again by other records), when the partition is retired (a move then continues the run) and
 * when the shell stops. One older than already written is dropped. Runs and entries below the log start are left out.
 *
 * <p>Thread-safe: appends and checkpoints come from the partition's appender, searches from request threads.
 */
public final class TimeIndex {
    private static final System.Logger LOG = System.getLogger(TimeIndex.class.getName());
    /** Where every partition's time index key starts; the stream id follows. */
    public static final String PREFIX = "kafka/time-index/";
    static final long MIN_SPACING = 1L << 20;
    static final int MAX_ENTRIES = 1024;
    static final int MAX_RUNS = 16;
    static final long CHECKPOINT_BYTES = 32L << 20;
    static final long CHECKPOINT_MS = 60_000;
    private static final byte VERSION = 1;

    private final KeyValues kv;
    private final String key;
    private final String partition;
    private final List<Run> runs = new ArrayList<>(); // guarded by this; in offset order, not overlapping
    private long spacing = MIN_SPACING; // guarded by this
    private long bytesSinceEntry; // guarded by this
    private long bytesSinceCheckpoint; // guarded by this
    private long checkpointAtMs = System.currentTimeMillis(); // guarded by this
    private final CheckpointWrites writes;

    TimeIndex(KeyValues kv, long streamId, String partition) {
        this.kv = kv;
        this.key = key(streamId);
        this.partition = partition;
        this.writes = new CheckpointWrites(kv, key, () -> partition + ": time index checkpoint not written (after a "
                + "crash the batches since the last one are read by searches)");
    }

    /** The key of stream {@code streamId}'s time index checkpoint, which goes with its topic. */
    public static String key(long streamId) {
        return PREFIX + streamId;
    }

    /** Reads the stored checkpoint (blocks); an unreadable one is logged and the index starts empty. */
    void load() {
        try {
            Optional<byte[]> stored = kv.get(key).join();
            if (stored.isPresent()) {
                List<Run> decoded = decode(stored.get());
                synchronized (this) {
                    runs.clear();
                    runs.addAll(decoded);
                    if (!decoded.isEmpty()) {
                        writes.found(decoded.getLast().end);
                    }
                }
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, () -> partition + ": the time index checkpoint could not be read; "
                    + "searches by timestamp read the batches appended before this open", e);
        }
    }

    /**
     * A batch of offsets {@code [base, last]} with max timestamp {@code maxTimestamp} and {@code bytes} bytes was
     * appended; {@code durable} completes when it is. Writes a checkpoint, after that, when one is due.
     */
    void onAppend(long base, long last, long maxTimestamp, int bytes, CompletableFuture<?> durable, long logStart) {
        byte[] checkpoint;
        long end;
        synchronized (this) {
            while (!runs.isEmpty() && runs.getLast().end > base) {
                runs.removeLast(); // covers offsets written again: not to be trusted (cannot happen: checkpoints are
                                   // written only for durable appends, and a failed append retires this index)
            }
            Run run = runs.isEmpty() ? null : runs.getLast();
            if (run == null || run.end != base) {
                run = new Run(base);
                runs.add(run);
                bytesSinceEntry = 0;
                if (runs.size() > MAX_RUNS) {
                    runs.removeFirst(); // its range becomes one to read
                }
            }
            run.end = last + 1;
            run.max = Math.max(run.max, maxTimestamp);
            bytesSinceEntry += bytes;
            bytesSinceCheckpoint += bytes;
            if (bytesSinceEntry >= spacing) {
                run.add(run.end, run.max);
                bytesSinceEntry = 0;
                if (entries() > MAX_ENTRIES) {
                    thin();
                }
            }
            long now = System.currentTimeMillis();
            if (bytesSinceCheckpoint < CHECKPOINT_BYTES && now - checkpointAtMs < CHECKPOINT_MS) {
                return;
            }
            bytesSinceCheckpoint = 0;
            checkpointAtMs = now;
            prune(logStart);
            checkpoint = encode(logStart);
            end = run.end;
        }
        durable.thenRun(() -> write(end, checkpoint));
    }

    /**
     * Writes the checkpoint of everything appended so far, for a partition being retired or a shell stopping; nothing
     * when an append past {@code durableEnd} (the stream's confirmed offset) is not durable (in flight, or failed).
     */
    public CompletableFuture<Void> writeAll(long logStart, long durableEnd) {
        byte[] checkpoint;
        long end;
        synchronized (this) {
            if (runs.isEmpty() || runs.getLast().end > durableEnd) {
                return CompletableFuture.completedFuture(null);
            }
            checkpoint = encode(logStart);
            end = runs.getLast().end;
        }
        return write(end, checkpoint);
    }

    /** Writes a checkpoint covering up to {@code end} after the writes before it; one older than written is dropped. */
    private CompletableFuture<Void> write(long end, byte[] checkpoint) {
        return writes.write(end, checkpoint, stored -> { });
    }

    /** What a search for the first record with a timestamp of at least {@code ts} need not read. */
    public synchronized Skips skips(long ts) {
        List<long[]> ranges = new ArrayList<>();
        for (Run run : runs) {
            if (run.max < ts) {
                ranges.add(new long[]{run.start, run.end});
            } else {
                int below = run.lastEntryBelow(ts);
                if (below >= 0) {
                    ranges.add(new long[]{run.start, run.offsets[below]});
                }
            }
        }
        return new Skips(ranges);
    }

    /**
     * The largest maximum of the runs that reach past {@code logStart}: no indexed record has a larger timestamp (the
     * batches outside the runs may), and one has this one unless it was removed. {@link Long#MIN_VALUE} when none.
     */
    public synchronized long maxTimestamp(long logStart) {
        long max = Long.MIN_VALUE;
        for (Run run : runs) {
            if (run.end > logStart) {
                max = Math.max(max, run.max);
            }
        }
        return max;
    }

    /** Ranges of offsets {@code [from, to)} that hold no record with a timestamp at or above a search's target. */
    public record Skips(List<long[]> ranges) {
        /** Where a scan that would read {@code offset} next goes instead. */
        public long next(long offset) {
            for (long[] r : ranges) {
                if (offset >= r[0] && offset < r[1]) {
                    offset = r[1];
                }
            }
            return offset;
        }
    }

    synchronized int entries() {
        int n = 0;
        for (Run run : runs) {
            n += run.size;
        }
        return n;
    }

    synchronized int runs() {
        return runs.size();
    }

    /**
     * Forgets what lies below the log start (retention, DeleteRecords), so that the entries describe the partition as
     * it is, and halves the spacing of new entries (down to {@link #MIN_SPACING}) while fewer than a quarter of
     * {@link #MAX_ENTRIES} are left: a partition whose retention removes as much as it takes keeps about as many
     * entries over its live data as one that only grows.
     */
    private void prune(long logStart) {
        runs.removeIf(run -> run.end <= logStart);
        for (Run run : runs) {
            run.dropEntriesUpTo(logStart);
        }
        if (spacing > MIN_SPACING && entries() < MAX_ENTRIES / 4) {
            spacing /= 2;
        }
    }

    /** Drops every other entry of the run with the most, and spaces new entries twice as far apart. */
    private void thin() {
        Run most = runs.getFirst();
        for (Run run : runs) {
            if (run.size > most.size) {
                most = run;
            }
        }
        int kept = 0;
        for (int i = 1; i < most.size; i += 2) {
            most.offsets[kept] = most.offsets[i];
            most.maxima[kept] = most.maxima[i];
            kept++;
        }
        most.size = kept;
        spacing *= 2;
    }

    /** The runs that reach past {@code logStart}, each without its entries at or below it. */
    private byte[] encode(long logStart) {
        List<Run> kept = new ArrayList<>();
        int entries = 0;
        for (Run run : runs) {
            if (run.end > logStart) {
                kept.add(run);
                entries += run.size - run.entriesUpTo(logStart);
            }
        }
        ByteBuffer out = ByteBuffer.allocate(1 + 4 + kept.size() * (3 * Long.BYTES + 4) + entries * 2 * Long.BYTES);
        out.put(VERSION).putInt(kept.size());
        for (Run run : kept) {
            int first = run.entriesUpTo(logStart);
            out.putLong(run.start).putLong(run.end).putLong(run.max).putInt(run.size - first);
            for (int i = first; i < run.size; i++) {
                out.putLong(run.offsets[i]).putLong(run.maxima[i]);
            }
        }
        return out.array();
    }

    private List<Run> decode(byte[] bytes) {
        try {
            ByteBuffer in = ByteBuffer.wrap(bytes);
            byte version = in.get();
            if (version != VERSION) {
                throw new IllegalStateException("time index checkpoint of version " + version + ", this shell reads "
                        + VERSION);
            }
            int count = in.getInt();
            List<Run> decoded = new ArrayList<>();
            for (int r = 0; r < count; r++) {
                Run run = new Run(in.getLong());
                run.end = in.getLong();
                run.max = in.getLong();
                int size = in.getInt();
                for (int i = 0; i < size; i++) {
                    run.add(in.getLong(), in.getLong());
                }
                if (run.end < run.start || (!decoded.isEmpty() && run.start < decoded.getLast().end)) {
                    throw new IllegalStateException("runs out of order at " + run.start);
                }
                decoded.add(run);
            }
            return decoded;
        } catch (BufferUnderflowException | NegativeArraySizeException e) {
            throw new IllegalStateException(partition + ": time index checkpoint " + key + " is truncated", e);
        }
    }

    /** A run of offsets the index saw appended without a gap, with its entries. */
    private static final class Run {
        final long start;
        long end;
        long max = Long.MIN_VALUE;
        long[] offsets = new long[8];
        long[] maxima = new long[8];
        int size;

        Run(long start) {
            this.start = start;
            this.end = start;
        }

        void add(long offset, long maxBefore) {
            if (size == offsets.length) {
                offsets = Arrays.copyOf(offsets, size * 2);
                maxima = Arrays.copyOf(maxima, size * 2);
            }
            offsets[size] = offset;
            maxima[size] = maxBefore;
            size++;
        }

        void dropEntriesUpTo(long offset) {
            int n = entriesUpTo(offset);
            if (n > 0) {
                System.arraycopy(offsets, n, offsets, 0, size - n);
                System.arraycopy(maxima, n, maxima, 0, size - n);
                size -= n;
            }
        }

        /** How many entries have an offset at or below {@code offset} (offsets grow). */
        int entriesUpTo(long offset) {
            int n = 0;
            while (n < size && offsets[n] <= offset) {
                n++;
            }
            return n;
        }

        /** The index of the last entry whose timestamp is below {@code ts} (maxima do not decrease), or -1. */
        int lastEntryBelow(long ts) {
            int lo = 0;
            int hi = size - 1;
            int found = -1;
            while (lo <= hi) {
                int mid = (lo + hi) >>> 1;
                if (maxima[mid] < ts) {
                    found = mid;
                    lo = mid + 1;
                } else {
                    hi = mid - 1;
                }
            }
            return found;
        }
    }
}
