package io.s3stream;

/**
 * The stream handle, or the whole {@link StreamStorage}, was closed; the call was not carried out.
 * <p>What to do: open the stream again (on this or another node) if there is more work for it.
 */
public final class StreamClosedException extends S3StreamException {
    private static final long serialVersionUID = 1L;

    public StreamClosedException(String message) {
        super(message);
    }
}
