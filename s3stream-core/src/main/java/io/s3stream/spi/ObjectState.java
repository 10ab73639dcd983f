package io.s3stream.spi;

/** Lifecycle of an object id in the manifest. */
public enum ObjectState {
    /** Id reserved; the object may be (partly) uploaded but is not readable. Expires if never committed. */
    PREPARED,
    /** Readable; referenced by the streams whose ranges it holds. */
    COMMITTED,
    /** No longer referenced; deleted from the bucket after a grace period. */
    MARKED_FOR_DELETION,
    /**
     * Gone from the bucket. The built-in stores forget an object once its deletion is recorded
     * ({@link MetadataStore#objectsDeleted}), so they never report this state; it is here for stores that keep
     * history.
     */
    DELETED
}
