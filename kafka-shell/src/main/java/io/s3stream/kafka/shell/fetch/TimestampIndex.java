package io.s3stream.kafka.shell.fetch;

import io.s3stream.kafka.shell.log.PartitionLog;
import io.s3stream.kafka.shell.log.ReadRecords;
import io.s3stream.kafka.shell.log.TimeIndex;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.requests.ListOffsetsRequest;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Finds the first offset whose record timestamp is at least {@code ts}: a scan of the partition's batches in offset
 * order that jumps over the ranges the partition's {@link TimeIndex} proves hold no such record; the record with the
 * largest timestamp ({@code ts == -3}) likewise, above the index's largest maximum.
 */
final class TimestampIndex {
    private TimestampIndex() {
    }

    /** Returns {offset, timestamp}, or {-1, -1}. {@code ts == -3}: the record with the largest timestamp. */
    static CompletableFuture<long[]> search(PartitionLog log, long ts) {
        if (ts == ListOffsetsRequest.MAX_TIMESTAMP) {
            return searchMax(log);
        }
        TimeIndex.Skips skips = log.timeIndex().skips(ts);
        return scan(log, skips.next(log.logStartOffset()), log.highWatermark(), ts, new long[]{-1, -1}, skips);
    }

    /**
     * The first record with the largest timestamp. The index's largest maximum {@code m} bounds it from above: a scan
     * that skips what holds nothing at or above {@code m} finds it when some record still has {@code m}; when none does
     * (retention or key compaction removed it) the scan finds nothing at or above {@code m}, and the whole partition is
     * scanned instead.
     */
    private static CompletableFuture<long[]> searchMax(PartitionLog log) {
        long ts = ListOffsetsRequest.MAX_TIMESTAMP;
        TimeIndex.Skips none = new TimeIndex.Skips(List.of());
        long bound = log.timeIndex().maxTimestamp(log.logStartOffset());
        if (bound == Long.MIN_VALUE) {
            return scan(log, log.logStartOffset(), log.highWatermark(), ts, new long[]{-1, -1}, none);
        }
        TimeIndex.Skips skips = log.timeIndex().skips(bound);
        return scan(log, skips.next(log.logStartOffset()), log.highWatermark(), ts, new long[]{-1, -1}, skips)
                .thenCompose(found -> found[1] >= bound ? CompletableFuture.completedFuture(found)
                        : scan(log, log.logStartOffset(), log.highWatermark(), ts, new long[]{-1, -1}, none));
    }

    private static CompletableFuture<long[]> scan(PartitionLog log, long from, long end, long ts, long[] best,
                                                  TimeIndex.Skips skips) {
        if (from >= end) {
            return CompletableFuture.completedFuture(best);
        }
        return log.read(from, 1 << 20).thenCompose(r -> {
            if (r.error() != Errors.NONE || r.records() == null) {
                return CompletableFuture.completedFuture(best);
            }
            long next;
            try {
                next = scanRead(r.records(), from, ts, best);
            } finally {
                r.records().release();
            }
            return next < 0 || next <= from ? CompletableFuture.completedFuture(best)
                    : scan(log, skips.next(next), end, ts, best, skips);
        });
    }

    /** Looks through one read's batches; the offset to read next, or -1 when {@code best} is final. */
    private static long scanRead(ReadRecords records, long from, long ts, long[] best) {
        long next = from;
        for (ByteBuffer part : records.batches()) {
            for (MutableRecordBatch b : MemoryRecords.readableRecords(part.duplicate()).batches()) {
                next = b.lastOffset() + 1;
                if (ts == ListOffsetsRequest.MAX_TIMESTAMP) {
                    if (b.maxTimestamp() > best[1]) {
                        for (Record rec : b) {
                            if (rec.timestamp() >= b.maxTimestamp() || b.timestampType() == TimestampType.LOG_APPEND_TIME) {
                                best[0] = rec.offset();
                                best[1] = b.maxTimestamp();
                                break;
                            }
                        }
                    }
                    continue;
                }
                if (b.maxTimestamp() >= ts) {
                    for (Record rec : b) {
                        long recTs = b.timestampType() == TimestampType.LOG_APPEND_TIME ? b.maxTimestamp() : rec.timestamp();
                        if (rec.offset() >= from && recTs >= ts) {
                            best[0] = rec.offset();
                            best[1] = recTs;
                            return -1;
                        }
                    }
                }
            }
        }
        return next;
    }
}
