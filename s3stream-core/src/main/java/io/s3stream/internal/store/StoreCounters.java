package io.s3stream.internal.store;

import io.s3stream.internal.store.ObjectStorage.RequestKind;

import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * The cost model of one {@link ObjectStorage}: requests by {@link RequestKind} (every attempt is a request: that is what
 * a bill counts), bytes in and out, retries and the reads merging and hedging saved or added, and the one-line report
 * the log prints.
 */
final class StoreCounters {
    private static final double GIB = 1024.0 * 1024 * 1024;

    private final Map<RequestKind, LongAdder> requests = new EnumMap<>(RequestKind.class);
    final LongAdder bytesOut = new LongAdder();
    final LongAdder bytesIn = new LongAdder();
    final LongAdder retries = new LongAdder();
    final LongAdder budgetRefusals = new LongAdder();
    final LongAdder mergedReads = new LongAdder();
    final LongAdder hedgedReads = new LongAdder();

    StoreCounters() {
        for (RequestKind kind : RequestKind.values()) {
            requests.put(kind, new LongAdder());
        }
    }

    void request(RequestKind kind) {
        requests.get(kind).increment();
    }

    /** A number that changes whenever a request is made or a byte moves (to tell whether anything happened). */
    long activity() {
        long sum = bytesOut.sum() + bytesIn.sum() + retries.sum();
        for (LongAdder n : requests.values()) {
            sum += n.sum();
        }
        return sum;
    }

    /** Requests by kind since start, in declaration order. */
    Map<String, Long> requestCounts() {
        Map<String, Long> out = new LinkedHashMap<>();
        requests.forEach((k, v) -> out.put(k.name(), v.sum()));
        return out;
    }

    /**
     * One line for the log: requests by kind, bytes, and write requests per GiB written. Example:
     * <pre>
     * object store s3://bucket/prefix/: requests PUT=96 PART=0 COMPLETE=0 CREATE_MULTIPART=0 ABORT_MULTIPART=0
     * GET=212 HEAD=0 LIST=1 DELETE=0 CREATE_IF_ABSENT=0; out 1.00 GiB (96.0 write requests/GiB), in 0.21 GiB;
     * retries 3 (budget refusals 0), merged reads 40, hedged reads 0, in flight 2, queued 0
     * </pre>
     */
    String report(String storeDescription, int inFlight, int queued) {
        StringBuilder sb = new StringBuilder("object store ").append(storeDescription).append(": requests");
        long writes = 0;
        for (Map.Entry<RequestKind, LongAdder> e : requests.entrySet()) {
            long n = e.getValue().sum();
            sb.append(' ').append(e.getKey()).append('=').append(n);
            if (e.getKey().isWrite()) {
                writes += n;
            }
        }
        double outGiB = bytesOut.sum() / GIB;
        sb.append(String.format("; out %.2f GiB (%.1f write requests/GiB), in %.2f GiB; retries %d (budget refusals %d),"
                        + " merged reads %d, hedged reads %d, in flight %d, queued %d",
                outGiB, outGiB == 0 ? 0.0 : writes / outGiB, bytesIn.sum() / GIB, retries.sum(), budgetRefusals.sum(),
                mergedReads.sum(), hedgedReads.sum(), inFlight, queued));
        return sb.toString();
    }
}
