package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectStore;

import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * {@link ObjectStorage} seen as an {@link ObjectStore}, every request at one priority class: what the engine hands to
 * backends that keep their own objects (the manifest, a WAL in object storage), so their requests share the engine's
 * scheduler, retry policy and budget, and appear in its cost counters.
 *
 * <p>Every operation is retried by the storage layer except {@link #putIfAbsent}, which makes one attempt: its caller
 * resolves an unclear outcome itself (see {@link ObjectStorage#putIfAbsent}). {@link #close()} closes the storage only
 * when the view owns it.
 */
final class ObjectStoreView implements ObjectStore {
    private final ObjectStorage storage;
    private final ObjectStorage.Priority priority;
    private final boolean owned;

    /** @param owned whether {@link #close} closes {@code storage} (a store opened for its user alone) */
    ObjectStoreView(ObjectStorage storage, ObjectStorage.Priority priority, boolean owned) {
        this.storage = storage;
        this.priority = priority;
        this.owned = owned;
    }

    @Override
    public CompletableFuture<Void> put(String key, ByteBuf data) {
        return storage.put(key, data, priority);
    }

    @Override
    public CompletableFuture<Boolean> putIfAbsent(String key, ByteBuf data) {
        return storage.putIfAbsent(key, data, priority);
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key, long position, int length) {
        return storage.get(key, position, length, priority);
    }

    @Override
    public CompletableFuture<List<ByteBuf>> getSplit(String key, long position, int[] lengths) {
        return storage.getSplit(key, position, lengths, priority);
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key) {
        return storage.get(key, priority);
    }

    @Override
    public CompletableFuture<Optional<ObjectInfo>> head(String key) {
        return storage.head(key, priority);
    }

    @Override
    public CompletableFuture<List<ObjectInfo>> list(String prefix) {
        return storage.list(prefix, priority);
    }

    @Override
    public CompletableFuture<Void> delete(Collection<String> keys) {
        return storage.delete(keys, priority);
    }

    @Override
    public CompletableFuture<MultipartUpload> startMultipart(String key) {
        return storage.startMultipart(key, priority).thenApply(Upload::new);
    }

    @Override
    public int minPartSizeBytes() {
        return storage.backend().minPartSizeBytes();
    }

    @Override
    public boolean copiesOnThisNode() {
        return storage.backend().copiesOnThisNode();
    }

    @Override
    public String description() {
        return storage.description();
    }

    @Override
    public void close() {
        if (owned) {
            storage.close();
        }
    }

    /** A multipart upload whose requests go through the storage layer. */
    private final class Upload implements MultipartUpload {
        private final MultipartUpload upload;

        Upload(MultipartUpload upload) {
            this.upload = upload;
        }

        @Override
        public String key() {
            return upload.key();
        }

        @Override
        public CompletableFuture<Void> uploadPart(int partNumber, ByteBuf data) {
            return storage.uploadPart(upload, partNumber, data, priority);
        }

        @Override
        public CompletableFuture<Void> uploadPartCopy(int partNumber, String sourceKey, long position, long length) {
            return storage.uploadPartCopy(upload, partNumber, sourceKey, position, length, priority);
        }

        @Override
        public CompletableFuture<Void> complete() {
            return storage.completeMultipart(upload, priority);
        }

        @Override
        public CompletableFuture<Void> abort() {
            return storage.abortMultipart(upload);
        }
    }
}
