package io.s3stream;

import java.nio.ByteBuffer;
import java.time.Duration;

/**
 * Key compaction of one stream: keep, for every key, only its latest record. The library does not know what a record
 * or a key is inside a batch's payload; the embedding system does, and supplies this when it registers a stream for
 * key compaction ({@link Stream#compactKeys}). The library decides when and what to compact, reads and rewrites the
 * objects, and keeps memory bounded; the embedder only answers for one batch at a time.
 *
 * <h2>How a run works</h2>
 * Only data already in stream objects and below {@link #cleanableEndOffset()} is compacted. The data not compacted
 * before (the <em>dirty</em> part, from the stream's checkpoint on) is read once and every key the embedder reports
 * through {@link #keys} goes into a map of key hash → latest offset, bounded in memory; then every object up to where
 * the map reached is rewritten, each batch through {@link #rewrite}, which drops the records the map says are
 * superseded. Offsets never change: a batch keeps its offsets even when records or whole batches are dropped, and a
 * reader sees the gaps (as in Kafka). When the dirty part holds more distinct keys than the map holds, a run covers
 * what fits and the next run continues.
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li>Calls come from the library's compaction thread, in offset order within a pass, and may block.</li>
 *   <li>A rewrite pass starts at the stream's oldest live data and goes without a gap to where it ends, so an
 *       embedder may carry state from one batch to the next within a pass (Kafka: whether a transaction still has
 *       records when its marker comes). The first {@link #rewrite} of a pass is below the end of the previous pass's
 *       last one, and every round starts with {@link #cleanableEndOffset()}.</li>
 *   <li>{@link #rewrite} must be consistent with {@link #keys}: a record that {@code keys} reported must be dropped
 *       when {@code latest} says it is superseded, and may be kept otherwise.</li>
 *   <li>Payloads must be <em>concatenable</em>: the concatenation of the payloads of adjacent batches must be a valid
 *       payload for their joined offset range, because the library merges adjacent rewritten batches (most of them
 *       shrink to nothing) into one. Kafka record batches are: a payload is a sequence of them.</li>
 * </ul>
 */
public interface KeyCompaction {

    /**
     * Offsets at and above this one are not compacted this round (a compaction lag, unfinished transactions). Asked
     * first in every round that considers the stream, before any other call of that round: the place to take the
     * round's view of the embedder's settings.
     */
    long cleanableEndOffset();

    /**
     * Share of the stream's compactable bytes that must be dirty before a run starts (Kafka's
     * {@code min.cleanable.dirty.ratio}), between 0 and 1.
     */
    double minDirtyRatio();

    /**
     * Data is compacted only once its stream object was written at least this long ago (Kafka's
     * {@code min.compaction.lag.ms}; an object written that long ago holds only older data); {@link Duration#ZERO}
     * for none.
     */
    Duration minCompactionLag();

    /**
     * Longest the oldest dirty data may wait for a run whatever the dirty share (Kafka's {@code max.compaction.lag.ms}),
     * measured from when its stream object was written; {@code null} for no limit.
     */
    Duration maxCompactionLag();

    /**
     * Reports each record of the batch that may supersede earlier records of its key: its offset and key bytes.
     * Records that must not (aborted transactional data, records without a key) are not reported.
     */
    void keys(long baseOffset, int count, ByteBuffer payload, KeyVisitor visitor);

    /**
     * Returns the batch's payload without the records {@code latest} rejects (and whatever else the embedder removes,
     * such as expired tombstones), or {@code payload} itself when nothing changes, or an empty buffer when nothing is
     * left. The returned buffer is read before the next call.
     */
    ByteBuffer rewrite(long baseOffset, int count, ByteBuffer payload, LatestFilter latest);

    /**
     * Asked once after each run's rewrite pass: the time (epoch milliseconds) at which rewriting the compacted data
     * again would remove more of it even if nothing new arrives (Kafka: the earliest delete horizon of a tombstone
     * that was kept), or {@link Long#MAX_VALUE}. The library then runs again at that time whatever the dirty share
     * (until a restart, which forgets it: the next run of new data then does it). Covers the batches rewritten since
     * the previous call.
     */
    default long rewriteAgainAtMs() {
        return Long.MAX_VALUE;
    }

    /** Receives the keys of a batch. */
    @FunctionalInterface
    interface KeyVisitor {
        /** {@code key} is read during the call only. */
        void key(long offset, ByteBuffer key);
    }

    /** Says whether a record is the latest of its key among the data indexed so far. */
    @FunctionalInterface
    interface LatestFilter {
        /** False when a later record of the same key was indexed: the record at {@code offset} is superseded. */
        boolean isLatest(long offset, ByteBuffer key);
    }
}
