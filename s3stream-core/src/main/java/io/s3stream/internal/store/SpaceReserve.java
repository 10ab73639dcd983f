package io.s3stream.internal.store;

import io.s3stream.spi.ObjectKeys;
import io.s3stream.spi.ObjectStoreException;

import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The room a {@link FileObjectStore} keeps free on its file system for metadata. A write of a data object (a key of
 * {@link ObjectKeys#dataKey}'s form, including the parts of its multipart upload and their concatenation) is refused
 * when it would leave less than the reserve usable; every other write (the manifest's log and snapshots, leases, WAL
 * objects) may use the reserve.
 *
 * <p>Why: on a full disk the remedy is a deletion (a topic, a stream), and a deletion frees space only once its manifest
 * commit is written. Without a reserve, the first bytes a deletion or an operator frees go to whatever data write is
 * retrying at that moment (an upload, compaction rewriting objects), and the commit that would free far more fails
 * for lack of space again.
 *
 * <p>The check counts the data bytes this process is writing, so concurrent writes cannot pass it together on the same
 * free space; writes of other processes to the file system are not counted.
 */
final class SpaceReserve {
    /** The default reserve is 1/32 of the file system, at most this (16 MiB): a few manifest commits' worth. */
    static final long MAX_DEFAULT_BYTES = 16L << 20;

    private final String description;
    private final FileStore fileStore;
    private final long reserveBytes;
    private final AtomicLong writing = new AtomicLong();

    private SpaceReserve(String description, FileStore fileStore, long reserveBytes) {
        this.description = description;
        this.fileStore = fileStore;
        this.reserveBytes = reserveBytes;
    }

    /** A reserve of {@code reserveBytes} on the file system of {@code root}, or the default when it is negative. */
    static SpaceReserve of(String description, Path root, long reserveBytes) throws IOException {
        FileStore fileStore = Files.getFileStore(root);
        long bytes = reserveBytes >= 0 ? reserveBytes : Math.min(MAX_DEFAULT_BYTES, fileStore.getTotalSpace() / 32);
        return new SpaceReserve(description, fileStore, bytes);
    }

    /**
     * Claims room for writing {@code length} bytes of {@code key}: nothing to claim unless it is a data object; for one,
     * a retriable {@link ObjectStoreException} when the write would eat into the reserve. Close the claim once written
     * (or failed).
     */
    Claim claim(String operation, String key, long length) throws IOException {
        if (reserveBytes == 0 || !ObjectKeys.isDataKey(key)) {
            return Claim.NONE;
        }
        long inFlight = writing.addAndGet(length);
        long usable = fileStore.getUsableSpace();
        if (usable - inFlight < reserveBytes) {
            writing.addAndGet(-length);
            throw new ObjectStoreException(description + ": " + operation + " '" + key + "' refused for lack of space: "
                    + length + " bytes (with " + (inFlight - length) + " more being written) would leave less than the "
                    + reserveBytes + " bytes kept free for metadata commits; " + usable + " bytes usable", true);
        }
        return () -> writing.addAndGet(-length);
    }

    /** Room claimed for one write. */
    @FunctionalInterface
    interface Claim extends AutoCloseable {
        Claim NONE = () -> {
        };

        @Override
        void close();
    }

    /**
     * Whether {@code t} (or a cause) is the file system's "no space" or "quota exceeded" error. Java reports ENOSPC
     * and EDQUOT only as the message of an {@link IOException} (the reason of a {@link FileSystemException}), the
     * C library's text for the error number.
     */
    static boolean isOutOfSpace(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            String text = c instanceof FileSystemException f ? f.getReason() : c.getMessage();
            if (c instanceof IOException && text != null
                    && (text.contains("No space left on device") || text.contains("Disk quota exceeded"))) {
                return true;
            }
        }
        return false;
    }
}
