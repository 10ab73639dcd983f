package io.s3stream.kafka.shell.log;

import io.s3stream.KeyValues;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentSkipListMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link TimeIndex} against a model partition, seeded: batches of records with timestamps that grow, grow with
 * disorder, or are random; restarts after a checkpoint (the run goes on) and after a crash (the batches since the last
 * checkpoint are unknown); retention, and records removed as key compaction would. Whatever the history, no range the
 * index lets a search skip holds a record at or above the target, so the first record a skipping scan finds is the
 * first one a full scan finds. With growing timestamps a search reads about one entry's worth of batches (the entries
 * of a 1 GiB partition are under 4 MiB apart).
 */
class TimeIndexPropertyTest {
    private static final int SEEDS = Integer.getInteger("s3stream.simulation.seeds", 40);

    /** A batch in the model: offsets [base, base + timestamps.length), one timestamp per record (-1: removed). */
    private record Batch(long base, long[] timestamps, int bytes) {
        long last() {
            return base + timestamps.length - 1;
        }

        long max() {
            long max = Long.MIN_VALUE;
            for (long t : timestamps) {
                max = Math.max(max, t);
            }
            return max;
        }
    }

    @Test
    void noSkippedRangeHoldsARecordAtOrAboveTheTarget() {
        long base = Long.getLong("s3stream.seed", System.nanoTime());
        for (int i = 0; i < SEEDS; i++) {
            run(base + i);
        }
    }

    private void run(long seed) {
        Random random = new Random(seed);
        MapKeyValues kv = new MapKeyValues();
        TimeIndex index = new TimeIndex(kv, 7, "t-0");
        index.load();
        List<Batch> batches = new ArrayList<>();
        int mode = random.nextInt(3); // 0 growing, 1 growing with disorder, 2 random
        long next = 0;
        long logStart = 0;
        long clock = 1_700_000_000_000L;
        int appends = 500 + random.nextInt(3000);
        for (int i = 0; i < appends; i++) {
            int count = 1 + random.nextInt(5);
            long[] ts = new long[count];
            for (int r = 0; r < count; r++) {
                clock += random.nextInt(20);
                ts[r] = switch (mode) {
                    case 0 -> clock;
                    case 1 -> clock + random.nextInt(2_000) - 1_000;
                    default -> 1_700_000_000_000L + random.nextInt(1_000_000);
                };
            }
            Batch b = new Batch(next, ts, 100 + random.nextInt(random.nextInt(10) == 0 ? 2 << 20 : 64 << 10));
            batches.add(b);
            next += count;
            index.onAppend(b.base(), b.last(), b.max(), b.bytes(), CompletableFuture.completedFuture(null), logStart);
            int event = random.nextInt(1_000);
            if (event < 3) { // a crash: what the last checkpoint covers is known, the rest is a hole
                index = new TimeIndex(kv, 7, "t-0");
                index.load();
            } else if (event < 6) { // retired (moved, or a clean stop) and opened again
                index.writeAll(logStart, next).join();
                index = new TimeIndex(kv, 7, "t-0");
                index.load();
            } else if (event < 10 && !batches.isEmpty()) { // retention
                logStart = Math.min(next, logStart + random.nextInt(200));
            } else if (event < 30) { // key compaction removes records
                Batch victim = batches.get(random.nextInt(batches.size()));
                victim.timestamps()[random.nextInt(victim.timestamps().length)] = -1;
            }
            if (i % 100 == 99) {
                check(index, batches, logStart, random, seed, mode);
            }
        }
        check(index, batches, logStart, random, seed, mode);
        assertThat(index.entries()).as("entries stay bounded (seed %d)", seed).isLessThanOrEqualTo(
                TimeIndex.MAX_ENTRIES);
        assertThat(index.runs()).isLessThanOrEqualTo(TimeIndex.MAX_RUNS);
    }

    private void check(TimeIndex index, List<Batch> batches, long logStart, Random random, long seed, int mode) {
        long min = Long.MAX_VALUE;
        long max = Long.MIN_VALUE;
        for (Batch b : batches) {
            for (long t : b.timestamps()) {
                if (t >= 0) {
                    min = Math.min(min, t);
                    max = Math.max(max, t);
                }
            }
        }
        checkMax(index, batches, logStart, seed);
        for (int q = 0; q < 20; q++) {
            long target = switch (random.nextInt(4)) {
                case 0 -> min - 1 - random.nextInt(1000);
                case 1 -> max + 1 + random.nextInt(1000);
                default -> min + (long) (random.nextDouble() * (max - min + 1));
            };
            TimeIndex.Skips skips = index.skips(target);
            for (long[] range : skips.ranges()) {
                for (Batch b : batches) {
                    for (int r = 0; r < b.timestamps().length; r++) {
                        long offset = b.base() + r;
                        long t = b.timestamps()[r];
                        assertThat(offset >= range[0] && offset < range[1] && offset >= logStart && t >= target)
                                .as("seed %d mode %d: offset %d (timestamp %d) is in skipped range [%d, %d) for "
                                        + "target %d", seed, mode, offset, t, range[0], range[1], target).isFalse();
                    }
                }
            }
            long answer = firstAtOrAbove(batches, logStart, target);
            long from = skips.next(logStart);
            assertThat(answer < 0 || answer >= from).as("seed %d: the scan starts at or before the answer", seed)
                    .isTrue();
        }
    }

    /**
     * Max timestamp as the search does it: a scan that skips what holds nothing at or above the index's largest
     * maximum, trusted only when it found a record at that bound (else the whole partition is scanned). Checks that a
     * trusted answer is the first record with the largest timestamp left.
     */
    private static void checkMax(TimeIndex index, List<Batch> batches, long logStart, long seed) {
        long bound = index.maxTimestamp(logStart);
        TimeIndex.Skips skips = index.skips(bound);
        long[] bounded = firstMax(batches, logStart, skips);
        long[] full = firstMax(batches, logStart, new TimeIndex.Skips(List.of()));
        if (bound != Long.MIN_VALUE && bounded[1] >= bound) {
            assertThat(bounded).as("seed %d: the bounded scan's maximum (bound %d)", seed, bound).containsExactly(full);
        }
    }

    /** {offset, timestamp} of the first record with the largest timestamp outside {@code skips}, or {-1, MIN}. */
    private static long[] firstMax(List<Batch> batches, long logStart, TimeIndex.Skips skips) {
        long[] best = {-1, Long.MIN_VALUE};
        for (Batch b : batches) {
            for (int r = 0; r < b.timestamps().length; r++) {
                long offset = b.base() + r;
                if (offset >= logStart && b.timestamps()[r] >= 0 && skips.next(offset) == offset
                        && b.timestamps()[r] > best[1]) {
                    best[0] = offset;
                    best[1] = b.timestamps()[r];
                }
            }
        }
        return best;
    }

    private static long totalBytes(List<Batch> batches) {
        long total = 0;
        for (Batch b : batches) {
            total += b.bytes();
        }
        return total;
    }

    private static long firstAtOrAbove(List<Batch> batches, long logStart, long target) {
        for (Batch b : batches) {
            for (int r = 0; r < b.timestamps().length; r++) {
                if (b.base() + r >= logStart && b.timestamps()[r] >= target) {
                    return b.base() + r;
                }
            }
        }
        return -1;
    }

    @Test
    void withGrowingTimestampsASearchReadsAboutOneEntrysWorthOfBatches() {
        long seed = Long.getLong("s3stream.seed", System.nanoTime());
        Random random = new Random(seed);
        TimeIndex index = new TimeIndex(new MapKeyValues(), 7, "t-0");
        index.load();
        List<Batch> batches = new ArrayList<>();
        long next = 0;
        for (int i = 0; i < 20_000; i++) { // about 1 GiB
            Batch b = new Batch(next, new long[]{1_000L * i, 1_000L * i + 500}, 40_000 + random.nextInt(20_000));
            batches.add(b);
            next += 2;
            index.onAppend(b.base(), b.last(), b.max(), b.bytes(), CompletableFuture.completedFuture(null), 0);
        }
        long total = totalBytes(batches);
        assertThat(index.entries()).isBetween(TimeIndex.MAX_ENTRIES / 2, TimeIndex.MAX_ENTRIES);
        for (int q = 0; q < 200; q++) {
            long target = random.nextLong(20_000_000L);
            long answer = firstAtOrAbove(batches, 0, target);
            long from = index.skips(target).next(0);
            long read = 0;
            for (Batch b : batches) {
                if (b.last() >= from && b.base() <= answer) {
                    read += b.bytes();
                }
            }
            assertThat(read).as("seed %d target %d: bytes read from %d to the answer %d", seed, target, from, answer)
                    .isLessThanOrEqualTo(4 * total / TimeIndex.MAX_ENTRIES + 2 * 60_000);
        }
    }

    /**
     * 4 GB appended while retention keeps the last ~100 MB: the entries follow the live data (pruned below the log
     * start, spacing back down to 1 MiB), so a search still reads about 1 MiB, not the spacing 4 GB would have grown
     * to.
     */
    @Test
    void underRetentionTheEntriesFollowTheLiveData() {
        long seed = Long.getLong("s3stream.seed", System.nanoTime());
        Random random = new Random(seed);
        TimeIndex index = new TimeIndex(new MapKeyValues(), 7, "t-0");
        index.load();
        List<Batch> batches = new ArrayList<>();
        long next = 0;
        long logStart = 0;
        for (int i = 0; i < 80_000; i++) {
            Batch b = new Batch(next, new long[]{1_000L * i, 1_000L * i + 500}, 40_000 + random.nextInt(20_000));
            batches.add(b);
            next += 2;
            if (batches.size() > 2_000) {
                logStart = batches.get(batches.size() - 2_000).base();
            }
            index.onAppend(b.base(), b.last(), b.max(), b.bytes(), CompletableFuture.completedFuture(null), logStart);
        }
        List<Batch> live = batches.subList(batches.size() - 2_000, batches.size());
        long liveBase = live.getFirst().base();
        for (int q = 0; q < 100; q++) {
            long target = live.getFirst().timestamps()[0] + random.nextLong(2_000_000L);
            long answer = firstAtOrAbove(live, liveBase, target);
            long from = index.skips(target).next(liveBase);
            long read = 0;
            for (Batch b : live) {
                if (b.last() >= from && b.base() <= answer) {
                    read += b.bytes();
                }
            }
            assertThat(read).as("seed %d target %d: bytes read from %d to the answer %d", seed, target, from, answer)
                    .isLessThanOrEqualTo(TimeIndex.MIN_SPACING + 3 * 60_000);
        }
        assertThat(index.entries()).as("entries over the live data only").isLessThanOrEqualTo(130);
    }

    @Test
    void anUnreadableCheckpointLeavesAnEmptyIndexThatSkipsNothing() {
        MapKeyValues kv = new MapKeyValues();
        kv.put(TimeIndex.key(7), new byte[]{1, 0, 0, 0, 9, 0}).join(); // version 1, 9 runs, then nothing
        TimeIndex index = new TimeIndex(kv, 7, "t-0");
        index.load();
        assertThat(index.runs()).isZero();
        assertThat(index.skips(5).ranges()).isEmpty();
        kv.put(TimeIndex.key(7), new byte[]{99}).join(); // a version this shell does not read
        index = new TimeIndex(kv, 7, "t-0");
        index.load();
        assertThat(index.runs()).isZero();
    }

    @Test
    void aCheckpointIsWrittenOnlyOnceItsAppendsAreDurable() {
        MapKeyValues kv = new MapKeyValues();
        TimeIndex index = new TimeIndex(kv, 7, "t-0");
        index.load();
        CompletableFuture<Void> durable = new CompletableFuture<>();
        index.onAppend(0, 0, 100, (int) TimeIndex.CHECKPOINT_BYTES, durable, 0);
        assertThat(kv.map).as("not before the append is durable").isEmpty();
        durable.complete(null);
        assertThat(kv.map).containsKey(TimeIndex.key(7));
        TimeIndex reopened = new TimeIndex(kv, 7, "t-0");
        reopened.load();
        assertThat(reopened.skips(101).ranges()).as("the whole run is below 101")
                .containsExactly(new long[]{0, 1});
        assertThat(reopened.writeAll(0, 0).isDone()).isTrue();
        index.onAppend(1, 1, 200, 10, new CompletableFuture<>(), 0);
        index.writeAll(0, 1).join(); // offset 1 is not durable: nothing written
        TimeIndex again = new TimeIndex(kv, 7, "t-0");
        again.load();
        assertThat(again.skips(1_000).ranges()).containsExactly(new long[]{0, 1});
    }

    /** A key-value space in a map, completing every call at once. */
    static final class MapKeyValues implements KeyValues {
        final ConcurrentSkipListMap<String, byte[]> map = new ConcurrentSkipListMap<>();

        @Override
        public CompletableFuture<Optional<byte[]>> get(String key) {
            return CompletableFuture.completedFuture(Optional.ofNullable(map.get(key)));
        }

        @Override
        public CompletableFuture<Void> put(String key, byte[] value) {
            map.put(key, value.clone());
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Void> delete(String key) {
            map.remove(key);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<SortedMap<String, byte[]>> list(String prefix) {
            TreeMap<String, byte[]> out = new TreeMap<>();
            map.tailMap(prefix).forEach((k, v) -> {
                if (k.startsWith(prefix)) {
                    out.put(k, v);
                }
            });
            return CompletableFuture.completedFuture(out);
        }

        @Override
        public CompletableFuture<Void> sync() {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Boolean> compareAndSet(String key, byte[] expected, byte[] value) {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<Void> update(Map<String, byte[]> puts, Collection<String> deletes) {
            puts.forEach(this::put);
            deletes.forEach(this::delete);
            return CompletableFuture.completedFuture(null);
        }
    }
}
