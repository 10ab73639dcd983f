package io.s3stream.cache.internal;

import io.netty.buffer.ByteBuf;
import java.util.Objects;

/**
 * The cache's single reference to one block, guarded so that handing out a duplicate and dropping the
 * reference can never interleave.
 *
 * <p>Design note: a reader finds a {@code CachedBlock} in the map without any lock, so by the time it calls
 * {@link #retainedDuplicate()} the block may already have been evicted. Retaining the {@link ByteBuf}
 * blindly and catching {@code IllegalReferenceCountException} is not safe with Netty's pooled and adaptive
 * allocators: their {@code ByteBuf} objects are recycled (immediately, on Netty threads such as event loops that
 * complete object-store reads), so the instance whose count reached zero may already describe a different
 * allocation with a count of one, and the retain would succeed on someone else's memory (an ABA problem;
 * {@code CachedBlockTest} shows it happening). Instead, every lease and the one release of the cache's reference run under this object's
 * monitor, and a released block never leases again. The critical section is one atomic increment of the
 * buffer's count; the release itself (which may return memory to the pool) runs outside it. If profiling
 * shows contention on a hot block, a lock-free pin count is the alternative to measure.
 */
public final class CachedBlock {
    private final ByteBuf block;
    private final int weightBytes;
    private boolean released; // guarded by this

    /**
     * Wraps a block, taking ownership of one reference to it.
     *
     * @param block the block; its readable bytes are the cached data
     */
    public CachedBlock(ByteBuf block) {
        this.block = Objects.requireNonNull(block, "block");
        this.weightBytes = block.readableBytes();
    }

    /**
     * Returns the readable size of the block when it was cached, the weight charged against the budget.
     *
     * @return size in bytes
     */
    public int weightBytes() {
        return weightBytes;
    }

    /**
     * Returns a duplicate holding its own reference, or {@code null} if the cache's reference is gone.
     *
     * @return a retained duplicate the caller must release, or {@code null}
     */
    public ByteBuf retainedDuplicate() {
        synchronized (this) {
            return released ? null : block.retainedDuplicate();
        }
    }

    /**
     * Releases the cache's reference; only the first call has any effect.
     *
     * @return {@code true} if this call released the reference
     */
    public boolean release() {
        synchronized (this) {
            if (released) {
                return false;
            }
            released = true;
        }
        // No lease can start now and none is in progress (leases hold the monitor), so the count cannot be
        // raised from zero after this.
        block.release();
        return true;
    }
}
