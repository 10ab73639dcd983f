package io.s3stream.kafka.shell.log;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The partition's transaction state against a model, over random logs (seeded): the last stable offset, the aborted
 * index a read_committed fetch gets, and a checkpoint taken anywhere, restored and replayed to the end, which must
 * give the same answers as the live state.
 */
class PartitionTxnsTest {
    /** One entry of a partition's log: a data batch (transactional or not) or a marker, at {@code offset}. */
    private record Entry(long offset, long producerId, boolean transactional, boolean marker, boolean commit) {
    }

    private static List<Entry> randomLog(Random rnd, int length) {
        List<Entry> log = new ArrayList<>();
        Map<Long, Boolean> open = new HashMap<>();
        long offset = 0;
        for (int i = 0; i < length; i++) {
            long pid = rnd.nextInt(5);
            int kind = rnd.nextInt(10);
            if (kind < 2) {
                log.add(new Entry(offset, -1, false, false, false));
                offset += 1 + rnd.nextInt(3);
            } else if (kind < 7) {
                log.add(new Entry(offset, pid, true, false, false));
                open.put(pid, true);
                offset += 1 + rnd.nextInt(3);
            } else {
                // Markers also come for producers with nothing open here (a coordinator's retry).
                log.add(new Entry(offset, pid, false, true, rnd.nextBoolean()));
                open.remove(pid);
                offset += 1;
            }
        }
        return log;
    }

    private static void apply(PartitionTxns txns, Entry e, long hw) {
        if (e.marker) {
            txns.onMarker(e.producerId, e.commit, e.offset, hw);
        } else if (e.transactional) {
            txns.onTransactionalBatch(e.producerId, e.offset);
        }
    }

    /** The model: open transactions' first offsets and the aborted ones, by replaying {@code entries}. */
    private static long modelLso(List<Entry> entries, long hw) {
        Map<Long, Long> open = new HashMap<>();
        for (Entry e : entries) {
            if (e.marker) {
                open.remove(e.producerId);
            } else if (e.transactional) {
                open.putIfAbsent(e.producerId, e.offset);
            }
        }
        return open.values().stream().mapToLong(Long::longValue).min().orElse(hw);
    }

    private static List<PartitionTxns.Aborted> modelAborted(List<Entry> entries) {
        Map<Long, Long> open = new HashMap<>();
        List<PartitionTxns.Aborted> out = new ArrayList<>();
        for (Entry e : entries) {
            if (e.marker) {
                Long first = open.remove(e.producerId);
                if (first != null && !e.commit) {
                    out.add(new PartitionTxns.Aborted(e.producerId, first, e.offset));
                }
            } else if (e.transactional) {
                open.putIfAbsent(e.producerId, e.offset);
            }
        }
        return out;
    }

    @Test
    void lastStableOffsetAbortedIndexAndCheckpointsMatchTheModel() {
        for (long seed = 1; seed <= 300; seed++) {
            Random rnd = new Random(seed);
            List<Entry> log = randomLog(rnd, 1 + rnd.nextInt(60));
            long end = log.getLast().offset + 1;
            int cut = rnd.nextInt(log.size() + 1);
            long cutOffset = cut < log.size() ? log.get(cut).offset : end;

            PartitionTxns live = new PartitionTxns();
            byte[] checkpoint = null;
            for (int i = 0; i < log.size(); i++) {
                if (i == cut) {
                    checkpoint = live.checkpoint(cutOffset);
                }
                apply(live, log.get(i), end);
            }
            if (checkpoint == null) {
                checkpoint = live.checkpoint(end);
            }
            PartitionTxns restored = new PartitionTxns();
            long from = restored.restore(checkpoint, end);
            assertThat(from).as("seed %d", seed).isEqualTo(cutOffset);
            for (Entry e : log) {
                if (e.offset >= from) {
                    apply(restored, e, end);
                }
            }
            long lso = modelLso(log, end);
            List<PartitionTxns.Aborted> aborted = modelAborted(log);
            for (PartitionTxns state : List.of(live, restored)) {
                assertThat(state.view().lastStableOffset(end)).as("seed %d", seed).isEqualTo(lso);
                assertThat(state.view().abortedBetween(0, end)).as("seed %d", seed)
                        .containsExactlyInAnyOrderElementsOf(aborted);
            }
            long from2 = rnd.nextLong(end);
            long upTo = from2 + rnd.nextLong(end - from2 + 1);
            assertThat(live.view().abortedBetween(from2, upTo)).as("seed %d", seed).containsExactlyInAnyOrderElementsOf(
                    aborted.stream().filter(a -> a.lastOffset() >= from2 && a.firstOffset() < upTo).toList());
        }
    }

    @Test
    void aMarkerNotYetDurableKeepsItsTransactionUndecidedForReaders() {
        PartitionTxns txns = new PartitionTxns();
        txns.onTransactionalBatch(7, 10);
        txns.onMarker(7, false, 15, 12); // the marker took offset 15; the high watermark is 12
        assertThat(txns.view().lastStableOffset(12)).isEqualTo(10);
        assertThat(txns.view().lastStableOffset(16)).isEqualTo(16);
        assertThat(txns.view().abortedBetween(0, 16)).containsExactly(new PartitionTxns.Aborted(7, 10, 15));
    }

    @Test
    void aCheckpointBeyondTheDurableEndIsCutBack() {
        PartitionTxns txns = new PartitionTxns();
        txns.onTransactionalBatch(1, 5);
        txns.onTransactionalBatch(2, 20);
        byte[] checkpoint = txns.checkpoint(30);
        PartitionTxns restored = new PartitionTxns();
        assertThat(restored.restore(checkpoint, 12)).isEqualTo(12);
        assertThat(restored.isOpen(1)).isTrue();
        assertThat(restored.isOpen(2)).as("opened after the durable end: lost with it").isFalse();
    }

    @Test
    void trimmedAbortsAreForgotten() {
        PartitionTxns txns = new PartitionTxns();
        txns.onTransactionalBatch(1, 0);
        txns.onMarker(1, false, 3, 4);
        txns.onTransactionalBatch(1, 4);
        txns.onMarker(1, false, 8, 9);
        txns.trimBelow(5);
        assertThat(txns.view().abortedBetween(0, 9)).containsExactly(new PartitionTxns.Aborted(1, 4, 8));
    }
}
