package io.s3stream.spi;

import java.net.URI;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Finds a {@link WriteAheadLog} backend by URI scheme through {@link java.util.ServiceLoader}. A WAL module
 * registers one provider in {@code module-info.java} ({@code provides}) and in
 * {@code META-INF/services/io.s3stream.spi.WriteAheadLogProvider}.
 */
public interface WriteAheadLogProvider {

    /** The URI scheme this provider serves, such as {@code blockdev}. */
    String scheme();

    /**
     * The WAL this backend proposes when the configuration names none, or empty when it is not suitable as a default
     * (for example because it is not durable). The engine uses the first provider on the class path that offers one.
     */
    Optional<URI> defaultUri(Path dataDir);

    /**
     * Opens the log at {@code uri} for {@code context.nodeId()}; validation errors name the URI and the problem. The
     * same URI serves every node of a cluster: a backend derives the node's own place from the context's node id (a
     * prefix, a directory), so a surviving node can open a dead node's log with the dead node's id.
     */
    WriteAheadLog open(URI uri, WalContext context);

    /**
     * Whether another node can open this backend's logs for takeover ({@link WalContext#takeover()}): true when the log
     * lives on storage that outlives its node (a shared file system, object storage), false for a local disk, whose log
     * dies with its node (the node's streams then wait for it to come back).
     */
    default boolean supportsTakeover() {
        return false;
    }
}
