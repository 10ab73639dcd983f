package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.s3stream.StorageIOException;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectNotFoundException;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;

import java.time.Duration;
import java.util.Collection;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * The engine's view of an {@link ObjectStore}: the concerns every backend shares, implemented once.
 *
 * <ul>
 *   <li><b>Retries.</b> A request failing with a retriable {@link ObjectStoreException} (throttling, 5xx, timeouts) is
 *       repeated with exponential backoff and full jitter, up to {@link RetryPolicy#maxAttempts()}; then the caller gets
 *       a {@link StorageIOException} naming the store, the key, the attempts and the last error. Final errors (missing
 *       key, bad credentials) are not retried.</li>
 *   <li><b>Timeouts.</b> Each attempt has a deadline; an attempt that does not answer in time counts as retriable.</li>
 *   <li><b>Cost model.</b> Requests by {@link RequestKind} and bytes in and out are counted; the counters are the
 *       input of the cost report (requests and bytes per GiB ingested).</li>
 * </ul>
 * Concurrency limits, priority classes and range-read merging belong here too and arrive with the S3 and cache work.
 */
public final class ObjectStorage implements AutoCloseable {
    private final ObjectStore store;
    private final RetryPolicy retry;
    private final ScheduledExecutorService timer;
    private final Map<RequestKind, LongAdder> requests = new EnumMap<>(RequestKind.class);
    private final LongAdder bytesOut = new LongAdder();
    private final LongAdder bytesIn = new LongAdder();
    private final LongAdder retries = new LongAdder();

    public ObjectStorage(ObjectStore store, RetryPolicy retry) {
        this.store = store;
        this.retry = retry;
        for (RequestKind kind : RequestKind.values()) {
            requests.put(kind, new LongAdder());
        }
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "s3stream-object-store-timer");
            t.setDaemon(true);
            return t;
        });
    }

    /** The backend, unwrapped (for metadata stores that keep their own retry policy). */
    public ObjectStore backend() {
        return store;
    }

    public String description() {
        return store.description();
    }

    public CompletableFuture<Void> put(String key, ByteBuf data) {
        int size = data.readableBytes();
        return withRetry(RequestKind.PUT, key, () -> store.put(key, data.duplicate())).thenRun(() -> bytesOut.add(size));
    }

    public CompletableFuture<Boolean> putIfAbsent(String key, ByteBuf data) {
        int size = data.readableBytes();
        return withRetry(RequestKind.CREATE_IF_ABSENT, key, () -> store.putIfAbsent(key, data.duplicate())).thenApply(created -> {
            bytesOut.add(size);
            return created;
        });
    }

    /** Ranged read; the result is checked to have exactly {@code length} bytes (a short read is retried). */
    public CompletableFuture<ByteBuf> get(String key, long position, int length) {
        return withRetry(RequestKind.GET, key, () -> store.get(key, position, length).thenApply(buf -> {
            if (buf.readableBytes() != length) {
                int got = buf.readableBytes();
                buf.release();
                throw new ObjectStoreException(store.description() + ": GET " + key + " [" + position + ", "
                        + (position + length) + ") returned " + got + " bytes instead of " + length, true);
            }
            bytesIn.add(length);
            return buf;
        }));
    }

    public CompletableFuture<ByteBuf> get(String key) {
        return withRetry(RequestKind.GET, key, () -> store.get(key).thenApply(buf -> {
            bytesIn.add(buf.readableBytes());
            return buf;
        }));
    }

    public CompletableFuture<Optional<ObjectInfo>> head(String key) {
        return withRetry(RequestKind.HEAD, key, () -> store.head(key));
    }

    public CompletableFuture<List<ObjectInfo>> list(String prefix) {
        return withRetry(RequestKind.LIST, prefix, () -> store.list(prefix));
    }

    public CompletableFuture<Void> delete(Collection<String> keys) {
        if (keys.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        return withRetry(RequestKind.DELETE, keys.size() + " keys", () -> store.delete(keys));
    }

    /** Starts a multipart upload (retried); parts and completion go through {@link #uploadPart} and friends. */
    public CompletableFuture<ObjectStore.MultipartUpload> startMultipart(String key) {
        return withRetry(RequestKind.PUT, key, () -> store.startMultipart(key));
    }

    /** Uploads one part of {@code upload} (retried); does not take ownership of {@code data}. */
    public CompletableFuture<Void> uploadPart(ObjectStore.MultipartUpload upload, int partNumber, ByteBuf data) {
        int size = data.readableBytes();
        return withRetry(RequestKind.PART, upload.key() + " part " + partNumber,
                () -> upload.uploadPart(partNumber, data.duplicate())).thenRun(() -> bytesOut.add(size));
    }

    /** Fills one part from a range of an existing object, server-side where the backend can (retried). */
    public CompletableFuture<Void> uploadPartCopy(ObjectStore.MultipartUpload upload, int partNumber, String sourceKey,
                                                  long position, long length) {
        return withRetry(RequestKind.PART_COPY, upload.key() + " part " + partNumber + " from " + sourceKey,
                () -> upload.uploadPartCopy(partNumber, sourceKey, position, length));
    }

    /** Completes a multipart upload (retried). */
    public CompletableFuture<Void> completeMultipart(ObjectStore.MultipartUpload upload) {
        return withRetry(RequestKind.COMPLETE, upload.key(), upload::complete);
    }

    /** Aborts a multipart upload, once, ignoring failures (the parts are garbage either way). */
    public CompletableFuture<Void> abortMultipart(ObjectStore.MultipartUpload upload) {
        try {
            return upload.abort().exceptionally(e -> null);
        } catch (RuntimeException e) {
            return CompletableFuture.completedFuture(null);
        }
    }

    /** Requests by kind since start. */
    public Map<String, Long> requestCounts() {
        Map<String, Long> out = new java.util.LinkedHashMap<>();
        requests.forEach((k, v) -> out.put(k.name(), v.sum()));
        return out;
    }

    public long bytesOut() {
        return bytesOut.sum();
    }

    public long bytesIn() {
        return bytesIn.sum();
    }

    public long retries() {
        return retries.sum();
    }

    private <T> CompletableFuture<T> withRetry(RequestKind kind, String key, Supplier<CompletableFuture<T>> request) {
        CompletableFuture<T> result = new CompletableFuture<>();
        attempt(kind, key, request, 1, result);
        return result;
    }

    private <T> void attempt(RequestKind kind, String key, Supplier<CompletableFuture<T>> request, int attempt,
                             CompletableFuture<T> result) {
        requests.get(kind).increment();
        CompletableFuture<T> f;
        try {
            f = request.get();
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.orTimeout(retry.attemptTimeout().toMillis(), TimeUnit.MILLISECONDS).whenComplete((value, error) -> {
            if (error == null) {
                result.complete(value);
                return;
            }
            Throwable cause = unwrap(error);
            boolean retriable = cause instanceof TimeoutException
                    || (cause instanceof ObjectStoreException ose && ose.isRetriable());
            if (cause instanceof ObjectNotFoundException || !retriable) {
                result.completeExceptionally(cause);
                return;
            }
            if (attempt >= retry.maxAttempts()) {
                result.completeExceptionally(new StorageIOException(store.description() + ": " + kind + " " + key
                        + " failed after " + attempt + " attempts; last error: " + describe(cause), cause, true));
                return;
            }
            retries.increment();
            long cap = Math.min(retry.maxBackoff().toMillis(), retry.baseBackoff().toMillis() << Math.min(20, attempt - 1));
            long delay = ThreadLocalRandom.current().nextLong(cap + 1); // full jitter
            timer.schedule(() -> attempt(kind, key, request, attempt + 1, result), delay, TimeUnit.MILLISECONDS);
        });
    }

    private static String describe(Throwable t) {
        if (t instanceof TimeoutException) {
            return "no answer within the attempt timeout";
        }
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }

    static Throwable unwrap(Throwable t) {
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    @Override
    public void close() {
        timer.shutdownNow();
        store.close();
    }

    /** Kinds of request, for the cost model. */
    public enum RequestKind {
        PUT, PART, PART_COPY, COMPLETE, GET, HEAD, LIST, DELETE, CREATE_IF_ABSENT
    }

    /**
     * Retry settings.
     *
     * @param maxAttempts    attempts per request, including the first
     * @param baseBackoff    backoff cap of the first retry; doubles per attempt
     * @param maxBackoff     largest backoff cap
     * @param attemptTimeout deadline of one attempt
     */
    public record RetryPolicy(int maxAttempts, Duration baseBackoff, Duration maxBackoff, Duration attemptTimeout) {
        public static RetryPolicy defaults() {
            return new RetryPolicy(8, Duration.ofMillis(50), Duration.ofSeconds(5), Duration.ofSeconds(30));
        }
    }
}
