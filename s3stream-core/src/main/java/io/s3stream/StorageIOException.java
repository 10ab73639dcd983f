package io.s3stream;

/**
 * A device or object store failed in a way retries did not fix: an IO error on the write-ahead log (which fences
 * it: later appends fail fast with the same cause), or an object store that keeps failing past its retry budget.
 * Data already acknowledged is still held in memory and is uploaded once the store recovers.
 * <p>What to do: report it to an operator; the message names the device or bucket and the last error. Appends
 * do not succeed again until the storage engine is restarted on healthy storage.
 */
public final class StorageIOException extends S3StreamException {
    private static final long serialVersionUID = 1L;
    private final boolean retriable;

    public StorageIOException(String message, Throwable cause) {
        this(message, cause, false);
    }

    public StorageIOException(String message, Throwable cause, boolean retriable) {
        super(message, cause);
        this.retriable = retriable;
    }

    @Override
    public boolean isRetriable() {
        return retriable;
    }
}
