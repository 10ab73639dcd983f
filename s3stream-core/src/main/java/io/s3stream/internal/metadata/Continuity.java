package io.s3stream.internal.metadata;

/**
 * The continuity rule of uploads, in one place for the manifest that enforces it and the engine that relies on it: a
 * stream's next range starts at its committed end offset, or past it when the gap lies wholly below its start offset
 * (a trimmed prefix its owner never uploaded: nothing in it is readable).
 */
public final class Continuity {
    private Continuity() {
    }

    /** Whether a range starting at {@code offset} may follow a stream committed up to {@code endOffset}. */
    public static boolean continuesAt(long endOffset, long startOffset, long offset) {
        return offset == endOffset || (offset > endOffset && offset <= startOffset);
    }
}
