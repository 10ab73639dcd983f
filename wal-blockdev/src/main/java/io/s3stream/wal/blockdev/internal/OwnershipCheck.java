package io.s3stream.wal.blockdev.internal;

/**
 * Ownership decided outside a {@link BlockDeviceWal}'s header, for a WAL another node can take over while this one
 * runs (a WAL on a shared file system; see {@link BlockDeviceWal#open(BlockIo, long, BlockDeviceWalConfig,
 * io.s3stream.spi.WalContext, OwnershipCheck, java.time.Duration)}).
 */
@FunctionalInterface
public interface OwnershipCheck {
    /**
     * Reads the current ownership from durable, shared state. Returns null while this WAL still owns the log, or a
     * description of the new owner once it has been taken over. Exceptions are treated as a device error.
     */
    String lostTo();
}
