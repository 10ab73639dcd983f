package io.s3stream.wal.object.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.NodeFencedException;
import io.s3stream.OverCapacityException;
import io.s3stream.StorageIOException;
import io.s3stream.StreamClosedException;
import io.s3stream.internal.util.Futures;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WalRecordFormat;
import io.s3stream.spi.WalSegment;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.wal.object.internal.WalObjectCodec.Appended;
import io.s3stream.wal.object.internal.WalObjectDescriptor.Header;
import io.s3stream.wal.object.internal.WalObjectDescriptor.RecordEntry;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A write-ahead log kept in object storage: the records of a time/size window become one object, written with a
 * conditional create, so a node needs no disk and another node can take its log over.
 *
 * <h2>Write path</h2>
 * Appends join the open <em>window</em>; it closes after {@code batchMs}, at {@code batchBytes}, or before a record
 * that does not continue its stream's previous record in the window (another epoch, or not contiguous), so an object
 * holds at most one range per stream. A closed window gets the next sequence number and is laid out as an object in
 * object format v1 with a WAL block ({@link WalObjectDescriptor}), then created with {@code putIfAbsent}. Up to
 * {@code maxInFlight} objects are written at once; a window waits for a free slot. An append completes once its object
 * and every earlier one are durable, so completions are in position order.
 *
 * <h2>Concurrency</h2>
 * One platform thread, the conductor, owns every piece of mutable state (windows, objects in flight, the fence, the
 * capacity accounting). Appends, trims and store completions only hand it tasks; futures complete on it, so callbacks
 * must not block. {@link #segments} reads a concurrent map the conductor writes.
 *
 * <h2>Durability and fencing</h2>
 * Every object is created only if its key is free. A node that takes the log over (or the owner restarting) seals it
 * in {@link #recover} ({@link ObjectWalRecovery}): it creates a seal at the first free sequence number, so an old
 * owner that is still running gets a conflict there and can never acknowledge anything from there on. Its objects
 * already in flight beyond the seal (at most {@code maxInFlight}) are orphans: the seal reserves
 * {@link WalObjectDescriptor#SEAL_SKIP} sequence numbers for them, so the new owner never collides with them. A create
 * whose answer is unclear (a timeout, a reset) is retried, and a "key exists" then is settled by reading the object
 * back: its own bytes mean success, anything else means a newer owner, and this log fails every unacknowledged and
 * later append with {@link NodeFencedException}.
 *
 * <h2>Failure</h2>
 * A create failing with a retriable error is retried with backoff for up to {@code failAfterMs}; then the log is
 * fenced with {@link StorageIOException} (appends fail fast; acknowledged records are durable in their objects). When
 * the bytes appended and not yet trimmed reach {@code capacity}, appends wait, in order, for a trim, up to the
 * back-pressure timeout, then fail with {@link OverCapacityException}.
 *
 * <h2>Objects belong to the manifest</h2>
 * Every object this log creates is reported by {@link #segments}; the engine commits each one (with its records, or
 * empty so the manifest deletes it). So {@link #trim} deletes nothing: it only releases bookkeeping and capacity.
 * The one exception is an object the manifest never knew: an orphan created after the listing of the recovery that
 * fenced its writer. The next {@link #recover} finds it below the committed position and deletes it.
 */
public final class ObjectWal implements WriteAheadLog {
    private static final System.Logger LOG = System.getLogger(ObjectWal.class.getName());
    private static final int MAX_RECORD_BYTES = 64 << 20;
    private static final long RETRY_BASE_MS = 50;
    private static final long RETRY_MAX_MS = 2_000;
    /** Where a log used outside an engine records its trim point (see {@link WalContext#trimsRecorded()}). */
    static final String TRIM_MARKER = "trim";

    private final ObjectWalConfig config;
    private final WalContext context;
    private final ObjectStore store;
    private final boolean ownsStore;
    private final String nodePrefix;
    private final String description;
    private final ByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
    private final long token = new SecureRandom().nextLong();
    private final ScheduledExecutorService conductor;
    /** Segments not yet trimmed, by start position: written by the conductor (and recovery), read by the engine. */
    private final ConcurrentSkipListMap<Long, WalSegment> segments = new ConcurrentSkipListMap<>();

    // ---- conductor-owned state (recovery sets it before the conductor runs) ----
    private final ArrayDeque<Append> waitingForSpace = new ArrayDeque<>();
    private final ArrayDeque<Window> ready = new ArrayDeque<>();
    private final ArrayDeque<Put> inflight = new ArrayDeque<>();
    /** Record bytes of each untrimmed object, by start position, for the capacity accounting. */
    private final Map<Long, Long> bytesBySegment = new HashMap<>();
    private Window window;
    private long nextSeq;
    private long untrimmedBytes;
    private RuntimeException fence;
    private volatile boolean recovered;
    private boolean closed;
    private ScheduledFuture<?> spaceCheck;

    private ObjectWal(ObjectWalConfig config, WalContext context, ObjectStore store, boolean ownsStore) {
        this.config = config;
        this.context = context;
        this.store = store;
        this.ownsStore = ownsStore;
        this.nodePrefix = WalObjectDescriptor.nodePrefix(context.nodeId());
        this.description = "objectwal " + store.description() + " " + nodePrefix
                + (context.takeover() ? " (taken over at node epoch " + context.nodeEpoch() + ")" : "");
        this.conductor = Executors.newSingleThreadScheduledExecutor(
                r -> Thread.ofPlatform().daemon().name("s3stream-objectwal-" + context.nodeId()).unstarted(r));
    }

    /** Opens node {@code context.nodeId()}'s log in the store the config names (or the engine's). */
    static ObjectWal open(ObjectWalConfig config, WalContext context) {
        if (config.store().isPresent()) {
            if (context.objectStores() == null) {
                throw new IllegalStateException("objectwal with its own store (" + config.store().get() + ") must be "
                        + "opened through StreamStorage (StorageConfig.wal), which opens stores");
            }
            return new ObjectWal(config, context, context.objectStores().apply(config.store().get()), true);
        }
        return new ObjectWal(config, context, context.requireObjectStore("objectwal"), false);
    }

    /** For tests: a log in {@code store}, which the caller keeps and closes. */
    static ObjectWal open(ObjectWalConfig config, WalContext context, ObjectStore store) {
        return new ObjectWal(config, context, store, false);
    }

    // ------------------------------------------------------------------------------------------------ recovery

    @Override
    public RecoveryResult recover(RecordHandler handler) {
        synchronized (this) {
            if (recovered) {
                throw new IllegalStateException("recover() was already called on " + description);
            }
            recovered = true;
        }
        ObjectWalRecovery.Outcome outcome = new ObjectWalRecovery(store, alloc, config, context, token, nodePrefix)
                .run(handler);
        for (WalSegment s : outcome.segments()) {
            segments.put(s.startPosition(), s);
        }
        nextSeq = outcome.nextSeq();
        untrimmedBytes = 0;
        outcome.recordBytesBySegment().forEach((position, bytes) -> {
            bytesBySegment.put(position, bytes);
            untrimmedBytes += bytes;
        });
        LOG.log(System.Logger.Level.INFO, "{0}: {1}", description, outcome.detail());
        deleteUnreferenced(outcome.belowStart());
        return new RecoveryResult(outcome.records(), outcome.bytes(),
                WalObjectDescriptor.position(outcome.nextSeq(), 0), false, outcome.detail());
    }

    /**
     * Deletes the objects below the recovery's start that nothing references: under an engine, those the manifest does
     * not know (objects a fenced writer created after the takeover that fenced it had listed the log: adopted by no
     * one, read by no one); on a log used on its own, all of them (trimmed, their deletion interrupted). Every record
     * they hold is in a committed object or was trimmed, and nothing adopts an object below the committed position
     * later, so deleting them loses nothing. Best effort: a failure is logged and leaves them for the next opening.
     */
    private void deleteUnreferenced(List<String> belowStart) {
        if (belowStart.isEmpty() || (context.trimsRecorded() && context.knownKeys() == null)) {
            return;
        }
        try {
            List<String> garbage = belowStart;
            if (context.trimsRecorded()) {
                Set<String> known = context.knownKeys().known(belowStart);
                garbage = belowStart.stream().filter(key -> !known.contains(key)).toList();
            }
            if (garbage.isEmpty()) {
                return;
            }
            store.delete(garbage).get(config.failAfter().toMillis(), TimeUnit.MILLISECONDS);
            LOG.log(System.Logger.Level.INFO, "{0}: deleted {1} object(s) below the committed position that {2}, "
                    + "from {3} to {4}", description, garbage.size(), context.trimsRecorded()
                            ? "the manifest does not know (written by fenced writers after their takeover)"
                            : "were trimmed", garbage.getFirst(), garbage.getLast());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, description + ": could not delete the unreferenced objects below the "
                    + "committed position (the next opening tries again): " + Futures.unwrap(e), Futures.unwrap(e));
        }
    }

    // ------------------------------------------------------------------------------------------------ appends

    @Override
    public CompletableFuture<WalAppendResult> append(ByteBuf record) {
        int size = record.readableBytes();
        if (size > maxRecordBytes()) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("record of " + size
                    + " bytes exceeds the largest record " + maxRecordBytes() + " of " + description));
        }
        if (size < WalRecordFormat.HEADER_SIZE) {
            return CompletableFuture.failedFuture(new IllegalArgumentException(description + " stores the engine's "
                    + "WAL records (io.s3stream.spi.WalRecordFormat); got " + size + " bytes, shorter than a header"));
        }
        int r = record.readerIndex();
        Append a = new Append(new Appended(record.retainedDuplicate(), record.getLong(r + WalRecordFormat.STREAM_ID_OFFSET),
                record.getLong(r + WalRecordFormat.EPOCH_OFFSET), record.getLong(r + WalRecordFormat.BASE_OFFSET_OFFSET),
                record.getInt(r + WalRecordFormat.COUNT_OFFSET)), new CompletableFuture<>(),
                System.nanoTime() + context.backpressureTimeout().toNanos());
        try {
            conductor.execute(() -> onAppend(a));
        } catch (RejectedExecutionException e) {
            a.appended.record().release();
            a.fail(new StreamClosedException(description + " is closed"));
        }
        return a.future;
    }

    private RuntimeException refusal() {
        if (!recovered) {
            return new IllegalStateException("append before recover() on " + description);
        }
        if (closed) {
            return new StreamClosedException(description + " is closed");
        }
        if (context.takeover()) {
            return new IllegalStateException(description + " was opened to take it over: it recovers and trims, it "
                    + "does not append");
        }
        return fence;
    }

    private void onAppend(Append a) {
        RuntimeException refused = refusal();
        if (refused != null) {
            a.appended.record().release();
            a.fail(refused);
            return;
        }
        if (!waitingForSpace.isEmpty() || untrimmedBytes + a.size() > config.capacity()) {
            waitingForSpace.add(a); // in order: nothing overtakes a waiting append
            scheduleSpaceCheck();
            return;
        }
        accept(a);
    }

    private void accept(Append a) {
        if (window != null && !window.continues(a.appended)) {
            closeWindow();
        }
        if (window == null) {
            Window w = new Window();
            w.timer = conductor.schedule(() -> {
                if (window == w) {
                    closeWindow();
                }
            }, config.batchMs().toNanos(), TimeUnit.NANOSECONDS);
            window = w;
        }
        window.add(a);
        untrimmedBytes += a.size();
        if (window.payloadBytes >= config.batchBytes()
                || window.appends.size() >= WalObjectDescriptor.MAX_RECORDS_PER_OBJECT) {
            closeWindow();
        }
    }

    private void closeWindow() {
        Window w = window;
        window = null;
        if (w == null) {
            return;
        }
        if (w.timer != null) {
            w.timer.cancel(false);
        }
        ready.add(w);
        issueReady();
    }

    /** Writes ready windows while fewer than {@code maxInFlight} objects are in flight. */
    private void issueReady() {
        while (fence == null && !ready.isEmpty() && inflight.size() < config.maxInFlight()) {
            Window w = ready.poll();
            long seq = nextSeq++;
            List<RecordEntry> entries = new ArrayList<>(w.appends.size());
            List<Appended> appended = new ArrayList<>(w.appends.size());
            for (Append a : w.appends) {
                appended.add(a.appended);
                entries.add(new RecordEntry(a.appended.streamId(), a.appended.epoch(), a.appended.baseOffset(),
                        a.appended.count()));
            }
            Header header = new Header(WalObjectDescriptor.KIND_DATA, config.maxInFlight(), context.nodeId(),
                    context.nodeEpoch(), token, seq, entries);
            WalObjectCodec.Built built;
            try {
                built = WalObjectCodec.build(alloc, config.blockBytes(), header, appended);
            } catch (RuntimeException e) {
                w.appends.forEach(a -> a.fail(e));
                continue;
            } finally {
                w.appends.forEach(a -> a.appended.record().release()); // copied into the object (or failed)
            }
            Put p = new Put(seq, WalObjectDescriptor.key(context.nodeId(), seq), w, built, System.nanoTime());
            inflight.add(p);
            send(p);
        }
    }

    private void send(Put p) {
        p.attempts++;
        CompletableFuture<Boolean> f;
        try {
            f = store.putIfAbsent(p.key, p.built.bytes());
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((created, error) -> runOnConductor(() -> onPutResult(p, created, error)));
    }

    private void onPutResult(Put p, Boolean created, Throwable error) {
        if (p.done || fence != null) {
            return;
        }
        if (error == null && created) {
            durable(p);
            return;
        }
        if (error == null) {
            // The key exists: our own earlier attempt whose answer was lost, or a newer owner's seal or object.
            store.get(p.key).whenComplete((there, readError) -> runOnConductor(() -> onReadBack(p, there, readError)));
            return;
        }
        retryOrFail(p, error);
    }

    private void onReadBack(Put p, ByteBuf there, Throwable error) {
        try {
            if (p.done || fence != null) {
                return;
            }
            if (error != null) {
                retryOrFail(p, error);
                return;
            }
            if (ByteBufUtil.equals(there, p.built.bytes())) {
                durable(p);
                return;
            }
            fail(new NodeFencedException(description + ": object " + p.key + " was created by another writer (the "
                    + "log was taken over at a newer node epoch" + newerEpoch(there, p.key) + "); this writer at node "
                    + "epoch " + context.nodeEpoch() + " is fenced and acknowledges nothing from sequence "
                    + p.seq + " on"));
        } finally {
            if (there != null) {
                there.release();
            }
        }
    }

    private static String newerEpoch(ByteBuf object, String key) {
        try {
            Header h = WalObjectCodec.header(io.s3stream.internal.format.ObjectReader.of(object, key), key);
            return ": node " + h.nodeId() + " epoch " + h.nodeEpoch() + (h.isSeal() ? ", a seal" : "");
        } catch (RuntimeException e) {
            return "";
        }
    }

    private void retryOrFail(Put p, Throwable error) {
        Throwable cause = Futures.unwrap(error);
        boolean retriable = cause instanceof TimeoutException || cause instanceof StorageIOException
                || (cause instanceof ObjectStoreException ose && ose.isRetriable());
        long elapsed = System.nanoTime() - p.startedNanos;
        if (!retriable || elapsed >= config.failAfter().toNanos() || closed) {
            fail(new StorageIOException(description + ": writing " + p.key + " failed after " + p.attempts
                    + " attempt(s) in " + Duration.ofNanos(elapsed).toMillis() + " ms; the log is fenced: " + cause,
                    cause));
            return;
        }
        long cap = Math.min(RETRY_MAX_MS, RETRY_BASE_MS << Math.min(10, p.attempts - 1));
        long delay = ThreadLocalRandom.current().nextLong(cap + 1);
        LOG.log(System.Logger.Level.WARNING, "{0}: writing {1} failed (attempt {2}), retrying in {3} ms: {4}",
                description, p.key, p.attempts, delay, cause.toString());
        conductor.schedule(() -> {
            if (!p.done && fence == null) {
                send(p);
            }
        }, delay, TimeUnit.MILLISECONDS);
    }

    private void durable(Put p) {
        p.durable = true;
        while (!inflight.isEmpty() && inflight.peek().durable) {
            Put head = inflight.poll();
            head.done = true;
            acknowledge(head);
        }
        issueReady();
    }

    private void acknowledge(Put p) {
        long start = WalObjectDescriptor.position(p.seq, 0);
        long end = WalObjectDescriptor.position(p.seq + 1, 0);
        long bytes = 0;
        for (Append a : p.window.appends) {
            bytes += a.size();
        }
        segments.put(start, new WalSegment(p.key, p.built.bytes().readableBytes(), start, end, p.window.appends.size(),
                p.built.ranges()));
        bytesBySegment.put(start, bytes);
        p.built.bytes().release();
        List<Append> appends = p.window.appends;
        for (int i = 0; i < appends.size(); i++) {
            long position = WalObjectDescriptor.position(p.seq, i);
            long next = i == appends.size() - 1 ? end : WalObjectDescriptor.position(p.seq, i + 1);
            appends.get(i).future.complete(new WalAppendResult(position, next));
        }
    }

    /** Fences the log: every append not yet acknowledged, and every later one, fails with {@code cause}. */
    private void fail(RuntimeException cause) {
        if (fence == null) {
            fence = cause;
            if (!(cause instanceof StreamClosedException)) { // a close is not an error worth a log line
                LOG.log(cause instanceof NodeFencedException ? System.Logger.Level.WARNING
                        : System.Logger.Level.ERROR, cause.getMessage());
            }
        }
        for (Put p : inflight) {
            p.done = true;
            p.built.bytes().release();
            p.window.appends.forEach(a -> a.fail(fence));
        }
        inflight.clear();
        for (Window w : ready) {
            w.appends.forEach(a -> {
                a.appended.record().release();
                a.fail(fence);
            });
        }
        ready.clear();
        if (window != null) {
            if (window.timer != null) {
                window.timer.cancel(false);
            }
            window.appends.forEach(a -> {
                a.appended.record().release();
                a.fail(fence);
            });
            window = null;
        }
        failWaiting(fence);
    }

    private void failWaiting(RuntimeException cause) {
        for (Append a : waitingForSpace) {
            a.appended.record().release();
            a.fail(cause);
        }
        waitingForSpace.clear();
    }

    // ------------------------------------------------------------------------------------------------ capacity

    private void scheduleSpaceCheck() {
        if (spaceCheck == null || spaceCheck.isDone()) {
            spaceCheck = conductor.schedule(this::admitWaiting, 20, TimeUnit.MILLISECONDS);
        }
    }

    /** Admits waiting appends that fit, in order; refuses those past their deadline. */
    private void admitWaiting() {
        spaceCheck = null; // this run is the scheduled check, if any: a later one must be scheduled anew
        long now = System.nanoTime();
        while (!waitingForSpace.isEmpty()) {
            Append a = waitingForSpace.peek();
            if (fence != null || closed) {
                failWaiting(fence != null ? fence : new StreamClosedException(description + " is closed"));
                return;
            }
            if (untrimmedBytes + a.size() <= config.capacity()) {
                waitingForSpace.poll();
                accept(a);
            } else if (now - a.deadlineNanos >= 0) {
                waitingForSpace.poll();
                a.appended.record().release();
                a.fail(new OverCapacityException(description + " is full (" + untrimmedBytes + " of "
                        + config.capacity() + " bytes appended and not trimmed) and no trim freed space within "
                        + context.backpressureTimeout().toMillis() + " ms: uploads are not keeping up"));
            } else {
                scheduleSpaceCheck();
                return;
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ trim, segments

    /**
     * Releases the bookkeeping of the objects before {@code walPosition}. Under an engine the trim point is already in
     * the manifest and the objects belong to it ({@link WalContext#trimsRecorded()}); a log used on its own records
     * the trim point in a marker object first (so a later recovery starts there) and then deletes those objects.
     */
    @Override
    public CompletableFuture<Void> trim(long walPosition) {
        if (!context.trimsRecorded()) {
            return recordTrim(walPosition).thenCompose(deleted -> trimBookkeeping(walPosition));
        }
        return trimBookkeeping(walPosition);
    }

    private CompletableFuture<Void> recordTrim(long walPosition) {
        ByteBuf marker = alloc.heapBuffer(Long.BYTES).writeLong(walPosition);
        return store.put(nodePrefix + TRIM_MARKER, marker).whenComplete((v, e) -> marker.release())
                .thenCompose(v -> {
                    List<String> keys = new ArrayList<>();
                    for (WalSegment s : segments.headMap(walPosition, false).values()) {
                        if (s.endPosition() <= walPosition) {
                            keys.add(s.key());
                        }
                    }
                    return store.delete(keys);
                });
    }

    private CompletableFuture<Void> trimBookkeeping(long walPosition) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        Runnable task = () -> {
            var trimmed = segments.headMap(walPosition, false);
            for (var it = trimmed.entrySet().iterator(); it.hasNext(); ) {
                var e = it.next();
                if (e.getValue().endPosition() > walPosition) {
                    break;
                }
                Long bytes = bytesBySegment.remove(e.getKey());
                untrimmedBytes -= bytes == null ? 0 : bytes;
                it.remove();
            }
            admitWaiting();
            done.complete(null);
        };
        try {
            conductor.execute(task);
        } catch (RejectedExecutionException e) {
            done.complete(null); // closed: nothing left to release
        }
        return done;
    }

    @Override
    public boolean isSegmentBoundary(long walPosition) {
        return WalObjectDescriptor.isBoundary(walPosition);
    }

    @Override
    public List<WalSegment> segments(long fromPosition, long toPosition) {
        List<WalSegment> out = new ArrayList<>();
        for (WalSegment s : segments.headMap(toPosition, false).values()) {
            if (s.endPosition() > fromPosition) {
                out.add(s);
            }
        }
        return out;
    }

    @Override
    public long capacityBytes() {
        return config.capacity();
    }

    @Override
    public int maxRecordBytes() {
        return (int) Math.min(MAX_RECORD_BYTES, config.capacity() / 2);
    }

    @Override
    public String description() {
        return description;
    }

    // ------------------------------------------------------------------------------------------------ close

    @Override
    public void close() {
        CompletableFuture<Void> drained = new CompletableFuture<>();
        try {
            conductor.execute(() -> {
                if (!closed) {
                    closed = true;
                    closeWindow();
                    failWaiting(new StreamClosedException(description + " is closed"));
                }
                awaitDrain(drained);
            });
            drained.get(30, TimeUnit.SECONDS);
        } catch (RejectedExecutionException e) {
            return; // closed already
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "{0}: objects still in flight at close: {1}", description, e);
        }
        try {
            conductor.submit(() -> fail(new StreamClosedException(description + " is closed"))).get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            // the conductor is gone: nothing left to fail
        }
        conductor.shutdownNow();
        if (ownsStore) {
            store.close();
        }
    }

    private void awaitDrain(CompletableFuture<Void> drained) {
        if (inflight.isEmpty() && ready.isEmpty() || fence != null) {
            drained.complete(null);
        } else {
            conductor.schedule(() -> awaitDrain(drained), 5, TimeUnit.MILLISECONDS);
        }
    }

    private void runOnConductor(Runnable task) {
        try {
            conductor.execute(task);
        } catch (RejectedExecutionException e) {
            // closed: the append was failed by close()
        }
    }

    // ------------------------------------------------------------------------------------------------ state

    /** An append waiting for its object. */
    private static final class Append {
        final Appended appended;
        final CompletableFuture<WalAppendResult> future;
        final long deadlineNanos;

        Append(Appended appended, CompletableFuture<WalAppendResult> future, long deadlineNanos) {
            this.appended = appended;
            this.future = future;
            this.deadlineNanos = deadlineNanos;
        }

        long size() {
            return appended.record().readableBytes();
        }

        void fail(Throwable cause) {
            future.completeExceptionally(cause);
        }
    }

    /** The records of one future object, in append order. */
    private static final class Window {
        final List<Append> appends = new ArrayList<>();
        final Map<Long, long[]> lastByStream = new HashMap<>(); // stream -> {epoch, end offset}
        long payloadBytes;
        ScheduledFuture<?> timer;

        /** Whether the record continues its stream's run in this window (or starts one). */
        boolean continues(Appended a) {
            long[] last = lastByStream.get(a.streamId());
            return last == null || (last[0] == a.epoch() && last[1] == a.baseOffset());
        }

        void add(Append a) {
            appends.add(a);
            lastByStream.put(a.appended.streamId(), new long[]{a.appended.epoch(),
                    a.appended.baseOffset() + a.appended.count()});
            payloadBytes += a.appended.payloadBytes();
        }
    }

    /** One object being written. */
    private static final class Put {
        final long seq;
        final String key;
        final Window window;
        final WalObjectCodec.Built built;
        final long startedNanos;
        int attempts;
        boolean durable;
        boolean done;

        Put(long seq, String key, Window window, WalObjectCodec.Built built, long startedNanos) {
            this.seq = seq;
            this.key = key;
            this.window = window;
            this.built = built;
            this.startedNanos = startedNanos;
        }
    }
}
