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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * A multipart upload staged in a directory of its own.
 *
 * <h2>Parts in place</h2>
 * Writers upload their parts in number order (the compactor's {@code ObjectWriter}, {@code putMultipart}), so the
 * store can tell each part's offset in the object when the part arrives: it is the sum of the lengths before it. Such
 * parts are written straight into one staging file at their offsets, and {@link #complete} publishes that file as the
 * object (a hard link renamed over the target) instead of reading every part back and writing it again: a multipart
 * object costs one write of its bytes, not two. A part goes in place when it is the next in number order, at
 * whatever offset: with direct IO its partial first and last pages go through the page cache, so it never pads over
 * its neighbours' bytes ({@link ObjectFileIo}, "Shared files"). The compactor's copies of block ranges, which seldom
 * end on a page boundary, therefore go in place too.
 *
 * <h2>Parts of their own</h2>
 * Every other part is a file of its own in the staging directory, written whole and renamed into place: a part out of
 * order, a part uploaded again (a retry, which must replace the earlier upload atomically, as on S3), or one after the
 * in-place sequence ended (at the first part out of order). A part file supersedes the same part in place. When any
 * part file exists, or the parts in place do not run from part 1 without a gap, {@link #complete} concatenates all
 * parts in number order into a new file, as a store without parts in place would. Either way the object appears
 * whole or not at all.
 *
 * <h2>Durability</h2>
 * Each part's bytes are forced when its upload completes; the object file and its directory are forced when the
 * upload completes. The staging file is never visible under a key; an upload whose process dies leaves its staging
 * directory, which a later open of the store deletes once it is a day old ({@link AbandonedUploads}).
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
    /** The staging file that parts in place are written into and that becomes the object. */
    private final Path inPlaceFile;
    private boolean aborted; // guarded by this
    private CompletableFuture<Void> completion; // guarded by this
    /** The part number that may go in place next, or 0 once the in-place sequence has ended. Guarded by this. */
    private int nextInPlace = 1;
    /** Where the next part in place would start. Guarded by this. */
    private long inPlaceEnd;
    /** Parts written in place, by number: {offset, length}. Guarded by this. */
    private final Map<Integer, long[]> inPlace = new HashMap<>();
    /**
     * Writes in place under way. Guarded by this. {@link #complete} publishes the in-place file only when none is: a
     * part still being written (one its writer gave up waiting for) would otherwise go on writing into the object.
     */
    private int inPlaceWrites;

    FileMultipartUpload(FileObjectStore store, String key, Path target, Path staging, String uploadId) {
        this.store = store;
        this.key = key;
        this.target = target;
        this.staging = staging;
        this.uploadId = uploadId;
        this.inPlaceFile = staging.resolve(FileObjectStore.RESERVED_PREFIX + "object");
    }

    @Override
    public String key() {
        return key;
    }

    @Override
    public CompletableFuture<Void> uploadPart(int partNumber, ByteBuf data) {
        long offset;
        try {
            StoreSupport.checkPartNumber(store.description(), key, partNumber);
            offset = placeInPlace(partNumber, data.readableBytes());
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        ByteBuf bytes = data.retainedSlice();
        return store.<Void>submit("uploadPart " + partNumber + " of", key, () -> {
            if (offset < 0) {
                storePart(partNumber, bytes.readableBytes(),
                        (channel, file) -> store.fileIo.writeAll(bytes, channel, file));
                return null;
            }
            boolean stored = false;
            try {
                storeInPlace(bytes.readableBytes(),
                        (channel, file) -> store.fileIo.writeAt(bytes, channel, file, offset));
                stored = true;
            } finally {
                endInPlace(partNumber, offset, bytes.readableBytes(), stored);
            }
            return null;
        }).whenComplete((v, e) -> bytes.release());
    }

    @Override
    public CompletableFuture<Void> uploadPartCopy(int partNumber, String sourceKey, long position, long length) {
        Path source;
        long offset;
        try {
            StoreSupport.checkPartNumber(store.description(), key, partNumber);
            source = store.resolve(sourceKey);
            offset = placeInPlace(partNumber, length);
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        return store.submit("uploadPartCopy " + partNumber + " of", key, () -> {
            boolean stored = false;
            try {
                copyPart(partNumber, offset, source, sourceKey, position, length);
                stored = true;
            } finally {
                if (offset >= 0) {
                    endInPlace(partNumber, offset, length, stored);
                }
            }
            return null;
        });
    }

    /** Fills part {@code partNumber} with a range of {@code source}: in place at {@code offset}, or as its own file. */
    private void copyPart(int partNumber, long offset, Path source, String sourceKey, long position, long length)
            throws IOException {
        FileChannel in;
        try {
            in = FileChannel.open(source, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw store.notFound(sourceKey);
        }
        try (in) {
            StoreSupport.checkCopyRange(store.description(), sourceKey, in.size(), position, length);
            List<ObjectFileIo.CopySource> range = List.of(new ObjectFileIo.CopySource(source, position, length));
            FileObjectStore.ContentWriter copy = (out, file) -> {
                try {
                    if (offset >= 0) {
                        store.fileIo.copyAt(range, out, file, offset);
                    } else {
                        store.fileIo.copy(range, out, file);
                    }
                } catch (NoSuchFileException | EOFException e) {
                    // Deleted, or cut short by hand (the store never truncates an object), during the copy.
                    throw new ObjectStoreException(store.description() + ": source '" + sourceKey
                            + "' changed while being copied: " + e.getMessage(), false);
                }
            };
            if (offset >= 0) {
                storeInPlace(length, copy);
            } else {
                storePart(partNumber, length, copy);
            }
        }
    }

    @Override
    public synchronized CompletableFuture<Void> complete() {
        if (aborted) {
            return StoreSupport.failed(noSuchUpload("complete"));
        }
        if (completion != null && !completion.isCompletedExceptionally()) {
            return completion; // in progress or done: completing again is harmless
        }
        Map<Integer, long[]> placed = new HashMap<>(inPlace);
        boolean quiet = inPlaceWrites == 0;
        completion = store.submit("complete multipart upload of", key, () -> {
            List<ObjectFileIo.CopySource> parts = partsInOrder(placed);
            long length = 0;
            boolean whole = quiet; // every part in place, from offset 0 on without a gap
            for (ObjectFileIo.CopySource part : parts) {
                whole &= part.path().equals(inPlaceFile) && part.position() == length;
                length += part.length();
            }
            Path temp;
            if (whole) {
                try (FileChannel object = FileChannel.open(inPlaceFile, StandardOpenOption.WRITE)) {
                    object.truncate(length); // cuts what a failed write of a later part may have left
                    object.force(true);
                }
                temp = store.linkTemp(key, target.getParent(), inPlaceFile);
            } else {
                temp = store.writeTemp(key, target.getParent(), true, length,
                        (out, file) -> store.fileIo.copy(parts, out, file));
            }
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

    /**
     * The offset at which part {@code partNumber} of {@code length} bytes goes in place (counted as a write under way,
     * which {@link #storeInPlace} ends), or -1 when it goes into a file of its own; ends the in-place sequence when the
     * part is out of order. Fails once the upload is completed or aborted.
     */
    private synchronized long placeInPlace(int partNumber, long length) {
        checkOpen();
        if (partNumber != nextInPlace) {
            if (partNumber > nextInPlace) {
                nextInPlace = 0; // a later part's offset is no longer known
            }
            return -1;
        }
        long offset = inPlaceEnd;
        inPlaceEnd += length;
        nextInPlace++;
        inPlaceWrites++;
        return offset;
    }

    private void storeInPlace(long length, FileObjectStore.ContentWriter writer) throws IOException {
        try {
            store.writeInto(key, inPlaceFile, length, writer);
        } catch (NoSuchFileException e) {
            throw new ObjectStoreException(store.description() + ": multipart upload " + uploadId + " of '" + key
                    + "' no longer exists (aborted)", false);
        }
    }

    /** Ends a write in place that {@link #placeInPlace} counted; a part {@code stored} whole joins the parts. */
    private synchronized void endInPlace(int partNumber, long offset, long length, boolean stored) {
        inPlaceWrites--;
        if (stored) {
            inPlace.put(partNumber, new long[] {offset, length});
        }
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

    /**
     * Every part stored, in number order: its own file where it has one (a later upload of the part), else its range
     * of the in-place file ({@code placed}); checks that every part but the last has the minimum size.
     */
    private List<ObjectFileIo.CopySource> partsInOrder(Map<Integer, long[]> placed) throws IOException {
        Map<Integer, ObjectFileIo.CopySource> parts = new TreeMap<>();
        placed.forEach((number, range) -> parts.put(number, new ObjectFileIo.CopySource(inPlaceFile, range[0],
                range[1])));
        try (var stream = Files.list(staging)) {
            for (Path file : (Iterable<Path>) stream::iterator) {
                if (!file.getFileName().toString().startsWith(FileObjectStore.RESERVED_PREFIX)) {
                    parts.put(partNumber(file), new ObjectFileIo.CopySource(file, 0, Files.size(file)));
                }
            }
        } catch (NoSuchFileException e) {
            throw new ObjectStoreException(noSuchUpload("complete"), false);
        }
        if (parts.isEmpty()) {
            throw new ObjectStoreException(store.description() + ": cannot complete multipart upload of '" + key
                    + "' without parts", false);
        }
        List<ObjectFileIo.CopySource> ordered = new ArrayList<>(parts.values());
        int i = 0;
        for (Map.Entry<Integer, ObjectFileIo.CopySource> part : parts.entrySet()) {
            if (++i < parts.size() && part.getValue().length() < store.minPartSizeBytes()) {
                throw new ObjectStoreException(store.description() + ": part " + part.getKey()
                        + " of multipart upload of '" + key + "' has " + part.getValue().length() + " bytes; every"
                        + " part but the last needs at least " + store.minPartSizeBytes(), false);
            }
        }
        return ordered;
    }

    private static String partName(int partNumber) {
        return String.format("%05d", partNumber);
    }

    private static int partNumber(Path part) {
        return Integer.parseInt(part.getFileName().toString());
    }
}
