package io.s3stream;

/**
 * A newer writer owns the stream: it was opened with a higher epoch, or by another node, or this handle's
 * append failed and the stream was fenced to prevent a hole. The handle accepts no more writes.
 * <p>What to do: stop writing through this handle. If this process should still own the stream, open it
 * again with a higher epoch; otherwise hand the work to the owner named in the message.
 */
public final class StreamFencedException extends S3StreamException {
    private static final long serialVersionUID = 1L;

    public StreamFencedException(String message) {
        super(message);
    }

    public StreamFencedException(String message, Throwable cause) {
        super(message, cause);
    }
}
