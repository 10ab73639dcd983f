package io.s3stream.internal.compaction;

/**
 * A compaction run failed and changed nothing in the manifest: its inputs stay referenced, and outputs it wrote are
 * deleted now or, if their fate is unknown, when their prepared ids expire. The compactor logs it and tries again in a
 * later round; an input named as corrupt is left out of later rounds until the node restarts.
 */
public final class CompactionException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public CompactionException(String message, Throwable cause) {
        super(message, cause);
    }

    public CompactionException(String message) {
        super(message);
    }
}
