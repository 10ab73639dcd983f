package io.s3stream.cache;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import io.netty.buffer.ByteBuf;
import io.s3stream.cache.internal.CachedBlock;
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
 * <p>Design note: read-ahead (blocks read for one reader and dropped once consumed) and merged ranged GETs
 * can be added on the same two maps: a bulk load registers one {@code SharedLoad} per missing key, issues one
 * request, and completes each load from its slice; a per-block flag on the guard can mark read-ahead blocks.
 */
public final class BlockCache implements AutoCloseable {
    private final long capacityBytes;
    private final Cache<BlockKey, CachedBlock> resident;
    private final ConcurrentHashMap<BlockKey, SharedLoad> inFlight = new ConcurrentHashMap<>();
    private final AtomicLong generation = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();

    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder loads = new LongAdder();
    private final LongAdder loadFailures = new LongAdder();
    private final LongAdder evictions = new LongAdder();

    private BlockCache(long capacityBytes) {
        if (capacityBytes <= 0) {
            throw new IllegalArgumentException("capacityBytes must be positive, got " + capacityBytes);
        }
        this.capacityBytes = capacityBytes;
        this.resident = Caffeine.newBuilder()
                .maximumWeight(capacityBytes)
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
        return new BlockCache(capacityBytes);
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
        ByteBuf hit = lease(key);
        if (hit != null) {
            hits.increment();
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
        ByteBuf hit = lease(key);
        if (hit != null) {
            hits.increment();
        } else {
            misses.increment();
        }
        return hit;
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
    }

    /** Drops every resident block. Loads in flight are returned to their waiters but not cached. */
    public void invalidateAll() {
        generation.incrementAndGet();
        resident.invalidateAll();
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
                resident.estimatedSize(), capacityBytes);
    }

    /** Releases every resident block. Idempotent; see the class documentation for use after close. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            invalidateAll();
            resident.cleanUp();
        }
    }

    private ByteBuf lease(BlockKey key) {
        CachedBlock block = resident.getIfPresent(key);
        // Null when the block was evicted between the lookup and the lease: a miss, not an error.
        return block == null ? null : block.retainedDuplicate();
    }

    private void startLoad(BlockKey key, SharedLoad load, Function<BlockKey, CompletableFuture<ByteBuf>> loader) {
        // A load of this key may have completed between our lookup and our registration; it put the block
        // into the cache before leaving the in-flight map, so looking again avoids a second GET.
        ByteBuf again = lease(key);
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
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                    ? failure.getCause() : failure;
            for (CompletableFuture<ByteBuf> waiter : detach(key, load)) {
                waiter.completeExceptionally(cause);
            }
            return;
        }
        try {
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
     * Counters of a {@link BlockCache} since it was created.
     *
     * @param hits lookups served from the cache
     * @param misses lookups that did not find a resident block (including those that joined a load in flight)
     * @param loads loader invocations
     * @param loadFailures loader invocations that failed
     * @param evictions blocks evicted to respect the budget (not counting invalidations and replacements)
     * @param bytesHeld current weighted size: readable bytes of the resident blocks, as of the last maintenance
     * @param entries approximate number of resident blocks
     * @param capacityBytes the budget
     */
    public record Stats(long hits, long misses, long loads, long loadFailures, long evictions, long bytesHeld,
                        long entries, long capacityBytes) {
    }
}
