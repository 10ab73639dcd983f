package io.s3stream.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class BlockCacheTest {
    private static final ByteBufAllocator ALLOC = new UnpooledByteBufAllocator(true);
    private final List<ByteBuf> created = new ArrayList<>();
    private BlockCache cache = BlockCache.create(1024);

    private ByteBuf block(long tag, int size) {
        ByteBuf buf = TestBlocks.block(ALLOC, tag, size);
        created.add(buf);
        return buf;
    }

    @AfterEach
    void everyBufferReleased() {
        cache.close();
        for (int i = 0; i < created.size(); i++) {
            assertThat(created.get(i).refCnt()).as("refCnt of block #%d", i).isZero();
        }
    }

    @Test
    void putThenHitReturnsRetainedDuplicate() {
        BlockKey key = new BlockKey(1, 0);
        ByteBuf original = block(7, 100);
        cache.put(key, original);

        ByteBuf hit = cache.getIfPresent(key);
        assertThat(hit).isNotNull().isNotSameAs(original);
        assertThat(TestBlocks.verify(hit)).isEqualTo(7);
        assertThat(original.refCnt()).isEqualTo(2);
        hit.readerIndex(50); // a reader's indices are its own
        assertThat(cache.getIfPresent(key).readableBytes()).isEqualTo(100);
        assertThat(original.refCnt()).isEqualTo(3);
        hit.release(2);

        assertThat(cache.getIfPresent(new BlockKey(1, 100))).isNull();
        BlockCache.Stats stats = cache.stats();
        assertThat(stats.hits()).isEqualTo(2);
        assertThat(stats.misses()).isEqualTo(1);
        assertThat(stats.bytesHeld()).isEqualTo(100);
        assertThat(stats.entries()).isEqualTo(1);
        assertThat(stats.capacityBytes()).isEqualTo(1024);
    }

    @Test
    void missLoadsOnceThenHits() throws Exception {
        BlockKey key = new BlockKey(1, 0);
        AtomicInteger calls = new AtomicInteger();
        Function<BlockKey, CompletableFuture<ByteBuf>> loader = k -> {
            calls.incrementAndGet();
            return CompletableFuture.completedFuture(block(3, 64));
        };
        ByteBuf first = cache.get(key, loader).get();
        ByteBuf second = cache.get(key, loader).get();
        assertThat(calls).hasValue(1);
        assertThat(TestBlocks.verify(first)).isEqualTo(3);
        assertThat(TestBlocks.verify(second)).isEqualTo(3);
        first.release();
        second.release();
        assertThat(cache.stats()).extracting(BlockCache.Stats::hits, BlockCache.Stats::misses,
                BlockCache.Stats::loads).containsExactly(1L, 1L, 1L);
    }

    @Test
    void concurrentMissesShareOneLoad() throws Exception {
        BlockKey key = new BlockKey(9, 4096);
        AtomicInteger calls = new AtomicInteger();
        CompletableFuture<ByteBuf> loading = new CompletableFuture<>();
        int threads = 16;
        CountDownLatch start = new CountDownLatch(1);
        List<Future<CompletableFuture<ByteBuf>>> submitted = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            for (int i = 0; i < threads; i++) {
                submitted.add(pool.submit(() -> {
                    start.await();
                    return cache.get(key, k -> {
                        calls.incrementAndGet();
                        return loading;
                    });
                }));
            }
            start.countDown();
            List<CompletableFuture<ByteBuf>> results = new ArrayList<>();
            for (Future<CompletableFuture<ByteBuf>> f : submitted) {
                results.add(f.get(10, TimeUnit.SECONDS));
            }
            assertThat(results).noneMatch(CompletableFuture::isDone);
            ByteBuf loaded = block(42, 512);
            loading.complete(loaded);

            List<ByteBuf> buffers = new ArrayList<>();
            for (CompletableFuture<ByteBuf> r : results) {
                buffers.add(r.get(10, TimeUnit.SECONDS));
            }
            assertThat(calls).hasValue(1);
            Set<ByteBuf> distinct = Collections.newSetFromMap(new IdentityHashMap<>());
            distinct.addAll(buffers);
            assertThat(distinct).hasSize(threads); // each caller has its own duplicate
            assertThat(buffers).allSatisfy(b -> {
                assertThat(TestBlocks.verify(b)).isEqualTo(42);
                assertThat(b).isEqualTo(loaded); // ByteBuf equality compares readable bytes
            });
            assertThat(loaded.refCnt()).isEqualTo(threads + 1); // one per caller plus the cache's
            buffers.forEach(ByteBuf::release);
            assertThat(loaded.refCnt()).isEqualTo(1);
            assertThat(cache.stats().loads()).isEqualTo(1);
        }
    }

    @Test
    void failedLoadFailsEveryWaiterAndIsNotCached() throws Exception {
        BlockKey key = new BlockKey(2, 0);
        CompletableFuture<ByteBuf> loading = new CompletableFuture<>();
        AtomicInteger calls = new AtomicInteger();
        CompletableFuture<ByteBuf> a = cache.get(key, k -> {
            calls.incrementAndGet();
            return loading;
        });
        CompletableFuture<ByteBuf> b = cache.get(key, k -> {
            calls.incrementAndGet();
            return loading;
        });
        IOException boom = new IOException("503 SlowDown");
        loading.completeExceptionally(boom);
        for (CompletableFuture<ByteBuf> f : List.of(a, b)) {
            assertThatThrownBy(f::get).isInstanceOf(ExecutionException.class).cause().isSameAs(boom);
        }
        assertThat(cache.stats().entries()).isZero();
        assertThat(cache.stats().loadFailures()).isEqualTo(1);

        // A loader that throws is reported the same way; then a later get retries and succeeds.
        IllegalStateException thrown = new IllegalStateException("bad request");
        assertThatThrownBy(() -> cache.get(key, k -> {
            throw thrown;
        }).get()).cause().isSameAs(thrown);
        ByteBuf ok = cache.get(key, k -> {
            calls.incrementAndGet();
            return CompletableFuture.completedFuture(block(5, 32));
        }).get();
        assertThat(TestBlocks.verify(ok)).isEqualTo(5);
        ok.release();
        assertThat(calls).hasValue(2);
        assertThat(cache.stats().loadFailures()).isEqualTo(2);
        assertThat(cache.stats().loads()).isEqualTo(3);
    }

    @Test
    void loaderCompletingWithNullFailsClearly() {
        CompletableFuture<ByteBuf> f = cache.get(new BlockKey(1, 1), k -> CompletableFuture.completedFuture(null));
        assertThatThrownBy(f::get).cause().isInstanceOf(NullPointerException.class);
    }

    @Test
    void blockLargerThanCapacityIsReturnedButNotCached() throws Exception {
        ByteBuf big = block(11, 1025);
        ByteBuf got = cache.get(new BlockKey(3, 0), k -> CompletableFuture.completedFuture(big)).get();
        assertThat(TestBlocks.verify(got)).isEqualTo(11);
        assertThat(big.refCnt()).isEqualTo(1); // only the caller's
        assertThat(cache.stats().entries()).isZero();
        got.release();

        ByteBuf alsoBig = block(12, 2000);
        cache.put(new BlockKey(3, 1), alsoBig);
        assertThat(alsoBig.refCnt()).isZero();
        assertThat(cache.getIfPresent(new BlockKey(3, 1))).isNull();
    }

    @Test
    void putReplacesAndReleasesThePreviousBlock() {
        BlockKey key = new BlockKey(1, 0);
        ByteBuf first = block(1, 100);
        ByteBuf second = block(2, 100);
        cache.put(key, first);
        cache.put(key, second);
        assertThat(first.refCnt()).isZero();
        ByteBuf hit = cache.getIfPresent(key);
        assertThat(TestBlocks.verify(hit)).isEqualTo(2);
        hit.release();
    }

    @Test
    void evictionReleasesTheCacheReferenceButNotTheReaders() {
        List<ByteBuf> blocks = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            ByteBuf b = block(i, 300);
            blocks.add(b);
            cache.put(new BlockKey(1, i * 300L), b);
        }
        ByteBuf held = cache.getIfPresent(new BlockKey(1, 9 * 300L));
        cache.cleanUp();
        assertThat(cache.stats().bytesHeld()).isLessThanOrEqualTo(1024);
        assertThat(cache.stats().evictions()).isGreaterThanOrEqualTo(7);
        long cachedRefs = blocks.stream().mapToInt(ByteBuf::refCnt).sum() - (held == null ? 0 : 1);
        assertThat(cachedRefs * 300).isEqualTo(cache.stats().bytesHeld());
        cache.invalidateAll();
        if (held != null) {
            assertThat(TestBlocks.verify(held)).isEqualTo(9); // still readable: the reader owns a reference
            held.release();
        }
    }

    @Test
    void invalidateObjectDropsOnlyThatObject() {
        ByteBuf a0 = block(1, 100);
        ByteBuf a1 = block(2, 100);
        ByteBuf b0 = block(3, 100);
        cache.put(new BlockKey(1, 0), a0);
        cache.put(new BlockKey(1, 100), a1);
        cache.put(new BlockKey(2, 0), b0);
        cache.invalidateObject(1);
        assertThat(a0.refCnt()).isZero();
        assertThat(a1.refCnt()).isZero();
        assertThat(b0.refCnt()).isEqualTo(1);
        assertThat(cache.getIfPresent(new BlockKey(1, 0))).isNull();
        ByteBuf hit = cache.getIfPresent(new BlockKey(2, 0));
        assertThat(hit).isNotNull();
        hit.release();
        assertThat(cache.stats().entries()).isEqualTo(1);
    }

    @Test
    void loadOverlappingAnInvalidationIsReturnedButNotCached() throws Exception {
        BlockKey key = new BlockKey(4, 0);
        CompletableFuture<ByteBuf> loading = new CompletableFuture<>();
        CompletableFuture<ByteBuf> waiter = cache.get(key, k -> loading);
        cache.invalidateObject(4);
        ByteBuf loaded = block(8, 64);
        loading.complete(loaded);
        ByteBuf got = waiter.get();
        assertThat(TestBlocks.verify(got)).isEqualTo(8);
        got.release();
        assertThat(loaded.refCnt()).isZero();
        assertThat(cache.getIfPresent(key)).isNull();
    }

    @Test
    void cancelledWaiterDoesNotLeakItsDuplicate() throws Exception {
        BlockKey key = new BlockKey(5, 0);
        CompletableFuture<ByteBuf> loading = new CompletableFuture<>();
        CompletableFuture<ByteBuf> cancelled = cache.get(key, k -> loading);
        CompletableFuture<ByteBuf> kept = cache.get(key, k -> loading);
        cancelled.cancel(false);
        ByteBuf loaded = block(6, 64);
        loading.complete(loaded);
        kept.get().release();
        assertThat(loaded.refCnt()).isEqualTo(1); // the cache's only
    }

    @Test
    void closeReleasesEverythingAndLaterCallsFailClearly() throws Exception {
        ByteBuf a = block(1, 100);
        cache.put(new BlockKey(1, 0), a);
        CompletableFuture<ByteBuf> loading = new CompletableFuture<>();
        CompletableFuture<ByteBuf> inFlight = cache.get(new BlockKey(1, 100), k -> loading);

        cache.close();
        cache.close(); // idempotent
        assertThat(a.refCnt()).isZero();
        assertThat(cache.stats().entries()).isZero();
        assertThat(cache.stats().bytesHeld()).isZero();

        ByteBuf late = block(2, 100);
        loading.complete(late); // a load in flight still serves its waiter, but is not cached
        ByteBuf got = inFlight.get();
        assertThat(TestBlocks.verify(got)).isEqualTo(2);
        got.release();
        assertThat(late.refCnt()).isZero();

        assertThatThrownBy(() -> cache.get(new BlockKey(1, 0), k -> CompletableFuture.completedFuture(block(3, 8))).get())
                .cause().isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThat(cache.getIfPresent(new BlockKey(1, 0))).isNull();
        ByteBuf afterClose = block(4, 100);
        cache.put(new BlockKey(1, 0), afterClose);
        assertThat(afterClose.refCnt()).isZero();
    }

    @Test
    void rejectsNonPositiveCapacity() {
        assertThatThrownBy(() -> BlockCache.create(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("capacityBytes");
    }
}
