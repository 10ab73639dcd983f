package io.s3stream;

/**
 * Stored bytes failed a checksum or layout check; they were not returned as data. The message names the object
 * key (or WAL position) and the byte position of the damage.
 * <p>What to do: nothing automatic repairs corruption. Report it; the affected range cannot be read until the
 * object is restored from a replica or backup of the bucket.
 */
public final class CorruptDataException extends S3StreamException {
    private static final long serialVersionUID = 1L;

    public CorruptDataException(String message) {
        super(message);
    }

    public CorruptDataException(String message, Throwable cause) {
        super(message, cause);
    }
}
