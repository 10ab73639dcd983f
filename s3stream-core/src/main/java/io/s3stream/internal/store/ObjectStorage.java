package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.netty.util.ReferenceCounted;
import io.s3stream.StorageIOException;
import io.s3stream.internal.util.Futures;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectNotFoundException;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The engine's view of an {@link ObjectStore}: the concerns every backend shares, implemented once.
 *
 * <ul>
 *   <li><b>Retries.</b> A request failing with a retriable {@link ObjectStoreException} (throttling, 5xx, timeouts) is
 *       repeated with exponential backoff and full jitter, up to {@link RetryPolicy#maxAttempts()}; then the caller gets
 *       a {@link StorageIOException} naming the store (scheme, bucket, prefix), the key, the attempts and the last
 *       error with its status. Final errors (missing key, bad credentials) are not retried.</li>
 *   <li><b>Retry budget.</b> Retries draw on a {@link RetryBudget} refilled by successes: when the store fails nearly
 *       everything, callers get the failure after one attempt and the engine's upload loop turns it into
 *       back-pressure, instead of every request retrying {@code maxAttempts} times.</li>
 *   <li><b>Timeouts.</b> Each attempt has a deadline, counted from when it gets a slot; an attempt that does not
 *       answer in time counts as retriable, and its answer, if it comes later, is released.</li>
 *   <li><b>Concurrency and priorities.</b> At most {@link Settings#maxInFlight()} requests are in flight; a
 *       {@link RequestScheduler} gives free slots to the highest {@link Priority} first and caps the read classes, so
 *       catch-up reads never delay uploads.</li>
 *   <li><b>Range-read merging.</b> Ranged GETs of one object that wait for a slot at the same time, and lie within
 *       {@link Settings#mergeGapBytes()} of each other, become one GET of at most {@link Settings#mergeMaxBytes()};
 *       each caller gets its own slice. A merge never delays a read: only reads that are queued anyway are merged.</li>
 *   <li><b>Hedged reads</b> (off unless {@link Settings#hedgeAfter()} is set): a GET attempt without an answer after
 *       that delay is sent a second time; the first answer wins and the other's bytes are released.</li>
 *   <li><b>Multipart.</b> {@link #putMultipart} uploads parts concurrently and aborts the upload when it fails.</li>
 *   <li><b>Cost model.</b> Requests by {@link RequestKind} (every attempt is a request: that is what a bill counts)
 *       and bytes in and out are counted, reported through {@code StorageMetrics} and logged every
 *       {@link Settings#costLogInterval()} by {@link #costReport()}.</li>
 * </ul>
 */
public final class ObjectStorage implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ObjectStorage.class.getName());

    private final ObjectStore store;
    private final RetryPolicy retry;
    private final Settings settings;
    private final RequestScheduler scheduler;
    private final RetryBudget budget;
    private final ScheduledExecutorService timer;
    private final StoreCounters counters = new StoreCounters();
    private final ReadMerger merger;
    private long lastReportedActivity = -1; // the report timer's
    private final AtomicBoolean closed = new AtomicBoolean();

    public ObjectStorage(ObjectStore store, RetryPolicy retry) {
        this(store, retry, Settings.defaults());
    }

    public ObjectStorage(ObjectStore store, RetryPolicy retry, Settings settings) {
        this.store = store;
        this.retry = retry;
        this.settings = settings;
        this.scheduler = new RequestScheduler(settings.maxInFlight());
        this.budget = new RetryBudget(settings.retryBudgetTokens(), settings.retryRefundPerSuccess());
        this.merger = new ReadMerger(settings.mergeGapBytes(), settings.mergeMaxBytes(), counters.mergedReads);
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "s3stream-object-store-timer");
            t.setDaemon(true);
            return t;
        });
        if (settings.costLogInterval() != null && !settings.costLogInterval().isZero()) {
            long ms = settings.costLogInterval().toMillis();
            timer.scheduleAtFixedRate(() -> {
                String report = periodicCostReport();
                if (report != null) {
                    LOG.log(System.Logger.Level.INFO, report);
                }
            }, ms, ms,
                    TimeUnit.MILLISECONDS);
        }
    }

    /** The backend, unwrapped (for metadata stores that keep their own retry policy). */
    public ObjectStore backend() {
        return store;
    }

    /**
     * The backend with request and byte counting only ({@link CountingObjectStore}), for metadata stores that keep
     * their own retry policy, so that their requests appear in {@link #requestCounts()} and the cost report with
     * everything else. Closing it does not close the backend.
     */
    public ObjectStore countedBackend() {
        return new CountingObjectStore(store, counters);
    }

    public String description() {
        return store.description();
    }

    // -------------------------------------------------------------------------------------------------------- writes

    public CompletableFuture<Void> put(String key, ByteBuf data) {
        return put(key, data, Priority.UPLOAD);
    }

    public CompletableFuture<Void> put(String key, ByteBuf data, Priority priority) {
        int size = data.readableBytes();
        return withRetry(RequestKind.PUT, key, priority, () -> store.put(key, data.duplicate()))
                .thenRun(() -> counters.bytesOut.add(size));
    }

    /**
     * Creates {@code key} only if it is free, in <em>one</em> attempt (scheduled, timed out and counted like every
     * request, but not retried). A conditional create cannot be retried blindly: after an attempt whose outcome is
     * unclear (a timeout, a reset connection) a repeat that finds the key cannot tell whether this caller created it.
     * Callers retry themselves and settle an unclear outcome by reading the key (the manifest and the object WAL compare
     * it with their own bytes).
     */
    public CompletableFuture<Boolean> putIfAbsent(String key, ByteBuf data, Priority priority) {
        int size = data.readableBytes();
        return withRetry(RequestKind.CREATE_IF_ABSENT, key, priority, 1, () -> store.putIfAbsent(key, data.duplicate()))
                .thenApply(created -> {
                    counters.bytesOut.add(size);
                    return created;
                });
    }

    /** A view of this storage as an {@link ObjectStore} whose requests all run at {@code priority}; closing it does not close this storage. */
    public ObjectStore asObjectStore(Priority priority) {
        return new ObjectStoreView(this, priority, false);
    }

    /** {@link #asObjectStore}, for a storage opened for the view's user alone: closing the view closes this storage. */
    public ObjectStore asOwnedObjectStore(Priority priority) {
        return new ObjectStoreView(this, priority, true);
    }

    /**
     * Writes {@code data} as a multipart upload of parts of {@code partSizeBytes} (raised to the store's minimum),
     * uploaded concurrently under the scheduler's limits. On failure the upload is aborted (best effort) and the
     * future fails with the first error; the object never appears half-written.
     */
    public CompletableFuture<Void> putMultipart(String key, ByteBuf data, int partSizeBytes, Priority priority) {
        int partSize = Math.max(partSizeBytes, store.minPartSizeBytes());
        int size = data.readableBytes();
        return withRetry(RequestKind.CREATE_MULTIPART, key, priority, () -> store.startMultipart(key))
                .thenCompose(upload -> {
                    List<CompletableFuture<Void>> parts = new ArrayList<>();
                    int partNumber = 1;
                    for (int offset = 0; offset < size || partNumber == 1; offset += partSize, partNumber++) {
                        int length = Math.min(partSize, size - offset);
                        ByteBuf part = data.slice(data.readerIndex() + offset, length);
                        int n = partNumber;
                        parts.add(withRetry(RequestKind.PART, key + " part " + n, priority,
                                () -> upload.uploadPart(n, part.duplicate())).thenRun(() -> counters.bytesOut.add(length)));
                        if (length == 0) {
                            break;
                        }
                    }
                    return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new))
                            .thenCompose(ignored -> withRetry(RequestKind.COMPLETE, key, priority, upload::complete))
                            .exceptionallyCompose(error -> {
                                Throwable cause = Futures.unwrap(error);
                                counters.request(RequestKind.ABORT_MULTIPART);
                                return upload.abort().handle((ignored, abortError) -> {
                                    if (abortError != null) {
                                        LOG.log(System.Logger.Level.WARNING, "abort of multipart upload of " + key
                                                + " failed (the store expires the parts): " + abortError);
                                    }
                                    throw cause instanceof RuntimeException re ? re : new CompletionException(cause);
                                });
                            });
                });
    }

    // --------------------------------------------------------------------------------------------------------- reads

    /** Ranged read as a tail read; the result is checked to have exactly {@code length} bytes (a short read is retried). */
    public CompletableFuture<ByteBuf> get(String key, long position, int length) {
        return get(key, position, length, Priority.TAIL_READ);
    }

    /**
     * Ranged read of exactly {@code length} bytes (a shorter or longer answer is retried, never returned), possibly
     * merged with neighbouring reads of the same object (as a split read, so the buffer holds only these bytes unless
     * another read overlaps them); the caller owns the returned buffer.
     */
    public CompletableFuture<ByteBuf> get(String key, long position, int length, Priority priority) {
        if (settings.mergeGapBytes() < 0 || length <= 0) {
            return rangedGet(key, position, length, priority);
        }
        return merger.read(key, position, length, group -> withRetry(RequestKind.GET, key, priority, () -> {
            group.seal();
            int[] pieces = group.pieces();
            if (pieces.length == 1) {
                return hedged(() -> checkedGet(key, group.start(), pieces[0]).thenApply(List::of),
                        ObjectStorage::releaseAll);
            }
            return hedged(() -> checkedGetSplit(key, group.start(), pieces), ObjectStorage::releaseAll);
        }));
    }

    private CompletableFuture<ByteBuf> rangedGet(String key, long position, int length, Priority priority) {
        return withRetry(RequestKind.GET, key, priority,
                () -> hedged(() -> checkedGet(key, position, length), ByteBuf::release));
    }

    private CompletableFuture<ByteBuf> checkedGet(String key, long position, int length) {
        return store.get(key, position, length).thenApply(buf -> {
            if (buf.readableBytes() != length) {
                int got = buf.readableBytes();
                buf.release();
                throw new ObjectStoreException(store.description() + ": GET " + key + " [" + position + ", "
                        + (position + length) + ") returned " + got + " bytes instead of " + length, true);
            }
            counters.bytesIn.add(length);
            return buf;
        });
    }

    /**
     * Ranged read of consecutive ranges in one request, each into a buffer of its own ({@link ObjectStore#getSplit});
     * an answer whose buffers do not have exactly the lengths asked for is retried, never returned. Not merged with
     * other reads (the caller asked for the span it wants); retried and hedged like {@link #get(String, long, int,
     * Priority)}. The caller owns the returned buffers.
     */
    public CompletableFuture<List<ByteBuf>> getSplit(String key, long position, int[] lengths, Priority priority) {
        int[] asked = lengths.clone();
        return withRetry(RequestKind.GET, key, priority,
                () -> hedged(() -> checkedGetSplit(key, position, asked), ObjectStorage::releaseAll));
    }

    private CompletableFuture<List<ByteBuf>> checkedGetSplit(String key, long position, int[] lengths) {
        return store.getSplit(key, position, lengths).thenApply(parts -> {
            long bytes = 0;
            boolean exact = parts.size() == lengths.length;
            for (int i = 0; exact && i < lengths.length; i++) {
                exact = parts.get(i).readableBytes() == lengths[i];
                bytes += lengths[i];
            }
            if (!exact) {
                releaseAll(parts);
                throw new ObjectStoreException(store.description() + ": GET " + key + " from " + position + " split "
                        + Arrays.toString(lengths) + " returned " + parts.size() + " buffers of other lengths", true);
            }
            counters.bytesIn.add(bytes);
            return parts;
        });
    }

    private static void releaseAll(List<ByteBuf> buffers) {
        buffers.forEach(ByteBuf::release);
    }

    /**
     * Sends a second copy of a read that has not answered after {@code hedgeAfter}; the first answer wins and the
     * other's is handed to {@code discard}.
     */
    private <T> CompletableFuture<T> hedged(Supplier<CompletableFuture<T>> read, Consumer<T> discard) {
        Duration after = settings.hedgeAfter();
        CompletableFuture<T> first = read.get();
        if (after == null || first.isDone()) {
            return first;
        }
        CompletableFuture<T> winner = new CompletableFuture<>();
        AtomicBoolean hedgeSent = new AtomicBoolean();
        Runnable hedge = () -> {
            if (winner.isDone() || !hedgeSent.compareAndSet(false, true)) {
                return;
            }
            counters.hedgedReads.increment();
            counters.request(RequestKind.GET);
            read.get().whenComplete((value, error) -> settle(winner, value, error, true, discard));
        };
        var scheduled = timer.schedule(hedge, after.toMillis(), TimeUnit.MILLISECONDS);
        first.whenComplete((value, error) -> {
            scheduled.cancel(false);
            settle(winner, value, error, hedgeSent.get(), discard);
        });
        return winner;
    }

    /** First success wins; a late success is discarded; a failure counts only when no other attempt is left. */
    private static <T> void settle(CompletableFuture<T> winner, T value, Throwable error, boolean otherPending,
                                   Consumer<T> discard) {
        if (error == null) {
            if (!winner.complete(value)) {
                discard.accept(value);
            }
        } else if (!otherPending) {
            winner.completeExceptionally(error);
        }
    }

    public CompletableFuture<ByteBuf> get(String key) {
        return get(key, Priority.TAIL_READ);
    }

    public CompletableFuture<ByteBuf> get(String key, Priority priority) {
        return withRetry(RequestKind.GET, key, priority, () -> store.get(key).thenApply(buf -> {
            counters.bytesIn.add(buf.readableBytes());
            return buf;
        }));
    }

    public CompletableFuture<Optional<ObjectInfo>> head(String key) {
        return head(key, Priority.TAIL_READ);
    }

    public CompletableFuture<Optional<ObjectInfo>> head(String key, Priority priority) {
        return withRetry(RequestKind.HEAD, key, priority, () -> store.head(key));
    }

    public CompletableFuture<List<ObjectInfo>> list(String prefix) {
        return list(prefix, Priority.COMPACTION);
    }

    public CompletableFuture<List<ObjectInfo>> list(String prefix, Priority priority) {
        return withRetry(RequestKind.LIST, prefix, priority, () -> store.list(prefix));
    }

    public CompletableFuture<Void> delete(Collection<String> keys) {
        return delete(keys, Priority.COMPACTION);
    }

    public CompletableFuture<Void> delete(Collection<String> keys, Priority priority) {
        if (keys.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        return withRetry(RequestKind.DELETE, keys.size() + " keys", priority, () -> store.delete(keys));
    }

    /** Starts a multipart upload (retried); parts and completion go through {@link #uploadPart} and friends. */
    public CompletableFuture<ObjectStore.MultipartUpload> startMultipart(String key) {
        return startMultipart(key, Priority.COMPACTION);
    }

    public CompletableFuture<ObjectStore.MultipartUpload> startMultipart(String key, Priority priority) {
        return withRetry(RequestKind.CREATE_MULTIPART, key, priority, () -> store.startMultipart(key));
    }

    /** Uploads one part of {@code upload} (retried); does not take ownership of {@code data}. */
    public CompletableFuture<Void> uploadPart(ObjectStore.MultipartUpload upload, int partNumber, ByteBuf data) {
        return uploadPart(upload, partNumber, data, Priority.COMPACTION);
    }

    public CompletableFuture<Void> uploadPart(ObjectStore.MultipartUpload upload, int partNumber, ByteBuf data,
                                              Priority priority) {
        int size = data.readableBytes();
        return withRetry(RequestKind.PART, upload.key() + " part " + partNumber, priority,
                () -> upload.uploadPart(partNumber, data.duplicate())).thenRun(() -> counters.bytesOut.add(size));
    }

    /** Fills one part from a range of an existing object, server-side where the backend can (retried). */
    public CompletableFuture<Void> uploadPartCopy(ObjectStore.MultipartUpload upload, int partNumber, String sourceKey,
                                                  long position, long length) {
        return uploadPartCopy(upload, partNumber, sourceKey, position, length, Priority.COMPACTION);
    }

    public CompletableFuture<Void> uploadPartCopy(ObjectStore.MultipartUpload upload, int partNumber, String sourceKey,
                                                  long position, long length, Priority priority) {
        return withRetry(RequestKind.PART_COPY, upload.key() + " part " + partNumber + " from " + sourceKey,
                priority, () -> upload.uploadPartCopy(partNumber, sourceKey, position, length));
    }

    /** Completes a multipart upload (retried). */
    public CompletableFuture<Void> completeMultipart(ObjectStore.MultipartUpload upload) {
        return completeMultipart(upload, Priority.COMPACTION);
    }

    public CompletableFuture<Void> completeMultipart(ObjectStore.MultipartUpload upload, Priority priority) {
        return withRetry(RequestKind.COMPLETE, upload.key(), priority, upload::complete);
    }

    /** Aborts a multipart upload, once, ignoring failures (the parts are garbage either way). */
    public CompletableFuture<Void> abortMultipart(ObjectStore.MultipartUpload upload) {
        try {
            return upload.abort().exceptionally(e -> null);
        } catch (RuntimeException e) {
            return CompletableFuture.completedFuture(null);
        }
    }

    // ---------------------------------------------------------------------------------------------------- cost model

    /** Requests by kind since start (every attempt counts). */
    public Map<String, Long> requestCounts() {
        return counters.requestCounts();
    }

    public long bytesOut() {
        return counters.bytesOut.sum();
    }

    public long bytesIn() {
        return counters.bytesIn.sum();
    }

    public long retries() {
        return counters.retries.sum();
    }

    /** Retriable failures returned without retry because the budget was spent. */
    public long budgetRefusals() {
        return counters.budgetRefusals.sum();
    }

    /** Ranged reads served by another read's GET. */
    public long mergedReads() {
        return counters.mergedReads.sum();
    }

    public long hedgedReads() {
        return counters.hedgedReads.sum();
    }

    /**
     * The periodic report: {@link #costReport()}, or null when no request was made since the last one (an idle engine
     * does not log a line a minute about nothing). Called by the report timer only.
     */
    String periodicCostReport() {
        long activity = counters.activity();
        if (activity == lastReportedActivity) {
            return null;
        }
        lastReportedActivity = activity;
        return costReport();
    }

    /** One line for the log: requests by kind, bytes, write requests per GiB, retries, merging ({@link StoreCounters}). */
    public String costReport() {
        return counters.report(store.description(), scheduler.inFlight(), scheduler.queued());
    }

    // ------------------------------------------------------------------------------------------------------- retries

    private <T> CompletableFuture<T> withRetry(RequestKind kind, String key, Priority priority,
                                               Supplier<CompletableFuture<T>> request) {
        return withRetry(kind, key, priority, retry.maxAttempts(), request);
    }

    private <T> CompletableFuture<T> withRetry(RequestKind kind, String key, Priority priority, int maxAttempts,
                                               Supplier<CompletableFuture<T>> request) {
        CompletableFuture<T> result = new CompletableFuture<>();
        attempt(kind, key, priority, request, 1, maxAttempts, result);
        return result;
    }

    /**
     * The backend's answer to one attempt, on a future of its own that fails at the attempt's deadline. The backend's
     * future is left alone, so an answer that comes after the deadline still arrives, finds this one failed, and has
     * its buffers released here (a late {@code orTimeout} on the backend's own future would drop them unreleased).
     */
    private <T> CompletableFuture<T> withDeadline(CompletableFuture<T> answer) {
        CompletableFuture<T> timed = new CompletableFuture<>();
        answer.whenComplete((value, error) -> {
            if (error != null) {
                timed.completeExceptionally(error);
            } else if (!timed.complete(value)) {
                releaseLate(value);
            }
        });
        return timed.orTimeout(retry.attemptTimeout().toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Releases an answer nobody will take: a buffer, or a list of them (a split read); other answers hold none. */
    private static void releaseLate(Object value) {
        if (value instanceof ReferenceCounted buffer) {
            buffer.release();
        } else if (value instanceof List<?> list) {
            for (Object v : list) {
                if (v instanceof ReferenceCounted buffer) {
                    buffer.release();
                }
            }
        }
    }

    private <T> void attempt(RequestKind kind, String key, Priority priority, Supplier<CompletableFuture<T>> request,
                             int attempt, int maxAttempts, CompletableFuture<T> result) {
        scheduler.submit(priority, () -> {
            counters.request(kind);
            CompletableFuture<T> f;
            try {
                f = request.get();
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            return withDeadline(f);
        }).whenComplete((value, error) -> {
            if (error == null) {
                budget.onSuccess();
                result.complete(value);
                return;
            }
            Throwable cause = Futures.unwrap(error);
            boolean retriable = cause instanceof TimeoutException
                    || (cause instanceof ObjectStoreException ose && ose.isRetriable());
            if (cause instanceof ObjectNotFoundException || !retriable) {
                result.completeExceptionally(cause);
                return;
            }
            if (attempt >= maxAttempts) {
                if (maxAttempts == 1) {
                    result.completeExceptionally(cause); // the caller retries (conditional creates)
                    return;
                }
                result.completeExceptionally(new StorageIOException(store.description() + ": " + kind + " " + key
                        + " failed after " + attempt + " attempts; last error: " + describe(cause), cause, true));
                return;
            }
            if (closed.get()) {
                result.completeExceptionally(new StorageIOException(store.description() + ": " + kind + " " + key
                        + " failed while the store is closing; last error: " + describe(cause), cause, true));
                return;
            }
            if (!budget.tryAcquire()) {
                counters.budgetRefusals.increment();
                result.completeExceptionally(new StorageIOException(store.description() + ": " + kind + " " + key
                        + " failed and the retry budget is spent (the store is failing most requests; callers back "
                        + "off); last error: " + describe(cause), cause, true));
                return;
            }
            counters.retries.increment();
            long cap = Math.min(retry.maxBackoff().toMillis(), retry.baseBackoff().toMillis() << Math.min(20, attempt - 1));
            long delay = ThreadLocalRandom.current().nextLong(cap + 1); // full jitter
            try {
                timer.schedule(() -> attempt(kind, key, priority, request, attempt + 1, maxAttempts, result), delay,
                        TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                result.completeExceptionally(new StorageIOException(store.description() + ": closed", cause, true));
            }
        });
    }

    private static String describe(Throwable t) {
        if (t instanceof TimeoutException) {
            return "no answer within the attempt timeout";
        }
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.INFO, costReport());
            timer.shutdownNow();
            store.close();
        }
    }

    // ----------------------------------------------------------------------------------------------------- settings

    /** Kinds of request, for the cost model. */
    public enum RequestKind {
        PUT, PART, PART_COPY, COMPLETE, CREATE_MULTIPART, ABORT_MULTIPART, GET, HEAD, LIST, DELETE, CREATE_IF_ABSENT;

        boolean isWrite() {
            return this == PUT || this == PART || this == PART_COPY || this == COMPLETE || this == CREATE_MULTIPART
                    || this == CREATE_IF_ABSENT;
        }
    }

    /**
     * Priority classes, highest first. A free request slot goes to the highest class waiting; reads are capped to a
     * share of the slots so that they never hold every slot an upload needs.
     */
    public enum Priority {
        /** Writes of a WAL kept in object storage: appends wait on each one. */
        WAL(1.0),
        /** Uploads of the log cache: the WAL and appends wait on them. */
        UPLOAD(1.0),
        /** Compaction and deletion: background, but they bound the object count. */
        COMPACTION(1.0),
        /** Reads near the end of a stream (consumers that fell slightly behind). */
        TAIL_READ(0.75),
        /** Reads of old data (replays, new consumers from the start). */
        CATCH_UP_READ(0.5);

        private final double shareOfSlots;

        Priority(double shareOfSlots) {
            this.shareOfSlots = shareOfSlots;
        }

        double shareOfSlots() {
            return shareOfSlots;
        }
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

    /**
     * Limits and optional behaviours of the layer.
     *
     * @param maxInFlight           requests in flight at once, all classes together
     * @param retryBudgetTokens     retries allowed in a burst
     * @param retryRefundPerSuccess tokens a success earns back (0.1: one retry per ten successes, sustained)
     * @param mergeGapBytes         largest gap between two ranged reads merged into one GET; negative: no merging
     * @param mergeMaxBytes         largest merged GET
     * @param hedgeAfter            delay after which a GET is hedged, or null for no hedging
     * @param costLogInterval       period of the cost report in the log, or null / zero for none
     */
    public record Settings(int maxInFlight, int retryBudgetTokens, double retryRefundPerSuccess, int mergeGapBytes,
                           int mergeMaxBytes, Duration hedgeAfter, Duration costLogInterval) {
        public static Settings defaults() {
            return new Settings(64, 100, 0.1, 256 * 1024, 8 * 1024 * 1024, null, Duration.ofMinutes(1));
        }

        public Settings withMaxInFlight(int n) {
            return new Settings(n, retryBudgetTokens, retryRefundPerSuccess, mergeGapBytes, mergeMaxBytes, hedgeAfter,
                    costLogInterval);
        }

        public Settings withMerging(int gapBytes, int maxBytes) {
            return new Settings(maxInFlight, retryBudgetTokens, retryRefundPerSuccess, gapBytes, maxBytes, hedgeAfter,
                    costLogInterval);
        }

        public Settings withRetryBudget(int tokens, double refundPerSuccess) {
            return new Settings(maxInFlight, tokens, refundPerSuccess, mergeGapBytes, mergeMaxBytes, hedgeAfter,
                    costLogInterval);
        }

        public Settings withHedgeAfter(Duration after) {
            return new Settings(maxInFlight, retryBudgetTokens, retryRefundPerSuccess, mergeGapBytes, mergeMaxBytes,
                    after, costLogInterval);
        }

        public Settings withCostLogInterval(Duration interval) {
            return new Settings(maxInFlight, retryBudgetTokens, retryRefundPerSuccess, mergeGapBytes, mergeMaxBytes,
                    hedgeAfter, interval);
        }
    }
}
