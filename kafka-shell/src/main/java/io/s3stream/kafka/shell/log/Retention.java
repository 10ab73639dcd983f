package io.s3stream.kafka.shell.log;

import io.s3stream.FetchResult;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;

import java.util.Map;

/**
 * Retention by time ({@code retention.ms}) and size ({@code retention.bytes}) per topic, applied with
 * {@link Stream#trim} by a periodic check ({@code log.retention.check.interval.ms}) on every partition this shell
 * leads. Trims always land on a Kafka batch boundary, so the first fetch after a trim returns whole batches and
 * ListOffsets earliest is the new start.
 *
 * <p>Time: a batch expires when its max timestamp is older than {@code now - retention.ms}; the check reads the first
 * batch (one read when nothing expired) and otherwise binary-searches the batch boundary, assuming timestamps grow
 * along the log as Kafka's segment-based retention does. Size: the partition's size is estimated from the bytes per
 * record of its first and last batches (the library keeps no per-stream byte count); the trim keeps at least
 * {@code retention.bytes} by that estimate. Kafka deletes whole segments, so both are approximate there too.
 */
public final class Retention {
    private static final System.Logger LOG = System.getLogger(Retention.class.getName());

    private Retention() {
    }

    /** Applies both limits to one partition; returns the new start offset (unchanged if nothing expired). */
    public static long apply(PartitionLog log, Map<String, String> topicConfig, long nowMs) {
        Stream s = log.stream();
        long retentionMs = Long.parseLong(topicConfig.getOrDefault("retention.ms", "-1"));
        long retentionBytes = Long.parseLong(topicConfig.getOrDefault("retention.bytes", "-1"));
        long start = s.startOffset();
        long end = s.confirmedOffset();
        if (end <= start || (retentionMs < 0 && retentionBytes < 0)) {
            return start;
        }
        long target = start;
        if (retentionMs >= 0) {
            target = Math.max(target, expiredByTime(s, start, end, nowMs - retentionMs));
        }
        if (retentionBytes >= 0) {
            target = Math.max(target, overSize(s, start, end, retentionBytes));
        }
        if (target > start) {
            long t = target;
            s.trim(target).join();
            LOG.log(System.Logger.Level.INFO, () -> log.topic() + "-" + log.partition() + ": retention trimmed ["
                    + start + ", " + t + ")");
        }
        return s.startOffset();
    }

    private record Probe(long base, long end, long maxTimestamp, int bytes, int count) {
    }

    /**
     * The batch covering {@code offset}. A batch that log compaction emptied says nothing about time, so it is joined
     * with the batches after it up to one that holds records (or {@code end}).
     */
    private static Probe probe(Stream s, long offset, long end) {
        long base = -1;
        long at = offset;
        while (true) {
            try (FetchResult r = s.fetch(at, end, 1).join()) {
                StoredBatch b = r.batches().getFirst();
                if (base < 0) {
                    base = b.baseOffset();
                }
                long maxTs = -1;
                boolean any = false;
                for (MutableRecordBatch kb : MemoryRecords.readableRecords(b.payload().duplicate()).batches()) {
                    maxTs = Math.max(maxTs, kb.maxTimestamp());
                    any = true;
                }
                if (any || b.endOffset() >= end) {
                    return new Probe(base, b.endOffset(), maxTs, b.payload().remaining(),
                            (int) Math.min(Integer.MAX_VALUE, b.endOffset() - base));
                }
                at = b.endOffset();
            }
        }
    }

    /** The first batch boundary whose batch is not expired (or {@code end}). */
    static long expiredByTime(Stream s, long start, long end, long cutoffMs) {
        Probe first = probe(s, start, end);
        if (first.maxTimestamp() >= cutoffMs) {
            return start;
        }
        long lo = first.end(); // everything below lo is expired
        long hi = end;         // a batch starting at hi (if any) is kept
        while (lo < hi) {
            Probe p = probe(s, lo + (hi - lo) / 2, end);
            if (p.maxTimestamp() < cutoffMs) {
                lo = p.end();
            } else {
                hi = p.base();
            }
        }
        return lo;
    }

    /** The partition's size in bytes, estimated as for retention.bytes (0 when empty or unreadable). */
    public static long estimateBytes(Stream s) {
        long start = s.startOffset();
        long end = s.confirmedOffset();
        if (end <= start) {
            return 0;
        }
        try {
            Probe first = probe(s, start, end);
            Probe last = probe(s, end - 1, end);
            return (long) ((end - start) * ((double) (first.bytes() + last.bytes()) / (first.count() + last.count())));
        } catch (RuntimeException e) {
            return 0;
        }
    }

    /** The batch boundary at or below the offset that leaves about {@code retentionBytes} in the partition. */
    static long overSize(Stream s, long start, long end, long retentionBytes) {
        Probe first = probe(s, start, end);
        Probe last = probe(s, end - 1, end);
        double perRecord = (double) (first.bytes() + last.bytes()) / (first.count() + last.count());
        double size = (end - start) * perRecord;
        if (size <= retentionBytes) {
            return start;
        }
        long target = start + (long) ((size - retentionBytes) / perRecord);
        if (target >= end) {
            return end;
        }
        return probe(s, target, end).base(); // floor to the batch boundary: keep at least retentionBytes
    }
}
