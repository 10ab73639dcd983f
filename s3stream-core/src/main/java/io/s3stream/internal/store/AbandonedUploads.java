package io.s3stream.internal.store;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.function.BooleanSupplier;

/**
 * Reclaims what a crashed process's {@link FileObjectStore} writes left behind, as an S3 lifecycle rule aborts
 * incomplete uploads: the staging directories of multipart uploads none of whose entries (the parts, the file written
 * in place) has been modified for {@link #ABANDONED_AFTER} ({@link #reclaim}), and the temporary files of puts that
 * died before their rename, with the probe files of an open that died before its delete ({@link #reclaimScratch}), once
 * unchanged for as long. No write a live process drives stays idle that long (the engine's uploads last seconds to
 * minutes), so several processes sharing the directory may each reclaim at open without touching each other's writes
 * in progress.
 */
final class AbandonedUploads {
    /** An upload whose staging directory has not changed for this long is abandoned. */
    static final Duration ABANDONED_AFTER = Duration.ofHours(24);

    private static final System.Logger LOG = System.getLogger(FileObjectStore.class.getName());

    private AbandonedUploads() {
    }

    /**
     * Deletes the staging directories under {@code stagingRoot} last modified before {@code now} minus
     * {@link #ABANDONED_AFTER}. Never fails: a directory that cannot be read or deleted is logged and left for the next
     * open, since a leftover only costs space.
     *
     * @return how many staging directories were deleted
     */
    static int reclaim(Path stagingRoot, Instant now) {
        if (!Files.isDirectory(stagingRoot)) {
            return 0;
        }
        Instant cutoff = now.minus(ABANDONED_AFTER);
        int reclaimed = 0;
        long bytes = 0;
        try (DirectoryStream<Path> uploads = Files.newDirectoryStream(stagingRoot)) {
            for (Path upload : uploads) {
                try {
                    Usage usage = usage(upload);
                    if (usage == null || !usage.lastModified.toInstant().isBefore(cutoff)) {
                        continue;
                    }
                    FileObjectStore.deleteRecursively(upload);
                    reclaimed++;
                    bytes += usage.bytes;
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.WARNING, "file object store: cannot reclaim the abandoned multipart"
                            + " upload " + upload + " (left for the next open): " + e);
                }
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "file object store: cannot list the multipart staging directory "
                    + stagingRoot + ": " + e);
        }
        if (reclaimed > 0) {
            LOG.log(System.Logger.Level.INFO, "file object store: reclaimed " + reclaimed + " multipart upload(s)"
                    + " abandoned for more than " + ABANDONED_AFTER.toHours() + " h (" + bytes + " bytes) in "
                    + stagingRoot);
        }
        return reclaimed;
    }

    /**
     * Deletes the store's scratch files under {@code root} ({@link FileObjectStore#isScratchFile}: temporary files of
     * puts, probe files of opens) last modified before {@code now} minus {@link #ABANDONED_AFTER}, walking the whole
     * tree except the multipart staging directory, which {@link #reclaim} owns. Never fails, like {@link #reclaim}; stops
     * early once {@code stop} says so (the store is closing). Directories a deleted file leaves empty stay: an empty
     * directory holds no key, and the next write into it or delete beside it uses or removes it.
     *
     * @return how many files were deleted
     */
    static int reclaimScratch(Path root, Instant now, BooleanSupplier stop) {
        Instant cutoff = now.minus(ABANDONED_AFTER);
        Path stagingRoot = root.resolve(FileObjectStore.STAGING_DIR);
        int[] reclaimed = {0};
        long[] bytes = {0};
        try {
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attributes) {
                    if (stop.getAsBoolean()) {
                        return FileVisitResult.TERMINATE;
                    }
                    return dir.equals(stagingRoot) ? FileVisitResult.SKIP_SUBTREE : FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attributes) {
                    if (stop.getAsBoolean()) {
                        return FileVisitResult.TERMINATE;
                    }
                    if (attributes.isRegularFile() && FileObjectStore.isScratchFile(file.getFileName().toString())
                            && attributes.lastModifiedTime().toInstant().isBefore(cutoff)) {
                        try {
                            if (Files.deleteIfExists(file)) {
                                reclaimed[0]++;
                                bytes[0] += attributes.size();
                            }
                        } catch (IOException e) {
                            LOG.log(System.Logger.Level.WARNING, "file object store: cannot delete the abandoned"
                                    + " temporary file " + file + " (left for the next open): " + e);
                        }
                    }
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path file, IOException e) {
                    if (!(e instanceof NoSuchFileException)) { // else deleted while we walked: nothing to reclaim
                        LOG.log(System.Logger.Level.WARNING, "file object store: cannot look for abandoned temporary"
                                + " files in " + file + " (left for the next open): " + e);
                    }
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path dir, IOException e) {
                    if (e != null && !(e instanceof NoSuchFileException)) {
                        LOG.log(System.Logger.Level.WARNING, "file object store: cannot finish looking for abandoned"
                                + " temporary files in " + dir + " (left for the next open): " + e);
                    }
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "file object store: cannot walk " + root
                    + " for abandoned temporary files: " + e);
        }
        if (reclaimed[0] > 0) {
            LOG.log(System.Logger.Level.INFO, "file object store: reclaimed " + reclaimed[0] + " temporary file(s)"
                    + " abandoned for more than " + ABANDONED_AFTER.toHours() + " h (" + bytes[0] + " bytes) in "
                    + root);
        }
        return reclaimed[0];
    }

    private record Usage(FileTime lastModified, long bytes) {
    }

    /** The newest modification time of a staging directory and its entries, and their size; null if it vanished. */
    private static Usage usage(Path upload) throws IOException {
        try {
            BasicFileAttributes dir = Files.readAttributes(upload, BasicFileAttributes.class);
            if (!dir.isDirectory()) {
                return null; // not a staging directory: the store never creates files here
            }
            FileTime newest = dir.lastModifiedTime();
            long bytes = 0;
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(upload)) {
                for (Path entry : entries) {
                    BasicFileAttributes attributes = Files.readAttributes(entry, BasicFileAttributes.class);
                    if (attributes.lastModifiedTime().compareTo(newest) > 0) {
                        newest = attributes.lastModifiedTime();
                    }
                    bytes += attributes.size();
                }
            }
            return new Usage(newest, bytes);
        } catch (NoSuchFileException e) {
            return null; // completed, aborted or a part superseded while we look: alive
        }
    }
}
