package io.s3stream.wal.blockdev.internal;

import java.io.Serial;

/**
 * A system call on the WAL target failed: names the call, the path, the offset and the errno. The WAL turns it into
 * {@link io.s3stream.StorageIOException} (and fences itself) or, while opening, into
 * {@link io.s3stream.InvalidConfigException}.
 */
public final class BlockIoException extends RuntimeException {
    @Serial
    private static final long serialVersionUID = 1L;
    private final int errno;

    public BlockIoException(String call, String path, long offset, int errno) {
        super(call + " on " + path + (offset >= 0 ? " at offset " + offset : "") + " failed: " + Errno.describe(errno));
        this.errno = errno;
    }

    public BlockIoException(String message, int errno) {
        super(message + ": " + Errno.describe(errno));
        this.errno = errno;
    }

    /** The Linux errno, such as {@link Errno#EIO}. */
    public int errno() {
        return errno;
    }
}
