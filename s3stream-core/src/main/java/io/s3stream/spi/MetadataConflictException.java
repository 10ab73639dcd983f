package io.s3stream.spi;

import io.s3stream.S3StreamException;

/**
 * A metadata change was refused because it does not fit the current state (offsets not continuous, object already
 * committed, unknown object id, compaction inputs not live). Nothing was changed. Indicates a bug or a lost race that
 * the caller must resolve by re-reading state; retrying the same request fails the same way.
 */
public final class MetadataConflictException extends S3StreamException {
    private static final long serialVersionUID = 1L;

    public MetadataConflictException(String message) {
        super(message);
    }
}
