package io.s3stream;

/**
 * A newer instance registered with this node's id (a restart elsewhere, or a takeover of this node's WAL), so this
 * instance may no longer change metadata or write its WAL. The message names the fencing node epoch.
 * <p>What to do: stop this instance; it is a zombie. Its acknowledged data is recovered by the newer instance.
 */
public final class NodeFencedException extends S3StreamException {
    private static final long serialVersionUID = 1L;

    public NodeFencedException(String message) {
        super(message);
    }
}
