package io.s3stream.spi;

/** Lifecycle of a stream in the manifest. */
public enum StreamState {
    /** Held open for writing by its owner node. */
    OPENED,
    /** Closed: every acknowledged batch is in committed objects; any node may open it. */
    CLOSED,
    /**
     * Deleted; its objects are garbage. The built-in stores forget a stream when it is deleted
     * ({@link MetadataStore#deleteStream}), so they never report this state; it is here for stores that keep history
     * (and checkpoints written before streams were forgotten).
     */
    DELETED
}
