package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.s3stream.internal.store.ObjectStorage.RequestKind;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectStore;

import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * A backend with request and byte counting only: no scheduling, no retries, no timeouts added. Metadata stores that
 * keep their own retry policy get this ({@link ObjectStorage#countedBackend()}), so that their requests appear in the
 * cost report with everything else. Closing it does not close the backend, which belongs to the {@link ObjectStorage}.
 */
final class CountingObjectStore implements ObjectStore {
    private final ObjectStore store;
    private final StoreCounters counters;

    CountingObjectStore(ObjectStore store, StoreCounters counters) {
        this.store = store;
        this.counters = counters;
    }

    @Override
    public CompletableFuture<Void> put(String key, ByteBuf data) {
        int size = data.readableBytes();
        counters.request(RequestKind.PUT);
        return store.put(key, data).thenRun(() -> counters.bytesOut.add(size));
    }

    @Override
    public CompletableFuture<Boolean> putIfAbsent(String key, ByteBuf data) {
        int size = data.readableBytes();
        counters.request(RequestKind.CREATE_IF_ABSENT);
        return store.putIfAbsent(key, data).thenApply(created -> {
            counters.bytesOut.add(size);
            return created;
        });
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key, long position, int length) {
        counters.request(RequestKind.GET);
        return store.get(key, position, length).thenApply(this::countIn);
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key) {
        counters.request(RequestKind.GET);
        return store.get(key).thenApply(this::countIn);
    }

    @Override
    public CompletableFuture<List<ByteBuf>> getSplit(String key, long position, int[] lengths) {
        counters.request(RequestKind.GET);
        return store.getSplit(key, position, lengths).thenApply(parts -> {
            parts.forEach(this::countIn);
            return parts;
        });
    }

    private ByteBuf countIn(ByteBuf buf) {
        counters.bytesIn.add(buf.readableBytes());
        return buf;
    }

    @Override
    public CompletableFuture<Optional<ObjectInfo>> head(String key) {
        counters.request(RequestKind.HEAD);
        return store.head(key);
    }

    @Override
    public CompletableFuture<List<ObjectInfo>> list(String prefix) {
        counters.request(RequestKind.LIST);
        return store.list(prefix);
    }

    @Override
    public CompletableFuture<Void> delete(Collection<String> keys) {
        counters.request(RequestKind.DELETE);
        return store.delete(keys);
    }

    @Override
    public CompletableFuture<MultipartUpload> startMultipart(String key) {
        counters.request(RequestKind.CREATE_MULTIPART);
        return store.startMultipart(key); // parts of a metadata upload are not counted separately
    }

    @Override
    public int minPartSizeBytes() {
        return store.minPartSizeBytes();
    }

    @Override
    public boolean copiesOnThisNode() {
        return store.copiesOnThisNode();
    }

    @Override
    public String description() {
        return store.description();
    }

    @Override
    public void close() {
        // the backend belongs to the ObjectStorage
    }
}
