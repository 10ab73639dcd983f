package io.s3stream.wal.object.internal;

import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.spi.WriteAheadLogProvider;

import java.net.URI;
import java.nio.file.Path;
import java.util.Optional;

/**
 * {@code objectwal://?batchMs=50&batchBytes=8MiB}: a WAL kept in object storage (see {@link ObjectWal} and
 * {@link ObjectWalConfig}). Never the default WAL (it trades latency for having no disk); supports takeover.
 */
public final class ObjectWalProvider implements WriteAheadLogProvider {

    public ObjectWalProvider() {
    }

    @Override
    public String scheme() {
        return "objectwal";
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
        return ObjectWal.open(ObjectWalConfig.parse(uri), context);
    }
}
