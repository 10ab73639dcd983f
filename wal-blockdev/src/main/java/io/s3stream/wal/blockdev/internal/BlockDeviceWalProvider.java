package io.s3stream.wal.blockdev.internal;

import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.spi.WriteAheadLogProvider;

import java.net.URI;
import java.nio.file.Path;
import java.util.Optional;

/**
 * {@code blockdev:///dev/nvme1n1} or {@code blockdev:///var/lib/app/wal.img?capacity=2GiB}: the direct-IO ring WAL.
 * It is the engine's default WAL when this module is on the class path: {@code blockdev://<dataDir>/wal.img}, created
 * with {@link BlockDeviceWalConfig#DEFAULT_CAPACITY_BYTES} (512 MiB) on first use.
 */
public final class BlockDeviceWalProvider implements WriteAheadLogProvider {

    public BlockDeviceWalProvider() {
    }

    @Override
    public String scheme() {
        return "blockdev";
    }

    @Override
    public Optional<URI> defaultUri(Path dataDir) {
        return Optional.of(URI.create("blockdev://" + dataDir.toAbsolutePath().normalize().resolve("wal.img").toUri()
                .getRawPath()));
    }

    @Override
    public WriteAheadLog open(URI uri, WalContext context) {
        return BlockDeviceWal.open(BlockDeviceWalConfig.parse(uri), context);
    }
}
