package io.s3stream.cache;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import io.netty.buffer.ByteBuf;
import io.s3stream.cache.internal.CachedBlock;
import io.s3stream.cache.internal.ReadAheadArea;
import io.s3stream.cache.internal.SharedLoad;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

/**
 * A byte-bounded cache of data blocks read from objects, holding reference-counted Netty buffers.
 *
 * <h2>Concurrency</h2>
 * All methods are thread-safe and none blocks on IO. Resident blocks live in a Caffeine cache weighed by
 * readable bytes; blocks being loaded live in a separate in-flight map, so concurrent misses on one key share
 * one loader invocation and every waiter receives its own retained duplicate when it completes. A finished
 * load is put into the cache <em>before</em> it leaves the in-flight map, and the caller that starts a load
 * looks at the cache once more after registering, so a miss racing with a completing load does not load
 * twice. Caffeine runs its maintenance (eviction and removal notifications) on the calling thread
 * ({@code executor(Runnable::run)}), so the thread that inserts a block also evicts what it displaced; a
 * removal may therefore run on whichever thread completes a loader's future.
 *
 * <h2>Memory</h2>
 * The cache owns exactly one reference to each resident block and releases it exactly once, on eviction,
 * invalidation, replacement or {@link #close()}. Callers own the duplicates they receive and must release
 * them; a duplicate keeps the block's memory alive after the cache has dropped it, so memory pinned by
 * readers is the readers' budget, not this one. A reader can find a block just as it is evicted; each block
 * is wrapped in a guard ({@code CachedBlock}) under which leasing a duplicate and dropping the cache's
 * reference are mutually exclusive, so a reader gets either a live duplicate or a miss, never freed memory.
 * (Catching {@code IllegalReferenceCountException} instead is unsafe with pooled buffers, whose objects are
 * recycled; see {@code CachedBlock}.)
 * <p>The budget counts the cache's own references. {@link Stats#bytesHeld()} never exceeds the capacity once
 * maintenance has run ({@link #cleanUp()}), and evicted blocks are released during that maintenance, not
 * later on a pool. Transiently the memory referenced by the cache exceeds the capacity by the blocks inserted
 * but not yet processed by maintenance. Single-threaded that is the one block being put, until {@code put}
 * returns. With several writers, a writer that finds another thread running maintenance leaves its insertion
 * to that thread, which keeps draining until no work is left; the excess is then the blocks inserted during
 * that pass (typically one per writing thread, each at most the capacity), and in the worst case is bounded
 * by Caffeine's write buffer, when full of which writers stop and do the maintenance themselves. Blocks larger
 * than the capacity and empty blocks are never cached (they are still returned to the callers that loaded
 * them).
 *
 * <h2>Failure</h2>
 * A loader that throws, returns {@code null} or completes exceptionally (or with {@code null}) fails every
 * waiter with that cause, unwrapped from {@link CompletionException}; nothing is cached and the next
 * {@code get} retries the load. There are no retries here: retrying with backoff belongs to the object store
 * layer. After {@link #close()} the cache holds nothing: {@code get} returns a future failed with
 * {@link IllegalStateException} (fail clearly rather than silently turning every read into a GET),
 * {@code getIfPresent} returns {@code null} and {@code put} releases the block it was given. Loads already in
 * flight at close still complete their waiters but are not cached.
 *
 * <h2>Invalidation</h2>
 * {@link #invalidateObject(long)} scans the resident keys (objects are deleted rarely, after compaction).
 * Invalidation bumps a generation; a load that started before any invalidation and completes after it is
 * returned to its waiters but not cached, so a deleted object's blocks cannot be resurrected by a slow GET.
 *
 * <h2>Merged reads</h2>
 * {@link #getAll} looks up the blocks of one fetch together; the missing ones that are adjacent in the object (see
 * {@link BlockSpan#isFollowedBy}) are registered as one in-flight load each and read with a single
 * {@link RangeLoader#loadSplit} call of at most {@value #MAX_MERGED_LOAD_BYTES} bytes: one request, each block read
 * into a buffer of its own. A block held as a slice of one larger buffer would keep the whole buffer alive until its
 * last slice is gone, and the budget would count less memory than is held; the loader avoids that without copying
 * where its store can read into separate buffers ({@code ObjectStore.getSplit}).
 *
 * <h2>Read-ahead</h2>
 * A part of the budget ({@code readAheadBytes} of {@link #create(long, long)}) is a separate read-ahead area
 * ({@code ReadAheadArea}) for blocks read ahead for sequential readers by {@link #prefetch}. Those blocks are
 * single-use: the lookup that finds one takes the area's reference and removes it, so a block read ahead and then
 * consumed leaves the cache at once instead of pushing other readers' blocks out of it. One catch-up reader therefore
 * never competes with the main cache: it can only displace other read-ahead blocks, the oldest first, and those are
 * evicted <em>unread</em>, which the reader they were read for hears through its {@link ReadAheadListener} (its
 * {@link ReadAheadWindow} shrinks). Read-ahead reserves its bytes before sending the GET; when blocks in flight fill the
 * area, {@link #prefetch} stops and reports fewer blocks started: back-pressure, not growth. A read-ahead load shares
 * the in-flight map with demand loads, so a reader that catches up with its own read-ahead joins the load instead of
 * issuing a second GET; the block is then consumed by that reader and not kept. Invalidation and {@link #close()}
 * drop the area's blocks as well.
 * <p>The main cache is sized {@code capacityBytes - readAheadBytes}; the two parts together never hold more than
 * {@code capacityBytes} (once maintenance has run, as above).
 */
public final class BlockCache implements AutoCloseable {
    /** Largest single request {@link #getAll} and {@link #prefetch} make of adjacent missing blocks. */
    public static final int MAX_MERGED_LOAD_BYTES = 8 * 1024 * 1024;

    private final long capacityBytes;
    private final ReadAheadArea readAhead;
    private final Cache<BlockKey, CachedBlock> resident;
    private final ConcurrentHashMap<BlockKey, SharedLoad> inFlight = new ConcurrentHashMap<>();
    private final AtomicLong generation = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();

    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder loads = new LongAdder();
    private final LongAdder loadFailures = new LongAdder();
    private final LongAdder evictions = new LongAdder();
    private final LongAdder mergedLoads = new LongAdder();
    private final LongAdder mergedBlocks = new LongAdder();
    private final LongAdder readAheadHits = new LongAdder();
    private final LongAdder readAheadBlocks = new LongAdder();
    private final LongAdder readAheadEvictedUnread = new LongAdder();

    private BlockCache(long capacityBytes, long readAheadBytes) {
        if (capacityBytes <= 0) {
            throw new IllegalArgumentException("capacityBytes must be positive, got " + capacityBytes);
        }
        if (readAheadBytes < 0 || readAheadBytes >= capacityBytes) {
            throw new IllegalArgumentException("readAheadBytes must be >= 0 and < capacityBytes (" + capacityBytes
                    + "), got " + readAheadBytes);
        }
        this.capacityBytes = capacityBytes;
        this.readAhead = new ReadAheadArea(readAheadBytes);
        this.resident = Caffeine.newBuilder()
                .maximumWeight(capacityBytes - readAheadBytes)
                .weigher((BlockKey key, CachedBlock block) -> block.weightBytes())
                .executor(Runnable::run)
                .removalListener(this::onRemoval)
                .build();
    }

    /**
     * Creates a cache bounded by the readable bytes of the blocks it holds.
     *
     * @param capacityBytes budget in bytes, positive
     * @return a new cache
     * @throws IllegalArgumentException if {@code capacityBytes} is not positive
     */
    public static BlockCache create(long capacityBytes) {
        return new BlockCache(capacityBytes, 0);
    }

    /**
     * Creates a cache whose budget is split between the main cache and a read-ahead area.
     *
     * @param capacityBytes the whole budget in bytes, positive
     * @param readAheadBytes the part of it reserved for blocks read ahead, {@code >= 0} and below the whole
     * @return a new cache
     * @throws IllegalArgumentException if a size is out of range
     */
    public static BlockCache create(long capacityBytes, long readAheadBytes) {
        return new BlockCache(capacityBytes, readAheadBytes);
    }

    /**
     * Returns the block, loading it on a miss.
     *
     * <p>Concurrent misses on one key share one call of {@code loader}. The loader's future transfers one
     * reference to the cache; the cache keeps a reference if the block fits the budget and gives every waiting
     * caller its own retained duplicate.
     *
     * @param key the block
     * @param loader called on a miss; must return a future of the block (one reference handed over)
     * @return a future of a retained duplicate the caller must release; failed with the loader's failure, or
     *     with {@link IllegalStateException} if the cache is closed
     */
    public CompletableFuture<ByteBuf> get(BlockKey key, Function<BlockKey, CompletableFuture<ByteBuf>> loader) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(loader, "loader");
        if (closed.get()) {
            return CompletableFuture.failedFuture(new IllegalStateException("BlockCache is closed"));
        }
        ByteBuf hit = lookup(key);
        if (hit != null) {
            return CompletableFuture.completedFuture(hit);
        }
        misses.increment();
        CompletableFuture<ByteBuf> waiter = new CompletableFuture<>();
        SharedLoad fresh = new SharedLoad(generation.get());
        SharedLoad load = inFlight.compute(key, (k, existing) -> {
            SharedLoad chosen = existing != null ? existing : fresh;
            chosen.addWaiter(waiter);
            return chosen;
        });
        if (load == fresh) {
            startLoad(key, fresh, loader);
        }
        return waiter;
    }

    /**
     * Returns the block if it is resident.
     *
     * @param key the block
     * @return a retained duplicate the caller must release, or {@code null}
     */
    public ByteBuf getIfPresent(BlockKey key) {
        Objects.requireNonNull(key, "key");
        ByteBuf hit = lookup(key);
        if (hit == null) {
            misses.increment();
        }
        return hit;
    }

    /**
     * Returns the blocks of one read, loading the missing ones with as few requests as possible.
     *
     * <p>Each block is looked up as by {@link #get}; the missing blocks that no load in flight covers are loaded with
     * one {@code loader} call per run of adjacent blocks (at most {@value #MAX_MERGED_LOAD_BYTES} bytes each). A block
     * found in the read-ahead area is consumed: it leaves the cache.
     *
     * @param spans the blocks, usually in object order
     * @param loader reads a range of an object
     * @return one future per span, in order, each of a retained duplicate the caller must release; and how many of
     *     the blocks were not resident (the caller waited for the store for them)
     */
    public Lookup getAll(List<BlockSpan> spans, RangeLoader loader) {
        Objects.requireNonNull(loader, "loader");
        List<CompletableFuture<ByteBuf>> out = new ArrayList<>(spans.size());
        if (closed.get()) {
            for (int i = 0; i < spans.size(); i++) {
                out.add(CompletableFuture.failedFuture(new IllegalStateException("BlockCache is closed")));
            }
            return new Lookup(out, spans.size());
        }
        int missed = 0;
        List<Pending> started = new ArrayList<>();
        for (BlockSpan span : spans) {
            ByteBuf hit = lookup(span.key());
            if (hit != null) {
                out.add(CompletableFuture.completedFuture(hit));
                continue;
            }
            misses.increment();
            missed++;
            CompletableFuture<ByteBuf> waiter = new CompletableFuture<>();
            SharedLoad fresh = new SharedLoad(generation.get());
            SharedLoad load = inFlight.compute(span.key(), (k, existing) -> {
                SharedLoad chosen = existing != null ? existing : fresh;
                chosen.addWaiter(waiter);
                return chosen;
            });
            if (load == fresh) {
                started.add(new Pending(span, fresh));
            }
            out.add(waiter);
        }
        startLoads(started, loader);
        return new Lookup(out, missed);
    }

    /**
     * Reads blocks ahead for one sequential reader into the read-ahead area, without waiting for them.
     *
     * <p>Blocks already resident or in flight are skipped. The others get a reservation in the read-ahead area, in
     * order, until a reservation fails (the area is full of blocks in flight); runs of adjacent blocks are read with
     * one {@code loader} call each. Reserving may evict the oldest unread read-ahead blocks, whose owners are told.
     *
     * @param spans the blocks to read ahead, in the order the reader will want them
     * @param loader reads a range of an object (typically at the lowest priority)
     * @param owner told when one of these blocks is evicted unread
     * @return how many loads were started; fewer than asked when the area is full or the blocks are already there
     */
    public int prefetch(List<BlockSpan> spans, RangeLoader loader, ReadAheadListener owner) {
        Objects.requireNonNull(loader, "loader");
        Objects.requireNonNull(owner, "owner");
        if (closed.get() || readAhead.capacityBytes() == 0) {
            return 0;
        }
        List<Pending> started = new ArrayList<>();
        List<ReadAheadArea.Evicted> evicted = new ArrayList<>();
        try {
            for (BlockSpan span : spans) {
                BlockKey key = span.key();
                if (inFlight.containsKey(key) || readAhead.contains(key) || resident.asMap().containsKey(key)) {
                    continue;
                }
                if (!readAhead.reserve(span.lengthBytes(), evicted)) {
                    break;
                }
                SharedLoad fresh = new SharedLoad(generation.get(), owner, span.lengthBytes());
                if (inFlight.putIfAbsent(key, fresh) != null) {
                    readAhead.unreserve(span.lengthBytes());
                    continue;
                }
                started.add(new Pending(span, fresh));
            }
        } finally {
            for (ReadAheadArea.Evicted e : evicted) {
                readAheadEvictedUnread.increment();
                e.dispose();
            }
        }
        readAheadBlocks.add(started.size());
        startLoads(started, loader);
        return started.size();
    }

    /**
     * Gives a block read ahead back to the read-ahead area after a reader consumed only part of it, so that the same
     * reader's next read finds it. Does nothing (but release it) when the block is in the main cache, already in the
     * area, or the area has no room that is not in flight.
     *
     * @param key the block
     * @param block the block, one reference handed over
     * @param owner the reader that will read the rest
     */
    public void keepReadAhead(BlockKey key, ByteBuf block, ReadAheadListener owner) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(owner, "owner");
        int size = block.readableBytes();
        if (closed.get() || size == 0 || readAhead.contains(key) || resident.asMap().containsKey(key)) {
            block.release();
            return;
        }
        List<ReadAheadArea.Evicted> evicted = new ArrayList<>();
        try {
            if (!readAhead.reserve(size, evicted)) {
                block.release();
                return;
            }
            ByteBuf replaced = readAhead.insert(key, block, size, owner);
            if (replaced != null) {
                replaced.release();
            }
            if (closed.get() && readAhead.remove(key, block)) {
                block.release(); // close() dropped the area before our insert
            }
        } finally {
            for (ReadAheadArea.Evicted e : evicted) {
                readAheadEvictedUnread.increment();
                e.dispose();
            }
        }
    }

    /**
     * Caches a block, replacing (and releasing) any block cached under the same key.
     *
     * <p>Takes ownership of one reference: the block is released at once if it is empty, larger than the
     * capacity or the cache is closed, otherwise when it leaves the cache.
     *
     * @param key the block
     * @param block the block's bytes (its readable bytes)
     */
    public void put(BlockKey key, ByteBuf block) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(block, "block");
        if (!fits(block) || closed.get()) {
            block.release();
            return;
        }
        insert(key, block, -1);
    }

    /**
     * Drops every resident block of one object. Loads of the object in flight are returned to their waiters but
     * not cached.
     *
     * @param objectId the object
     */
    public void invalidateObject(long objectId) {
        generation.incrementAndGet();
        List<BlockKey> keys = new ArrayList<>();
        for (BlockKey key : resident.asMap().keySet()) {
            if (key.objectId() == objectId) {
                keys.add(key);
            }
        }
        resident.invalidateAll(keys);
        readAhead.drop(k -> k.objectId() == objectId).forEach(ByteBuf::release);
    }

    /** Drops every resident block. Loads in flight are returned to their waiters but not cached. */
    public void invalidateAll() {
        generation.incrementAndGet();
        resident.invalidateAll();
        readAhead.drop(k -> true).forEach(ByteBuf::release);
    }

    /** Runs pending eviction bookkeeping now; mostly for tests, as it also runs after every write. */
    public void cleanUp() {
        resident.cleanUp();
    }

    /**
     * Returns a snapshot of the counters.
     *
     * @return the statistics
     */
    public Stats stats() {
        long bytesHeld = resident.policy().eviction().orElseThrow().weightedSize().orElse(0L);
        return new Stats(hits.sum(), misses.sum(), loads.sum(), loadFailures.sum(), evictions.sum(), bytesHeld,
                resident.estimatedSize(), capacityBytes, mergedLoads.sum(), mergedBlocks.sum(), readAheadHits.sum(),
                readAheadBlocks.sum(), readAheadEvictedUnread.sum(), readAhead.residentBytes(),
                readAhead.reservedBytes(), readAhead.capacityBytes());
    }

    /** Releases every resident block. Idempotent; see the class documentation for use after close. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            invalidateAll();
            resident.cleanUp();
        }
    }

    /** A hit in either part, counted; a read-ahead block is consumed. */
    private ByteBuf lookup(BlockKey key) {
        ByteBuf taken = readAhead.take(key);
        if (taken != null) {
            hits.increment();
            readAheadHits.increment();
            return taken;
        }
        ByteBuf hit = lease(key);
        if (hit != null) {
            hits.increment();
        }
        return hit;
    }

    /** A load registered in the in-flight map by this caller, to be started. */
    private record Pending(BlockSpan span, SharedLoad load) {
    }

    /** Starts registered loads, one loader call per run of adjacent spans. */
    private void startLoads(List<Pending> pending, RangeLoader loader) {
        List<Pending> run = new ArrayList<>();
        long runBytes = 0;
        for (Pending p : pending) {
            if (p.load().readAheadOwner() == null) {
                // As in get(): a load of this key may have completed between the lookup and the registration.
                ByteBuf again = readAhead.take(p.span().key());
                if (again == null) {
                    again = lease(p.span().key());
                }
                if (again != null) {
                    finish(p.span().key(), p.load(), again, null, false);
                    continue;
                }
            }
            if (!run.isEmpty() && (!run.getLast().span().isFollowedBy(p.span())
                    || runBytes + p.span().lengthBytes() > MAX_MERGED_LOAD_BYTES)) {
                startRun(run, runBytes, loader);
                run = new ArrayList<>();
                runBytes = 0;
            }
            run.add(p);
            runBytes += p.span().lengthBytes();
        }
        if (!run.isEmpty()) {
            startRun(run, runBytes, loader);
        }
    }

    private void startRun(List<Pending> run, long runBytes, RangeLoader loader) {
        loads.increment();
        BlockKey first = run.getFirst().span().key();
        if (run.size() == 1) {
            CompletableFuture<ByteBuf> loading;
            try {
                loading = Objects.requireNonNull(loader.load(first.objectId(), first.position(), (int) runBytes),
                        "loader returned null");
            } catch (RuntimeException | Error e) {
                loading = CompletableFuture.failedFuture(e);
            }
            loading.whenComplete((block, failure) -> {
                if (failure == null && block != null && block.readableBytes() != runBytes) {
                    failure = new IllegalStateException("loader returned " + block.readableBytes() + " bytes for "
                            + first + " instead of " + runBytes);
                    block.release();
                    block = null;
                }
                finish(first, run.getFirst().load(), block, failure, true);
            });
            return;
        }
        mergedLoads.increment();
        mergedBlocks.add(run.size());
        int[] lengths = new int[run.size()];
        for (int i = 0; i < lengths.length; i++) {
            lengths[i] = run.get(i).span().lengthBytes();
        }
        CompletableFuture<List<ByteBuf>> loading;
        try {
            loading = Objects.requireNonNull(loader.loadSplit(first.objectId(), first.position(), lengths),
                    "loader returned null");
        } catch (RuntimeException | Error e) {
            loading = CompletableFuture.failedFuture(e);
        }
        loading.whenComplete((blocks, failure) -> {
            if (failure == null) {
                failure = splitProblem(first, lengths, blocks);
                if (failure != null && blocks != null) {
                    blocks.forEach(b -> {
                        if (b != null) {
                            b.release();
                        }
                    });
                }
            }
            for (int i = 0; i < run.size(); i++) {
                finish(run.get(i).span().key(), run.get(i).load(), failure == null ? blocks.get(i) : null, failure,
                        true);
            }
        });
    }

    /** Why a split load's answer is not one buffer of the asked length per block, or {@code null} when it is. */
    private static Throwable splitProblem(BlockKey first, int[] lengths, List<ByteBuf> blocks) {
        if (blocks == null) {
            return new NullPointerException("loader completed with null for the run from " + first);
        }
        if (blocks.size() != lengths.length) {
            return new IllegalStateException("loader returned " + blocks.size() + " buffers for the run of "
                    + lengths.length + " blocks from " + first);
        }
        for (int i = 0; i < lengths.length; i++) {
            ByteBuf b = blocks.get(i);
            if (b == null || b.readableBytes() != lengths[i]) {
                return new IllegalStateException("loader returned " + (b == null ? "null" : b.readableBytes()
                        + " bytes") + " for block " + i + " of the run from " + first + " instead of " + lengths[i]);
            }
        }
        return null;
    }

    private ByteBuf lease(BlockKey key) {
        CachedBlock block = resident.getIfPresent(key);
        // Null when the block was evicted between the lookup and the lease: a miss, not an error.
        return block == null ? null : block.retainedDuplicate();
    }

    private void startLoad(BlockKey key, SharedLoad load, Function<BlockKey, CompletableFuture<ByteBuf>> loader) {
        // A load of this key may have completed between our lookup and our registration; it put the block
        // into the cache before leaving the in-flight map, so looking again avoids a second GET.
        ByteBuf again = readAhead.take(key);
        if (again == null) {
            again = lease(key);
        }
        if (again != null) {
            finish(key, load, again, null, false);
            return;
        }
        loads.increment();
        CompletableFuture<ByteBuf> loading;
        try {
            loading = Objects.requireNonNull(loader.apply(key), "loader returned null");
        } catch (RuntimeException | Error e) {
            loading = CompletableFuture.failedFuture(e);
        }
        loading.whenComplete((block, failure) -> finish(key, load, block, failure, true));
    }

    /** Completes a load; {@code block}, when present, carries one reference owned by this method. */
    private void finish(BlockKey key, SharedLoad load, ByteBuf block, Throwable failure, boolean cacheIt) {
        if (failure == null && block == null) {
            failure = new NullPointerException("loader completed with null for " + key);
        }
        if (failure != null) {
            if (cacheIt) {
                loadFailures.increment();
            }
            if (load.readAheadOwner() != null) {
                readAhead.unreserve(load.reservedBytes());
            }
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                    ? failure.getCause() : failure;
            for (CompletableFuture<ByteBuf> waiter : detach(key, load)) {
                waiter.completeExceptionally(cause);
            }
            return;
        }
        try {
            if (load.readAheadOwner() != null) {
                finishReadAhead(key, load, block);
                return;
            }
            if (cacheIt && fits(block) && !closed.get() && generation.get() == load.generation()) {
                insert(key, block.retain(), load.generation());
            }
            for (CompletableFuture<ByteBuf> waiter : detach(key, load)) {
                ByteBuf duplicate = block.retainedDuplicate();
                if (!waiter.complete(duplicate)) {
                    duplicate.release(); // the caller cancelled: nobody else will release it
                }
            }
        } catch (RuntimeException | Error e) {
            // Only a broken buffer from the loader gets here (e.g. already released). Nobody would see an
            // exception thrown from the loader's callback, so fail whoever is still waiting; detach is idempotent.
            for (CompletableFuture<ByteBuf> waiter : detach(key, load)) {
                waiter.completeExceptionally(e);
            }
        } finally {
            block.release();
        }
    }

    /**
     * Completes a read-ahead load: the block goes into the read-ahead area, unless a reader is already waiting for
     * it, who then consumes it. {@code block} is owned by the caller ({@link #finish}), which releases it.
     */
    private void finishReadAhead(BlockKey key, SharedLoad load, ByteBuf block) {
        boolean keep = !closed.get() && generation.get() == load.generation();
        ByteBuf kept = null;
        if (keep) {
            // Into the area before leaving the in-flight map, so that a reader missing in between finds it there.
            kept = block.retain();
            ByteBuf replaced = readAhead.insert(key, kept, load.reservedBytes(), load.readAheadOwner());
            if (replaced != null) {
                replaced.release();
            }
            if (closed.get() || generation.get() != load.generation()) {
                if (readAhead.remove(key, kept)) {
                    kept.release();
                }
                kept = null;
            }
        } else {
            readAhead.unreserve(load.reservedBytes());
        }
        List<CompletableFuture<ByteBuf>> waiters = detach(key, load);
        if (!waiters.isEmpty() && kept != null && readAhead.remove(key, kept)) {
            readAheadHits.increment(); // the reader caught up with its read-ahead: consumed on arrival
            kept.release();
        }
        for (CompletableFuture<ByteBuf> waiter : waiters) {
            ByteBuf duplicate = block.retainedDuplicate();
            if (!waiter.complete(duplicate)) {
                duplicate.release();
            }
        }
    }

    private List<CompletableFuture<ByteBuf>> detach(BlockKey key, SharedLoad load) {
        inFlight.remove(key, load);
        return load.detach();
    }

    /**
     * Inserts a block owning one reference. {@code loadGeneration} is the generation a load started in, or -1
     * for an explicit put.
     */
    private void insert(BlockKey key, ByteBuf block, long loadGeneration) {
        CachedBlock cached = new CachedBlock(block);
        resident.put(key, cached);
        // close() and invalidation set their flag before scanning the cache. If we read the old value here,
        // our put happened before that scan, which removes it; otherwise we remove it ourselves.
        if (closed.get() || (loadGeneration >= 0 && generation.get() != loadGeneration)) {
            resident.asMap().remove(key, cached);
        }
    }

    private boolean fits(ByteBuf block) {
        int size = block.readableBytes();
        return size > 0 && size <= capacityBytes;
    }

    private void onRemoval(BlockKey key, CachedBlock block, RemovalCause cause) {
        if (cause.wasEvicted()) {
            evictions.increment();
        }
        if (block != null) {
            block.release();
        }
    }

    /**
     * The result of {@link #getAll}.
     *
     * @param blocks one future per span, in order; each yields a retained duplicate the caller must release
     * @param missed how many blocks were not resident when looked up (loaded now or joined a load in flight)
     */
    public record Lookup(List<CompletableFuture<ByteBuf>> blocks, int missed) {
        /**
         * Copies the list.
         */
        public Lookup {
            blocks = List.copyOf(blocks);
        }
    }

    /**
     * Counters of a {@link BlockCache} since it was created.
     *
     * @param hits lookups served from the cache
     * @param misses lookups that did not find a resident block (including those that joined a load in flight)
     * @param loads loader invocations (one per merged run)
     * @param loadFailures loader invocations that failed
     * @param evictions blocks evicted to respect the budget (not counting invalidations and replacements)
     * @param bytesHeld current weighted size: readable bytes of the resident blocks, as of the last maintenance
     * @param entries approximate number of resident blocks
     * @param capacityBytes the whole budget, read-ahead area included
     * @param mergedLoads loader calls that read more than one block
     * @param mergedBlocks blocks read by those calls
     * @param readAheadHits lookups served by a block read ahead (which was then dropped); included in {@code hits}
     * @param readAheadBlocks blocks whose read-ahead was started
     * @param readAheadEvictedUnread blocks read ahead and evicted before anyone read them
     * @param readAheadBytesHeld bytes of the blocks resident in the read-ahead area
     * @param readAheadBytesReserved bytes reserved in the read-ahead area: resident plus in flight
     * @param readAheadCapacityBytes the read-ahead area's part of the budget
     */
    public record Stats(long hits, long misses, long loads, long loadFailures, long evictions, long bytesHeld,
                        long entries, long capacityBytes, long mergedLoads, long mergedBlocks, long readAheadHits,
                        long readAheadBlocks, long readAheadEvictedUnread, long readAheadBytesHeld,
                        long readAheadBytesReserved, long readAheadCapacityBytes) {
        /**
         * Returns the share of lookups served from memory.
         *
         * @return hits over lookups, or 0 before the first lookup
         */
        public double hitRate() {
            long lookups = hits + misses;
            return lookups == 0 ? 0 : (double) hits / lookups;
        }
    }
}
