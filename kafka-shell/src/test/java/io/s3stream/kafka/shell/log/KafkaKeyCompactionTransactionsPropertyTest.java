package io.s3stream.kafka.shell.log;

import io.s3stream.KeyCompaction;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Seeded histories of plain and transactional writes by a few producers, committed and aborted, compacted pass after
 * pass as the library does it (every stored batch in offset order, adjacent outputs sometimes merged, the clock and the
 * transaction checkpoint moving between passes). After every pass: the records kept are exactly the latest committed
 * or plain record of each key; every transaction with a record left still has its marker; abort markers stay; a commit
 * marker goes only after its delete horizon and below the checkpoint; and once time passes, every commit marker whose
 * transaction has no record left is gone.
 */
class KafkaKeyCompactionTransactionsPropertyTest {
    private static final long RETENTION_MS = 100;

    /** A stored batch: its offsets and payload (one or more Kafka batches). */
    private record Stored(long base, int count, ByteBuffer payload) {
    }

    private final AtomicLong now = new AtomicLong(1_000_000);
    private final List<PartitionTxns.Aborted> aborted = new ArrayList<>();
    private long checkpointed;
    private final KafkaKeyCompaction compaction = new KafkaKeyCompaction(
            () -> new KafkaKeyCompaction.Transactions(Long.MAX_VALUE, List.copyOf(aborted), checkpointed),
            () -> Map.of("cleanup.policy", "compact", "delete.retention.ms", Long.toString(RETENTION_MS)), now::get);

    private static SimpleRecord record(int key, String value) {
        return new SimpleRecord(0, ("k" + key).getBytes(StandardCharsets.UTF_8),
                value.getBytes(StandardCharsets.UTF_8));
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
    void compactionKeepsWhatReadCommittedReadersNeedAndDropsSpentCommitMarkers(long seed) {
        Random random = new Random(seed);
        List<Stored> log = new ArrayList<>();
        // The expected outcome: per key, its plain or committed record at the highest offset (offset order, as Kafka).
        Map<String, Long> latestOffset = new HashMap<>();
        Map<String, String> latestValue = new HashMap<>();
        Map<Long, List<String[]>> openTxns = new TreeMap<>(); // producer -> its open transaction's key/value pairs
        Map<Long, Long> openSince = new HashMap<>();
        Set<Long> abortMarkers = new HashSet<>();
        long next = 0;
        for (int op = 0; op < 120 || !openTxns.isEmpty(); op++) {
            // After 120 operations, only the transactions still open are ended.
            long producer = op >= 120 ? openTxns.keySet().iterator().next() : 1 + random.nextInt(3);
            if (openTxns.containsKey(producer) && (op >= 120 || random.nextInt(3) == 0)) {
                boolean commit = random.nextInt(4) != 0;
                ByteBuffer marker = MemoryRecords.withEndTransactionMarker(next, 0, 0, producer, (short) 0,
                        new EndTransactionMarker(commit ? ControlRecordType.COMMIT : ControlRecordType.ABORT, 0))
                        .buffer();
                if (commit) {
                    for (String[] kv : openTxns.get(producer)) {
                        long offset = Long.parseLong(kv[1].substring(1));
                        if (offset > latestOffset.getOrDefault(kv[0], -1L)) {
                            latestOffset.put(kv[0], offset);
                            latestValue.put(kv[0], kv[1]);
                        }
                    }
                } else {
                    aborted.add(new PartitionTxns.Aborted(producer, openSince.get(producer), next));
                    abortMarkers.add(next);
                }
                openTxns.remove(producer);
                log.add(new Stored(next++, 1, marker));
                continue;
            }
            int n = 1 + random.nextInt(3);
            SimpleRecord[] records = new SimpleRecord[n];
            String[][] pairs = new String[n][];
            for (int i = 0; i < n; i++) {
                int key = random.nextInt(8);
                String value = "v" + (next + i);
                records[i] = record(key, value);
                pairs[i] = new String[] {"k" + key, value};
            }
            ByteBuffer payload;
            if (random.nextBoolean()) {
                payload = MemoryRecords.withRecords(next, Compression.NONE, records).buffer();
                for (String[] kv : pairs) {
                    latestOffset.put(kv[0], Long.parseLong(kv[1].substring(1)));
                    latestValue.put(kv[0], kv[1]);
                }
            } else {
                payload = MemoryRecords.withTransactionalRecords(next, Compression.NONE, producer, (short) 0, 0, 0,
                        records).buffer();
                if (!openTxns.containsKey(producer)) {
                    openSince.put(producer, next);
                }
                openTxns.computeIfAbsent(producer, p -> new ArrayList<>()).addAll(List.of(pairs));
            }
            log.add(new Stored(next, n, payload));
            next += n;
        }
        long end = next;
        // Values ("v" and the offset) never repeat: the expected outcome is the value of each key's latest record.
        List<String> expected = List.copyOf(latestValue.values());

        Map<Long, Long> horizons = new HashMap<>(); // commit marker offset -> its delete horizon, after the last pass
        for (int pass = 0; pass < 12; pass++) {
            now.addAndGet(pass < 9 ? random.nextInt(80) : 1_000);
            checkpointed = pass < 9 && random.nextBoolean() ? random.nextLong(end + 1) : end;
            log = pass(log, random);

            List<String> kept = new ArrayList<>();
            Map<Long, Long> present = new HashMap<>(); // marker offset (with its record) -> horizon or -1
            Set<Long> spent = new HashSet<>(); // commit markers present whose transaction has no record left
            Set<Long> txnsWithRecords = new HashSet<>();
            for (Stored s : log) {
                long at = s.base();
                for (MutableRecordBatch b : MemoryRecords.readableRecords(s.payload().duplicate()).batches()) {
                    b.ensureValid();
                    assertThat(b.baseOffset()).as("seed %d pass %d: batches are contiguous", seed, pass)
                            .isGreaterThanOrEqualTo(at);
                    at = b.lastOffset() + 1;
                    if (b.isControlBatch()) {
                        if (b.countOrNull() > 0) {
                            present.put(b.baseOffset(), b.deleteHorizonMs().orElse(-1));
                            if (!txnsWithRecords.remove(b.producerId()) && !abortMarkers.contains(b.baseOffset())) {
                                spent.add(b.baseOffset());
                            }
                        }
                        continue;
                    }
                    for (Record r : b) {
                        kept.add(StandardCharsets.UTF_8.decode(r.value()).toString());
                        if (b.isTransactional()) {
                            txnsWithRecords.add(b.producerId());
                        }
                    }
                }
                assertThat(at).as("seed %d pass %d: a stored batch's Kafka batches end at its end", seed, pass)
                        .isEqualTo(s.base() + s.count());
            }
            assertThat(kept).as("seed %d pass %d: the latest plain or committed value of each key", seed, pass)
                    .containsExactlyInAnyOrderElementsOf(expected);
            assertThat(txnsWithRecords).as("seed %d pass %d: a kept transactional record is followed by its marker",
                    seed, pass).isEmpty();
            assertThat(present.keySet()).as("seed %d pass %d: abort markers stay", seed, pass)
                    .containsAll(abortMarkers);
            for (Map.Entry<Long, Long> before : horizons.entrySet()) {
                long offset = before.getKey();
                if (!present.containsKey(offset)) {
                    assertThat(before.getValue()).as("seed %d pass %d: marker %d went before its horizon", seed, pass,
                            offset).isPositive().isLessThanOrEqualTo(now.get());
                    assertThat(offset).as("seed %d pass %d: marker %d went above the checkpoint", seed, pass, offset)
                            .isLessThan(checkpointed);
                }
            }
            horizons = new HashMap<>();
            for (Map.Entry<Long, Long> m : present.entrySet()) {
                if (!abortMarkers.contains(m.getKey())) {
                    horizons.put(m.getKey(), m.getValue());
                }
            }
            if (pass == 11) {
                // Time passed and the checkpoint covers everything: only markers of transactions with records remain.
                assertThat(spent).as("seed %d: commit markers of transactions without records", seed).isEmpty();
            }
        }
    }

    /**
     * One pass as the library runs it: indexes every key, rewrites every stored batch in offset order, and merges runs
     * of adjacent outputs into one stored batch.
     */
    private List<Stored> pass(List<Stored> log, Random random) {
        compaction.cleanableEndOffset();
        Map<ByteBuffer, Long> latest = new HashMap<>();
        for (Stored s : log) {
            compaction.keys(s.base(), s.count(), s.payload().duplicate(), (offset, key) -> {
                ByteBuffer copy = ByteBuffer.allocate(key.remaining()).put(key.duplicate()).flip();
                latest.put(copy, offset);
            });
        }
        KeyCompaction.LatestFilter filter = (offset, key) -> latest.getOrDefault(key, -1L) <= offset;
        List<Stored> out = new ArrayList<>();
        for (Stored s : log) {
            ByteBuffer rewritten = compaction.rewrite(s.base(), s.count(), s.payload().duplicate(), filter);
            ByteBuffer copy = ByteBuffer.allocate(rewritten.remaining()).put(rewritten.duplicate()).flip();
            Stored mine = new Stored(s.base(), s.count(), copy);
            if (!out.isEmpty() && random.nextInt(3) != 0) {
                Stored previous = out.removeLast();
                ByteBuffer joined = ByteBuffer.allocate(previous.payload().remaining() + copy.remaining())
                        .put(previous.payload().duplicate()).put(copy.duplicate()).flip();
                mine = new Stored(previous.base(), previous.count() + s.count(), joined);
            }
            out.add(mine);
        }
        compaction.rewriteAgainAtMs();
        return out;
    }
}
