package io.s3stream.kafka.shell.txn;

import io.s3stream.KeyValues;

import java.nio.charset.StandardCharsets;

/** Producer ids unique across restarts and shells: blocks of 1,000 reserved by compare-and-set. */
final class ProducerIds {
    private static final String KEY = "kafka/producer-id-block";
    private static final int BLOCK = 1000;
    private final KeyValues kv;
    private long next;
    private long end;

    ProducerIds(KeyValues kv) {
        this.kv = kv;
    }

    /** The next unused producer id; may block on the key-value space once per block. */
    synchronized long next() {
        if (next < end) {
            return next++;
        }
        while (true) {
            byte[] current = kv.get(KEY).join().orElse(null);
            long start = current == null ? 0 : Long.parseLong(new String(current, StandardCharsets.UTF_8));
            byte[] updated = Long.toString(start + BLOCK).getBytes(StandardCharsets.UTF_8);
            if (kv.compareAndSet(KEY, current, updated).join()) {
                next = start;
                end = start + BLOCK;
                return next++;
            }
        }
    }
}
