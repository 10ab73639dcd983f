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

    /** Opens the log at {@code uri}; validation errors name the URI and the problem. */
    WriteAheadLog open(URI uri, WalContext context);
}
