package io.s3stream.internal.compaction;

import io.s3stream.internal.format.IndexEntry;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.StreamMetadata;
import io.s3stream.spi.StreamRange;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongPredicate;
import java.util.function.ToLongFunction;

/**
 * What one stream-set-object compaction run writes, decided from the inputs' indexes and the streams' start offsets
 * alone (no I/O): per stream, the live blocks of each input ({@link Piece}s), joined into contiguous
 * {@link Segment}s; a segment gets its own stream object when its stream has several segments, its data is older than
 * the maximum age, or it holds at least the stream-object threshold, and the rest share one residual stream set
 * object. Destroyed streams and data trimmed away are dropped.
 *
 * @param byStream     each stream's pieces, by stream id
 * @param segments     every segment, streams in id order
 * @param oldestDataMs per stream, the commit time of its oldest data among the inputs
 */
record SsoPlan(TreeMap<Long, List<Piece>> byStream, List<Segment> segments, Map<Long, Long> oldestDataMs) {

    /** One piece of a stream's data: the live blocks of one input. */
    record Piece(InputObject input, long epoch, List<IndexEntry> blocks) {
        long start() {
            return blocks.getFirst().startOffset();
        }

        long end() {
            return blocks.getLast().endOffset();
        }

        long bytes() {
            return blocks.stream().mapToLong(IndexEntry::sizeBytes).sum();
        }
    }

    /** Contiguous pieces of one stream, written to their own stream object or into the residual one. */
    record Segment(long streamId, List<Piece> pieces, boolean ownObject) {
    }

    /**
     * @param dataTimeMs commit time of an input's oldest data
     * @param keyCompacted whether a stream is key-compacted: its segments always get their own stream object, since
     *                     key compaction only rewrites stream objects
     * @throws CompactionException when two inputs hold overlapping data of one stream
     */
    static SsoPlan of(List<InputObject> inputs, Map<Long, StreamMetadata> streams,
                      ToLongFunction<ObjectMetadata> dataTimeMs, long nowMs, long maxAgeMs, long streamObjectThreshold,
                      LongPredicate keyCompacted) {
        TreeMap<Long, List<Piece>> byStream = new TreeMap<>();
        Map<Long, Long> oldestDataMs = new HashMap<>();
        for (InputObject in : inputs) {
            for (StreamRange r : in.metadata().ranges()) {
                StreamMetadata s = streams.get(r.streamId());
                if (s == null || r.endOffset() <= s.startOffset()) {
                    continue; // destroyed stream or trimmed away: dropped
                }
                List<IndexEntry> blocks = in.liveBlocks(r.streamId(), s.startOffset());
                if (!blocks.isEmpty()) {
                    byStream.computeIfAbsent(r.streamId(), k -> new ArrayList<>()).add(new Piece(in, r.epoch(), blocks));
                    oldestDataMs.merge(r.streamId(), dataTimeMs.applyAsLong(in.metadata()), Math::min);
                }
            }
        }
        List<Segment> segments = new ArrayList<>();
        for (Map.Entry<Long, List<Piece>> e : byStream.entrySet()) {
            List<Piece> pieces = new ArrayList<>(e.getValue());
            pieces.sort(Comparator.comparingLong(Piece::start));
            List<List<Piece>> runs = new ArrayList<>();
            for (Piece p : pieces) {
                if (!runs.isEmpty() && runs.getLast().getLast().end() > p.start()) {
                    throw new CompactionException("stream " + e.getKey() + " has overlapping data in "
                            + runs.getLast().getLast().input().key() + " and " + p.input().key());
                }
                if (!runs.isEmpty() && runs.getLast().getLast().end() == p.start()) {
                    runs.getLast().add(p);
                } else {
                    runs.add(new ArrayList<>(List.of(p)));
                }
            }
            boolean old = oldestDataMs.get(e.getKey()) <= nowMs - maxAgeMs;
            for (List<Piece> run : runs) {
                long bytes = run.stream().mapToLong(Piece::bytes).sum();
                boolean own = runs.size() > 1 || old || bytes >= streamObjectThreshold
                        || keyCompacted.test(e.getKey());
                segments.add(new Segment(e.getKey(), run, own));
            }
        }
        return new SsoPlan(byStream, segments, oldestDataMs);
    }

    /** The segments that share the residual stream set object. */
    List<Segment> residual() {
        return segments.stream().filter(s -> !s.ownObject()).toList();
    }

    /** How many objects the run writes: one per own segment, plus the residual when there is one. */
    int outputs() {
        return (int) segments.stream().filter(Segment::ownObject).count() + (residual().isEmpty() ? 0 : 1);
    }

    /** The commit time of the oldest data going into the residual object ({@code nowMs} when there is none). */
    long residualDataMs(long nowMs) {
        return residual().stream().mapToLong(s -> oldestDataMs.get(s.streamId())).min().orElse(nowMs);
    }

    /** The blocks to read from {@code in}, in position order. */
    List<IndexEntry> blocksOf(InputObject in) {
        List<IndexEntry> wanted = new ArrayList<>();
        for (List<Piece> ps : byStream.values()) {
            for (Piece p : ps) {
                if (p.input() == in) {
                    wanted.addAll(p.blocks());
                }
            }
        }
        wanted.sort(Comparator.comparingLong(IndexEntry::position));
        return wanted;
    }
}
