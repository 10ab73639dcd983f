package io.s3stream.spi;

/**
 * A request to an object store failed. {@link #isRetriable()} tells the engine's retry layer whether the same request
 * may be repeated (throttling, server errors, timeouts, connection resets) or is final (bad credentials, a missing
 * bucket, an invalid range). The message names the store, the key and the backend's status.
 */
public class ObjectStoreException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final boolean retriable;

    public ObjectStoreException(String message, boolean retriable) {
        super(message);
        this.retriable = retriable;
    }

    public ObjectStoreException(String message, Throwable cause, boolean retriable) {
        super(message, cause);
        this.retriable = retriable;
    }

    public boolean isRetriable() {
        return retriable;
    }
}
