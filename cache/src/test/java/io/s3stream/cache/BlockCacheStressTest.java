package io.s3stream.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PoolArenaMetric;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Several threads hammer a cache much smaller than the working set, so blocks are evicted constantly while
 * others lease them. Buffers come from a pooled allocator without thread caches: freed memory and freed
 * {@code ByteBuf} objects are reused at once, so a lease of evicted memory would show up as another key's
 * bytes, and the arena's count of live allocations must return to zero. Workers run on Netty threads because
 * only there does the pool recycle {@code ByteBuf} objects at once.
 */
class BlockCacheStressTest {
    private static final int THREADS = 4;
    private static final long DURATION_MS = 1_500;
    private static final int CAPACITY_BYTES = 64 * 1024;
    private static final int OBJECTS = 8;
    private static final int BLOCKS_PER_OBJECT = 32;

    /** The failure the loader injects; any other exception is a bug. */
    static final class InjectedFailure extends RuntimeException {
        InjectedFailure() {
            super("injected", null, false, false);
        }
    }

    private final PooledByteBufAllocator allocator =
            new PooledByteBufAllocator(true, 0, 1, 8192, 9, 0, 0, false);

    private static long tag(BlockKey key) {
        return key.objectId() * 1_000_000L + key.position();
    }

    private static int sizeBytes(BlockKey key) {
        return 1024 + (int) (Math.floorMod(tag(key) * 2654435761L, 11L) * 1024);
    }

    private ByteBuf blockFor(BlockKey key) {
        return TestBlocks.block(allocator, tag(key), sizeBytes(key));
    }

    private static void check(BlockKey key, ByteBuf buf) {
        long tag = TestBlocks.verify(buf);
        if (tag != tag(key) || buf.readableBytes() != sizeBytes(key)) {
            throw new AssertionError("asked for " + key + ", got the bytes of block " + tag);
        }
    }

    @Test
    void constantEvictionNeverLeaksNorHandsOutFreedMemory() throws Exception {
        BlockCache cache = BlockCache.create(CAPACITY_BYTES);
        Queue<Throwable> errors = new ConcurrentLinkedQueue<>();
        AtomicLong operations = new AtomicLong();
        long seed = System.nanoTime();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(DURATION_MS);
        // Netty threads: there the pool recycles ByteBuf objects at once, as it does on an event loop.
        try (ExecutorService loaders = Executors.newFixedThreadPool(2, new DefaultThreadFactory("loader"));
             ExecutorService workers = Executors.newFixedThreadPool(THREADS, new DefaultThreadFactory("worker"))) {
            for (int t = 0; t < THREADS; t++) {
                SplittableRandom random = new SplittableRandom(seed + t);
                workers.execute(() -> {
                    Queue<ByteBuf> held = new ArrayDeque<>();
                    try {
                        while (System.nanoTime() < deadline) {
                            work(cache, loaders, random, held);
                            operations.incrementAndGet();
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    } finally {
                        held.forEach(ByteBuf::release);
                    }
                });
            }
        }
        // Both pools are closed: every load has completed and every worker has released what it held.
        assertThat(errors).as("seed %d", seed).isEmpty();
        cache.cleanUp();
        BlockCache.Stats stats = cache.stats();
        assertThat(stats.bytesHeld()).isLessThanOrEqualTo(CAPACITY_BYTES);
        assertThat(stats.evictions()).isPositive();
        assertThat(stats.hits()).isPositive();
        cache.close();
        long live = 0;
        for (PoolArenaMetric arena : allocator.metric().directArenas()) {
            live += arena.numActiveAllocations();
        }
        assertThat(live).as("live pooled allocations after close (seed %d, %d operations)", seed, operations.get())
                .isZero();
    }

    private void work(BlockCache cache, ExecutorService loaders, SplittableRandom random, Queue<ByteBuf> held) {
        // Half the traffic goes to a few hot blocks, so leases and evictions of one block collide often.
        BlockKey key = random.nextBoolean()
                ? new BlockKey(0, random.nextInt(4) * 100_000L)
                : new BlockKey(random.nextInt(OBJECTS), random.nextInt(BLOCKS_PER_OBJECT) * 100_000L);
        int dice = random.nextInt(100);
        if (dice < 70) {
            boolean async = random.nextBoolean();
            boolean fail = random.nextInt(20) == 0;
            CompletableFuture<ByteBuf> future = cache.get(key, k -> {
                if (fail) {
                    return CompletableFuture.failedFuture(new InjectedFailure());
                }
                return async ? CompletableFuture.supplyAsync(() -> blockFor(k), loaders)
                        : CompletableFuture.completedFuture(blockFor(k));
            });
            ByteBuf buf;
            try {
                buf = future.join();
            } catch (CompletionException e) {
                if (e.getCause() instanceof InjectedFailure) {
                    return;
                }
                throw e;
            }
            hold(key, buf, held);
        } else if (dice < 85) {
            ByteBuf buf = cache.getIfPresent(key);
            if (buf != null) {
                hold(key, buf, held);
            }
        } else if (dice < 97) {
            cache.put(key, blockFor(key));
        } else if (dice < 99) {
            cache.invalidateObject(key.objectId());
        } else {
            cache.invalidateAll();
        }
    }

    private static void hold(BlockKey key, ByteBuf buf, Queue<ByteBuf> held) {
        try {
            check(key, buf);
        } catch (AssertionError e) {
            buf.release();
            throw e;
        }
        held.add(buf);
        if (held.size() > 3) {
            ByteBuf oldest = held.remove();
            oldest.release();
        }
    }

    @Test
    void heldBlocksStayIntactWhileEvicted() {
        // A reader keeps its duplicates across evictions of the same blocks; their bytes must not change.
        try (BlockCache cache = BlockCache.create(CAPACITY_BYTES)) {
            List<ByteBuf> readers = new ArrayList<>();
            List<BlockKey> keys = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                BlockKey key = new BlockKey(1, i * 100_000L);
                cache.put(key, blockFor(key));
                ByteBuf dup = cache.getIfPresent(key);
                if (dup != null) {
                    readers.add(dup);
                    keys.add(key);
                }
            }
            cache.invalidateAll();
            for (int i = 0; i < 64; i++) {
                BlockKey key = new BlockKey(2, i * 100_000L);
                cache.put(key, blockFor(key)); // reuses whatever the pool freed
            }
            for (int i = 0; i < readers.size(); i++) {
                check(keys.get(i), readers.get(i));
                readers.get(i).release();
            }
        }
        long live = 0;
        for (PoolArenaMetric arena : allocator.metric().directArenas()) {
            live += arena.numActiveAllocations();
        }
        assertThat(live).isZero();
    }
}
