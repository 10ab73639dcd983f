package io.s3stream.spi;

/** The key does not exist. Never retriable. */
public final class ObjectNotFoundException extends ObjectStoreException {
    private static final long serialVersionUID = 1L;

    public ObjectNotFoundException(String message) {
        super(message, false);
    }
}
