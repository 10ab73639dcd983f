package io.s3stream;

/**
 * The requested offset lies outside the stream's readable range {@code [startOffset, confirmedOffset)}, or a
 * trim point lies outside {@code [startOffset, nextOffset]}.
 * <p>What to do: read the stream's {@link Stream#startOffset()} and {@link Stream#confirmedOffset()} again
 * and reposition; data below the start offset was trimmed and is gone.
 */
public final class OffsetOutOfRangeException extends S3StreamException {
    private static final long serialVersionUID = 1L;

    public OffsetOutOfRangeException(String message) {
        super(message);
    }
}
