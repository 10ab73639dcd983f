package io.s3stream.spi;

import io.netty.buffer.ByteBuf;

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
 *       the object's end, and a range starting at or past the end fails with {@link ObjectStoreException}.</li>
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
