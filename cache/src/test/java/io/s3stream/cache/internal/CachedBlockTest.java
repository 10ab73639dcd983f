package io.s3stream.cache.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class CachedBlockTest {
    private final PooledByteBufAllocator allocator = new PooledByteBufAllocator(true, 0, 1, 8192, 9, 0, 0, false);

    private static ByteBuf root(ByteBuf buf) {
        return buf.unwrap() != null ? buf.unwrap() : buf; // see through the leak detector's wrapper
    }

    /** Runs on a Netty thread, where pooled ByteBuf objects are recycled at once (as on an event loop). */
    private static void onNettyThread(Runnable body) throws Exception {
        CompletableFuture<Void> done = new CompletableFuture<>();
        Thread thread = new FastThreadLocalThread(() -> {
            try {
                body.run();
                done.complete(null);
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        });
        thread.start();
        done.get();
    }

    @Test
    void releasedBlockNeverLeasesEvenWhenItsBufferObjectIsReused() throws Exception {
        onNettyThread(() -> {
            ByteBuf evicted = allocator.directBuffer(4096).writeLong(1);
            CachedBlock cached = new CachedBlock(evicted);
            assertThat(cached.release()).isTrue();
            ByteBuf reused = allocator.directBuffer(4096).writeLong(2);
            try {
                // The hazard the guard exists for: the pool hands the same ByteBuf object to a new allocation,
                // so a stale reference sees a live count and someone else's bytes.
                assertThat(root(reused)).as("the pool reuses the ByteBuf object (the premise of this test)").isSameAs(root(evicted));
                assertThat(root(evicted).refCnt()).isEqualTo(1);

                assertThat(cached.retainedDuplicate()).isNull();
                assertThat(reused.refCnt()).isEqualTo(1);
            } finally {
                reused.release();
            }
        });
    }

    @Test
    void releaseHappensExactlyOnceAndLeasesShareTheCount() {
        ByteBuf buf = allocator.directBuffer(64).writeLong(7);
        CachedBlock cached = new CachedBlock(buf);
        assertThat(cached.weightBytes()).isEqualTo(8);
        ByteBuf lease = cached.retainedDuplicate();
        assertThat(buf.refCnt()).isEqualTo(2);
        assertThat(cached.release()).isTrue();
        assertThat(cached.release()).isFalse();
        assertThat(buf.refCnt()).isEqualTo(1);
        assertThat(lease.getLong(0)).isEqualTo(7);
        lease.release();
        assertThat(buf.refCnt()).isZero();
    }
}
