package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.s3stream.internal.store.common.StoreSupport;
import io.s3stream.spi.ObjectStore.MultipartUpload;
import io.s3stream.spi.ObjectStoreException;

import java.io.EOFException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A multipart upload whose parts are files in a staging directory.
 *
 * <p>Design note: the staging directory is created by {@code startMultipart} and never by a part upload, so a
 * part that arrives after {@code abort} fails instead of resurrecting the upload.
 */
final class FileMultipartUpload implements MultipartUpload {
    private final FileObjectStore store;
    private final String key;
    private final Path target;
    private final Path staging;
    private final String uploadId;
    private boolean aborted; // guarded by this
    private CompletableFuture<Void> completion; // guarded by this

    FileMultipartUpload(FileObjectStore store, String key, Path target, Path staging, String uploadId) {
        this.store = store;
        this.key = key;
        this.target = target;
        this.staging = staging;
        this.uploadId = uploadId;
    }

    @Override
    public String key() {
        return key;
    }

    @Override
    public CompletableFuture<Void> uploadPart(int partNumber, ByteBuf data) {
        try {
            StoreSupport.checkPartNumber(store.description(), key, partNumber);
            checkOpen();
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        ByteBuf bytes = data.retainedSlice();
        return store.<Void>submit("uploadPart " + partNumber + " of", key, () -> {
            storePart(partNumber, bytes.readableBytes(),
                    (channel, file) -> store.fileIo.writeAll(bytes, channel, file));
            return null;
        }).whenComplete((v, e) -> bytes.release());
    }

    @Override
    public CompletableFuture<Void> uploadPartCopy(int partNumber, String sourceKey, long position, long length) {
        Path source;
        try {
            StoreSupport.checkPartNumber(store.description(), key, partNumber);
            source = store.resolve(sourceKey);
            checkOpen();
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        return store.submit("uploadPartCopy " + partNumber + " of", key, () -> {
            FileChannel in;
            try {
                in = FileChannel.open(source, StandardOpenOption.READ);
            } catch (NoSuchFileException e) {
                throw store.notFound(sourceKey);
            }
            try (in) {
                StoreSupport.checkCopyRange(store.description(), sourceKey, in.size(), position, length);
                List<ObjectFileIo.CopySource> range = List.of(new ObjectFileIo.CopySource(source, position, length));
                storePart(partNumber, length, (out, file) -> {
                    try {
                        store.fileIo.copy(range, out, file);
                    } catch (NoSuchFileException | EOFException e) {
                        // Deleted, or cut short by hand (the store never truncates an object), during the copy.
                        throw new ObjectStoreException(store.description() + ": source '" + sourceKey
                                + "' changed while being copied: " + e.getMessage(), false);
                    }
                });
            }
            return null;
        });
    }

    @Override
    public synchronized CompletableFuture<Void> complete() {
        if (aborted) {
            return StoreSupport.failed(noSuchUpload("complete"));
        }
        if (completion != null && !completion.isCompletedExceptionally()) {
            return completion; // in progress or done: completing again is harmless
        }
        completion = store.submit("complete multipart upload of", key, () -> {
            List<ObjectFileIo.CopySource> parts = new ArrayList<>();
            long length = 0;
            for (Path part : partsInOrder()) {
                long size = Files.size(part);
                parts.add(new ObjectFileIo.CopySource(part, 0, size));
                length += size;
            }
            Path temp = store.writeTemp(key, target.getParent(), true, length,
                    (out, file) -> store.fileIo.copy(parts, out, file));
            store.publishByRename(key, target, temp);
            FileObjectStore.deleteRecursively(staging);
            return null;
        });
        return completion;
    }

    @Override
    public synchronized CompletableFuture<Void> abort() {
        if (completion != null && !completion.isCompletedExceptionally()) {
            return CompletableFuture.completedFuture(null); // completed (or completing): nothing to discard
        }
        aborted = true;
        return store.submit("abort multipart upload of", key, () -> {
            FileObjectStore.deleteRecursively(staging);
            return null;
        });
    }

    private synchronized void checkOpen() {
        if (aborted || completion != null && !completion.isCompletedExceptionally()) {
            throw new ObjectStoreException(noSuchUpload("upload a part to"), false);
        }
    }

    private String noSuchUpload(String operation) {
        return store.description() + ": cannot " + operation + " multipart upload " + uploadId + " of '" + key
                + "': it was " + (aborted ? "aborted" : "completed");
    }

    private void storePart(int partNumber, long length, FileObjectStore.ContentWriter writer) throws IOException {
        Path temp;
        try {
            temp = store.writeTemp(key, staging, false, length, writer);
        } catch (NoSuchFileException e) {
            throw new ObjectStoreException(store.description() + ": multipart upload " + uploadId + " of '" + key
                    + "' no longer exists (aborted)", false);
        }
        try {
            // A part uploaded again (a retry) replaces the earlier one, as on S3.
            Files.move(temp, staging.resolve(partName(partNumber)), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            FileObjectStore.deleteQuietly(temp);
            throw e;
        }
    }

    private List<Path> partsInOrder() throws IOException {
        List<Path> parts = new ArrayList<>();
        try (var stream = Files.list(staging)) {
            stream.filter(p -> !p.getFileName().toString().startsWith(FileObjectStore.RESERVED_PREFIX)).forEach(parts::add);
        } catch (NoSuchFileException e) {
            throw new ObjectStoreException(noSuchUpload("complete"), false);
        }
        parts.sort((a, b) -> Integer.compare(partNumber(a), partNumber(b)));
        if (parts.isEmpty()) {
            throw new ObjectStoreException(store.description() + ": cannot complete multipart upload of '" + key
                    + "' without parts", false);
        }
        for (int i = 0; i < parts.size() - 1; i++) {
            long size = Files.size(parts.get(i));
            if (size < store.minPartSizeBytes()) {
                throw new ObjectStoreException(store.description() + ": part " + partNumber(parts.get(i))
                        + " of multipart upload of '" + key + "' has " + size + " bytes; every part but the last"
                        + " needs at least " + store.minPartSizeBytes(), false);
            }
        }
        return parts;
    }

    private static String partName(int partNumber) {
        return String.format("%05d", partNumber);
    }

    private static int partNumber(Path part) {
        return Integer.parseInt(part.getFileName().toString());
    }
}
