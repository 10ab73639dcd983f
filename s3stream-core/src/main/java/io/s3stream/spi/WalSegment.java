package io.s3stream.spi;

import java.util.List;
import java.util.Objects;

/**
 * A run of WAL records that is already one object in object format v1, so the engine can commit that object to the
 * manifest as a stream set object instead of writing its records to the object store a second time
 * ({@link WriteAheadLog#segments}).
 *
 * @param key           the object's key in the engine's object store
 * @param sizeBytes     its size
 * @param startPosition WAL position of the segment's start (its first record, if any)
 * @param endPosition   WAL position just past it: the start of the next segment
 * @param records       number of WAL records it holds (0 for a segment that holds none, such as a seal)
 * @param ranges        the stream ranges it holds, sorted by (stream id, start offset), at most one per stream
 */
public record WalSegment(String key, long sizeBytes, long startPosition, long endPosition, int records,
                         List<StreamRange> ranges) {

    public WalSegment {
        Objects.requireNonNull(key, "key");
        ranges = List.copyOf(ranges);
        if (endPosition < startPosition || records < 0) {
            throw new IllegalArgumentException("segment " + key + ": positions [" + startPosition + ", " + endPosition
                    + "), records " + records);
        }
    }
}
