package io.s3stream.wal.fsx.internal;

import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.spi.WriteAheadLogProvider;

import java.net.URI;
import java.nio.file.Path;
import java.util.Optional;

/**
 * {@code fsx:///mnt/fsx/s3stream?capacity=256MiB}: the WAL on a shared file system, which a surviving node can take
 * over ({@link #supportsTakeover()}). Never a default: the directory must be a mount the operator chose.
 */
public final class FsxWalProvider implements WriteAheadLogProvider {

    public FsxWalProvider() {
    }

    @Override
    public String scheme() {
        return "fsx";
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
        return FsxWal.open(FsxWalConfig.parse(uri), context);
    }
}
