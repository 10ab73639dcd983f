package io.s3stream.internal.wal;

import io.s3stream.internal.util.MemNames;
import io.s3stream.spi.UriSettings;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.spi.WriteAheadLogProvider;

import java.net.URI;
import java.nio.file.Path;
import java.util.Optional;

/**
 * {@code mem://name?capacity=64MiB}: the in-memory WAL, one log per node under the name (shared by every engine of the
 * JVM, so one engine can take over another's). Never chosen as a default, because it is not durable.
 */
public final class InMemoryWalProvider implements WriteAheadLogProvider {
    private static final long DEFAULT_CAPACITY = 64L * 1024 * 1024;

    @Override
    public String scheme() {
        return "mem";
    }

    @Override
    public Optional<URI> defaultUri(Path dataDir) {
        return Optional.empty();
    }

    @Override
    public boolean supportsTakeover() {
        return true;
    }

    @Override
    public WriteAheadLog open(URI uri, WalContext context) {
        String name = MemNames.of(uri, "mem WAL");
        String capacitySetting = UriSettings.query(uri, java.util.Set.of("capacity")).get("capacity");
        long capacity = capacitySetting == null ? DEFAULT_CAPACITY
                : UriSettings.parseBytes(UriSettings.withoutQuery(uri) + ": capacity", capacitySetting);
        return InMemoryWal.open(name, capacity, context);
    }
}
