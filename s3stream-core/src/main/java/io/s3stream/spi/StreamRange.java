package io.s3stream.spi;

/**
 * The part of one stream held by one object.
 *
 * @param streamId    the stream
 * @param epoch       the stream epoch the data was written at (checked at commit)
 * @param startOffset first offset held
 * @param endOffset   offset past the last one held (exclusive)
 */
public record StreamRange(long streamId, long epoch, long startOffset, long endOffset) {

    public StreamRange {
        if (startOffset < 0 || endOffset <= startOffset) {
            throw new IllegalArgumentException("StreamRange of stream " + streamId + " must satisfy 0 <= start < end, was ["
                    + startOffset + ", " + endOffset + ")");
        }
    }

    public boolean overlaps(long start, long end) {
        return startOffset < end && start < endOffset;
    }
}
