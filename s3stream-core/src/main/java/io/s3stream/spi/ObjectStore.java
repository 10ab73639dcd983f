package io.s3stream.spi;

import io.netty.buffer.ByteBuf;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The few raw operations the library needs from an object store. Implementations talk to one backend (S3, Azure
 * Blob, a local directory, memory) and nothing else: retries, timeouts, concurrency limits, priorities, merging of
 * range reads and request counting live once, above them, in the engine.
 *
 * <h2>Contract (checked for every backend by {@code ObjectStoreContractTest})</h2>
 * <ul>
 *   <li>Objects are immutable once written; a {@code put} of an existing key replaces it atomically (readers see
 *       the old or the new bytes, never a mix).</li>
 *   <li>{@link #putIfAbsent} creates the key only if no object with that key exists, atomically: among concurrent
 *       callers exactly one gets {@code true}.</li>
 *   <li>{@link #get} of a missing key fails with {@link ObjectNotFoundException}; a range past the end is clipped to
 *       the object's end, and a range starting at or past the end fails with {@link ObjectStoreException}.
 *       {@link #getSplit} returns the same bytes as {@code get} of the same span, split into one buffer per range,
 *       and clips nothing.</li>
 *   <li>Failures complete futures with {@link ObjectStoreException}, whose {@link ObjectStoreException#isRetriable()}
 *       says whether the request may be repeated (throttling, 5xx, timeouts, connection errors).</li>
 * </ul>
 *
 * <h2>Buffers</h2>
 * Methods that take a {@link ByteBuf} read its readable bytes and do not take ownership; the caller releases it after
 * the future completes. Buffers returned by {@code get} belong to the caller.
 */
public interface ObjectStore extends AutoCloseable {

    /** Writes an object in one request. */
    CompletableFuture<Void> put(String key, ByteBuf data);

    /** Creates an object only if the key is free; {@code true} if this call created it. */
    CompletableFuture<Boolean> putIfAbsent(String key, ByteBuf data);

    /** Reads {@code length} bytes starting at {@code position}. */
    CompletableFuture<ByteBuf> get(String key, long position, int length);

    /** Reads a whole object. */
    CompletableFuture<ByteBuf> get(String key);

    /**
     * Reads consecutive ranges of an object in one request, each into a buffer of its own: {@code [position,
     * position + lengths[0])}, then the {@code lengths[1]} bytes after it, and so on. This is what a reader of several
     * adjacent blocks asks for when each block is kept (cached, released) on its own. Unlike
     * {@link #get(String, long, int)} nothing is clipped: every range must lie inside the object, or the read fails
     * with an {@link ObjectStoreException}, not retriable when the backend knows the object ends before the ranges;
     * every length must be positive and their sum at most {@link Integer#MAX_VALUE}.
     *
     * <p>The default reads the whole span with {@link #get(String, long, int)} and copies each range out of it; a
     * short answer fails as retriable, since it cannot tell a short object from a cut answer. A backend that can read
     * into separate buffers directly overrides it and saves that copy (the file, S3 and Azure stores do).
     *
     * @return one buffer per length, in order, each owned by the caller
     */
    default CompletableFuture<List<ByteBuf>> getSplit(String key, long position, int[] lengths) {
        int total;
        try {
            total = splitLength(description(), key, position, lengths);
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        return get(key, position, total).thenApply(whole -> {
            try {
                if (whole.readableBytes() != total) {
                    // The object ends there, or the answer was cut short: only the backend could tell which, so
                    // the read may be repeated (the engine's layer gives up after its attempts).
                    throw new ObjectStoreException(description() + ": GET '" + key + "' from " + position + " returned "
                            + whole.readableBytes() + " bytes of the " + total + " asked for (the object ends there, or "
                            + "the answer was cut short)", true);
                }
                List<ByteBuf> parts = new ArrayList<>(lengths.length);
                try {
                    int at = whole.readerIndex();
                    for (int length : lengths) {
                        parts.add(whole.copy(at, length));
                        at += length;
                    }
                } catch (RuntimeException | Error e) {
                    parts.forEach(ByteBuf::release);
                    throw e;
                }
                return parts;
            } finally {
                whole.release();
            }
        });
    }

    /**
     * Checks the arguments of {@link #getSplit} and returns the total length: what a backend overriding it calls
     * first.
     *
     * @throws ObjectStoreException (not retriable) naming the store, the key and the bad argument
     */
    static int splitLength(String description, String key, long position, int[] lengths) {
        if (position < 0 || lengths.length == 0) {
            throw new ObjectStoreException(description + ": invalid split read of '" + key + "': position " + position
                    + ", " + lengths.length + " ranges (position must be >= 0, at least one range)", false);
        }
        long total = 0;
        for (int length : lengths) {
            if (length <= 0) {
                throw new ObjectStoreException(description + ": invalid split read of '" + key + "': range length "
                        + length + " (each must be > 0)", false);
            }
            total += length;
        }
        if (total > Integer.MAX_VALUE) {
            throw new ObjectStoreException(description + ": invalid split read of '" + key + "': " + total
                    + " bytes in all, more than one request may return", false);
        }
        return (int) total;
    }

    /** Size and presence of an object. */
    CompletableFuture<Optional<ObjectInfo>> head(String key);

    /** Lists objects whose keys start with {@code prefix}, in key order. */
    CompletableFuture<List<ObjectInfo>> list(String prefix);

    /** Deletes keys; missing keys are not an error. Implementations batch where the backend allows it. */
    CompletableFuture<Void> delete(Collection<String> keys);

    /** Starts a multipart upload for {@code key}; the object appears only when the upload completes. */
    CompletableFuture<MultipartUpload> startMultipart(String key);

    /** The smallest part (except the last) a multipart upload accepts; 5 MiB on S3. */
    default int minPartSizeBytes() {
        return 5 * 1024 * 1024;
    }

    /**
     * Whether {@link MultipartUpload#uploadPartCopy} moves the bytes through this node's own devices (a store on a
     * local file system) rather than inside the backend (S3's UploadPartCopy, Azure's Put Block From URL). Compaction
     * throttles such copies as it does the bytes it reads and writes itself: they take the disk the WAL may be on.
     */
    default boolean copiesOnThisNode() {
        return false;
    }

    /** Human-readable identity for logs and errors: scheme, bucket or directory, prefix. */
    String description();

    @Override
    void close();

    /**
     * An object being written in parts. Parts are numbered from 1; {@link #complete} assembles them in number order.
     */
    interface MultipartUpload {

        String key();

        /** Uploads one part; parts may be in flight concurrently. */
        CompletableFuture<Void> uploadPart(int partNumber, ByteBuf data);

        /**
         * Fills one part with {@code [position, position + length)} of an existing object, server-side where the
         * backend can (S3 UploadPartCopy), otherwise by reading and re-uploading the bytes.
         */
        CompletableFuture<Void> uploadPartCopy(int partNumber, String sourceKey, long position, long length);

        /** Makes the object visible, built from the parts uploaded so far. */
        CompletableFuture<Void> complete();

        /** Discards the parts; the object never appears. Idempotent. */
        CompletableFuture<Void> abort();
    }
}
