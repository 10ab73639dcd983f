package io.s3stream.kafka.shell.log;

import io.s3stream.FetchResult;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;

import java.util.function.Consumer;

/** Reads a range of a partition's stream back as Kafka batches, for the state rebuilt at open. */
final class StreamScan {
    private StreamScan() {
    }

    /**
     * Hands every Kafka batch stored in {@code [from, end)} of {@code stream} to {@code visit}, in offset order;
     * returns how many. Reads through the library (log cache, block cache, object storage) one megabyte at a time;
     * blocks, and throws what the stream's fetch fails with.
     */
    static long scan(Stream stream, long from, long end, Consumer<MutableRecordBatch> visit) {
        long count = 0;
        while (from < end) {
            long next = from;
            try (FetchResult fr = stream.fetch(from, end, 1 << 20).join()) {
                for (StoredBatch sb : fr.batches()) {
                    next = sb.endOffset();
                    for (MutableRecordBatch kb : MemoryRecords.readableRecords(sb.payload().duplicate()).batches()) {
                        count++;
                        visit.accept(kb);
                    }
                }
            }
            if (next <= from) {
                break;
            }
            from = next;
        }
        return count;
    }
}
