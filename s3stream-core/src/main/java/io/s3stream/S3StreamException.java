package io.s3stream;

/**
 * Root of every error the library reports. Each subclass names one failure category and its Javadoc says
 * what the caller should do about it; code that only needs to know "the storage layer failed" catches this.
 *
 * <p>Errors reach callers either thrown directly (configuration, programming errors) or as the cause of an
 * exceptionally completed {@link java.util.concurrent.CompletableFuture}.
 */
public abstract class S3StreamException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    protected S3StreamException(String message) {
        super(message);
    }

    protected S3StreamException(String message, Throwable cause) {
        super(message, cause);
    }

    /** Whether repeating the same call later may succeed without any other change by the caller. */
    public boolean isRetriable() {
        return false;
    }
}
