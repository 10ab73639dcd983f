package io.s3stream.cache.internal;

import io.netty.buffer.ByteBuf;
import io.s3stream.cache.ReadAheadListener;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One loader invocation shared by every caller that missed the same key while it was in flight.
 *
 * <p>Design note: waiters are added while the load is registered in the in-flight map (under that map's bin
 * lock) and read once the load has left the map, after which nobody can find it to add more. The monitor only
 * makes that hand-off obviously safe; it is never contended for long.
 */
public final class SharedLoad {
    private final long generation;
    private final ReadAheadListener readAheadOwner;
    private final int reservedBytes;
    private final List<CompletableFuture<ByteBuf>> waiters = new ArrayList<>(2);
    private boolean detached; // guarded by this

    /**
     * Creates a load.
     *
     * @param generation the cache's invalidation generation when the load started; a load that overlaps an
     *     invalidation must not be cached
     */
    public SharedLoad(long generation) {
        this(generation, null, 0);
    }

    /**
     * Creates a load; a read-ahead load goes to the read-ahead area, where {@code reservedBytes} were reserved.
     *
     * @param generation as for {@link #SharedLoad(long)}
     * @param readAheadOwner the reader the block is read ahead for, or {@code null} for a demand load
     * @param reservedBytes bytes reserved in the read-ahead area for it (0 for a demand load)
     */
    public SharedLoad(long generation, ReadAheadListener readAheadOwner, int reservedBytes) {
        this.generation = generation;
        this.readAheadOwner = readAheadOwner;
        this.reservedBytes = reservedBytes;
    }

    /**
     * Returns the reader this block is read ahead for.
     *
     * @return the owner, or {@code null} for a demand load
     */
    public ReadAheadListener readAheadOwner() {
        return readAheadOwner;
    }

    /**
     * Returns the bytes reserved in the read-ahead area for this load.
     *
     * @return the reservation, 0 for a demand load
     */
    public int reservedBytes() {
        return reservedBytes;
    }

    /**
     * Returns the invalidation generation observed when this load started.
     *
     * @return the generation
     */
    public long generation() {
        return generation;
    }

    /**
     * Adds a caller that will receive its own retained duplicate, or the failure.
     *
     * @param waiter the caller's future
     */
    public synchronized void addWaiter(CompletableFuture<ByteBuf> waiter) {
        if (detached) {
            throw new IllegalStateException("load already detached");
        }
        waiters.add(waiter);
    }

    /**
     * Closes the waiter list; call only after the load has been removed from the in-flight map.
     *
     * @return every caller waiting for this load
     */
    public synchronized List<CompletableFuture<ByteBuf>> detach() {
        detached = true;
        return List.copyOf(waiters);
    }
}
