package io.s3stream;

/**
 * No stream with this id exists (it was never created, or it was destroyed).
 * <p>What to do: create the stream, or correct the id the caller keeps for it.
 */
public final class StreamNotFoundException extends S3StreamException {
    private static final long serialVersionUID = 1L;

    public StreamNotFoundException(String message) {
        super(message);
    }
}
