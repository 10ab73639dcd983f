package io.s3stream.wal.blockdev.internal;

import java.lang.foreign.MemorySegment;

/**
 * The narrow seam between the WAL and the device: positional, synchronous, block-aligned IO on one open target.
 *
 * <p>Offsets and lengths are multiples of {@link WalDescriptor#BLOCK_BYTES}; segments are 4 KiB-aligned native
 * memory (direct IO refuses anything else with {@code EINVAL}). A write returns only once it is durable (the
 * production implementation opens with {@code O_DSYNC}). Failures are {@link BlockIoException}s carrying the errno.
 * Implementations: {@link NativeBlockIo} (FFM syscalls) and, in tests, a fault-injecting wrapper. Calls may come from
 * several threads at once for disjoint ranges.
 */
public interface BlockIo extends AutoCloseable {

    /** Writes all of {@code source} at {@code offset}; durable when it returns. */
    void write(long offset, MemorySegment source);

    /** Reads {@code target.byteSize()} bytes at {@code offset} into {@code target}. */
    void read(long offset, MemorySegment target);

    /** Flushes anything the device still holds volatile (a no-op cost when every write is already synchronous). */
    void sync();

    /** Size of the target in bytes (a file's length, or a block device's size). */
    long sizeBytes();

    /** Whether the target is a block device rather than a regular file. */
    boolean isBlockDevice();

    /** The path, for messages. */
    String path();

    /** Releases the file descriptor. Idempotent. */
    @Override
    void close();
}
