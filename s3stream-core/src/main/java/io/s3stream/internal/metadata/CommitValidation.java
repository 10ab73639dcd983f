package io.s3stream.internal.metadata;

import io.s3stream.StreamFencedException;
import io.s3stream.StreamNotFoundException;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.MetadataConflictException;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamRange;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The validation half of {@link ManifestState#commitObjects}: checks of a commit request against the state that
 * read and never write, so the manifest can run all of them before its first mutation (its atomicity argument).
 * Called under the manifest's monitor.
 */
final class CommitValidation {

    private CommitValidation() {
    }

    static void checkShape(CommitRequest.NewObject o) {
        Objects.requireNonNull(o.type(), "type");
        if (o.sizeBytes() < 0) {
            throw new MetadataConflictException("object " + o.objectId() + " has negative size " + o.sizeBytes());
        }
        if (o.ranges().isEmpty() && !o.isAdopted()) {
            throw new MetadataConflictException("object " + o.objectId() + " holds no stream range");
        }
        if (o.type() == ObjectType.STREAM && o.ranges().size() != 1) {
            throw new MetadataConflictException("stream object " + o.objectId() + " must hold exactly one range, has "
                    + o.ranges().size());
        }
        StreamRange previous = null;
        for (StreamRange r : o.ranges()) {
            Objects.requireNonNull(r, "range");
            if (previous != null && r.streamId() <= previous.streamId()) {
                throw new MetadataConflictException("object " + o.objectId() + " must hold at most one range per"
                        + " stream, sorted by stream id: " + previous + " is followed by " + r);
            }
            previous = r;
        }
    }

    /**
     * Checks an upload's ranges against the streams: each stream exists, is written at its current epoch and
     * continues at its end offset as {@link Continuity} allows; puts each stream's new end offset in
     * {@code newEndOffsets}. Ranges of a stream deleted meanwhile (an id below {@code nextStreamId} that
     * {@code streams} no longer holds) are accepted: the data dies on arrival.
     */
    static void validateUpload(Map<Long, StreamEntry> streams, long nextStreamId,
                               Map<Long, List<StreamRange>> byStream, Map<Long, Long> newEndOffsets) {
        for (Map.Entry<Long, List<StreamRange>> entry : byStream.entrySet()) {
            long streamId = entry.getKey();
            StreamEntry s = streams.get(streamId);
            if (s == null) {
                if (streamId >= 0 && streamId < nextStreamId) {
                    continue; // deleted meanwhile: the data is accepted as garbage and dies on arrival
                }
                throw new StreamNotFoundException("stream " + streamId + " does not exist");
            }
            long expected = s.endOffset;
            for (StreamRange r : entry.getValue()) {
                if (r.epoch() < s.epoch) {
                    throw new StreamFencedException("stream " + streamId + " is at epoch " + s.epoch
                            + "; data written at epoch " + r.epoch() + " is fenced: " + r);
                }
                if (r.epoch() > s.epoch) {
                    throw new MetadataConflictException("stream " + streamId + " is at epoch " + s.epoch
                            + "; it was never opened at epoch " + r.epoch() + ": " + r);
                }
                if (!Continuity.continuesAt(expected, s.startOffset, r.startOffset())) {
                    throw new MetadataConflictException("stream " + streamId + " must continue at offset " + expected
                            + (s.startOffset > expected ? " (or, past a trimmed gap, at most at its start offset "
                            + s.startOffset + ")" : "") + " but the commit has " + r + " ("
                            + (r.startOffset() > expected ? "gap" : "overlap") + ")");
                }
                expected = r.endOffset();
            }
            newEndOffsets.put(streamId, expected);
        }
    }

    /**
     * Checks a compaction: its inputs are distinct committed objects (added to {@code inputs}), its outputs do not
     * overlap, hold only data of the inputs and cover every live range of the inputs.
     */
    static void validateCompaction(Map<Long, StreamEntry> streams, Map<Long, ObjectEntry> objects,
                                   CommitRequest request, Map<Long, List<StreamRange>> outputsByStream,
                                   List<ObjectEntry> inputs) {
        Set<Long> inputIds = new HashSet<>();
        Map<Long, List<StreamRange>> inputsByStream = new TreeMap<>();
        for (Long id : request.compactedObjectIds()) {
            Objects.requireNonNull(id, "compacted object id");
            if (!inputIds.add(id)) {
                throw new MetadataConflictException("compacted object " + id + " appears twice in one commit");
            }
            ObjectEntry e = objects.get(id);
            if (e == null || e.state != ObjectState.COMMITTED) {
                throw new MetadataConflictException("compacted object " + id + " is "
                        + (e == null ? "unknown or deleted" : e.state) + ", not COMMITTED");
            }
            inputs.add(e);
            for (StreamRange r : e.ranges) {
                inputsByStream.computeIfAbsent(r.streamId(), k -> new ArrayList<>()).add(r);
            }
        }
        Set<Long> streamIds = new TreeSet<>(inputsByStream.keySet());
        streamIds.addAll(outputsByStream.keySet());
        for (long streamId : streamIds) {
            List<long[]> in = union(inputsByStream.getOrDefault(streamId, List.of()));
            List<StreamRange> outs = outputsByStream.getOrDefault(streamId, List.of());
            StreamRange previous = null;
            for (StreamRange r : outs) {
                if (previous != null && r.startOffset() < previous.endOffset()) {
                    throw new MetadataConflictException("compaction outputs overlap: " + previous + " and " + r);
                }
                previous = r;
                if (!contains(in, r.startOffset(), r.endOffset())) {
                    throw new MetadataConflictException("compaction output " + r
                            + " holds data that is not in the compacted objects");
                }
            }
            StreamEntry s = streams.get(streamId);
            if (s == null) {
                continue; // deleted: nothing of it must survive
            }
            List<long[]> out = union(outs);
            for (long[] interval : in) {
                long start = Math.max(interval[0], s.startOffset);
                if (start < interval[1] && !contains(out, start, interval[1])) {
                    throw new MetadataConflictException("compaction outputs do not cover live data [" + start + ", "
                            + interval[1] + ") of stream " + streamId + " held by the compacted objects");
                }
            }
        }
    }

    /** Sorted, merged intervals {@code [start, end)} covering the given ranges; touching ranges merge. */
    private static List<long[]> union(List<StreamRange> ranges) {
        List<StreamRange> sorted = new ArrayList<>(ranges);
        sorted.sort(Comparator.comparingLong(StreamRange::startOffset));
        List<long[]> result = new ArrayList<>();
        for (StreamRange r : sorted) {
            long[] last = result.isEmpty() ? null : result.getLast();
            if (last != null && r.startOffset() <= last[1]) {
                last[1] = Math.max(last[1], r.endOffset());
            } else {
                result.add(new long[] {r.startOffset(), r.endOffset()});
            }
        }
        return result;
    }

    /** Whether one of the merged intervals contains {@code [start, end)}. */
    private static boolean contains(List<long[]> merged, long start, long end) {
        for (long[] interval : merged) {
            if (interval[0] <= start && end <= interval[1]) {
                return true;
            }
        }
        return false;
    }
}
