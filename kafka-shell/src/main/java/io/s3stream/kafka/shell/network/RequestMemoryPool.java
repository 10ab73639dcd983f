package io.s3stream.kafka.shell.network;

import java.util.ArrayList;
import java.util.List;

/**
 * The memory budget of requests in flight, shared by every connection ({@code queued.max.request.bytes}): a frame's
 * bytes are reserved when its size prefix arrives, before its body is buffered, and given back when the request has
 * been answered (a produce holds its frame until its batches are appended). A connection that cannot reserve stops
 * reading until memory is given back, so a client that sends large frames slowly, or many clients at once, cannot
 * make the broker buffer more than the budget.
 *
 * <p>Design note: a frame larger than the whole budget is admitted when nothing else is reserved, or it could never
 * be read; {@code socket.request.max.bytes} bounds it. Waiters are all woken on every release and try again: there
 * are few, and fairness does not matter more than simplicity here.
 */
public final class RequestMemoryPool {
    private final long capacityBytes;
    private long reservedBytes; // guarded by this
    private final List<Runnable> waiters = new ArrayList<>(); // guarded by this

    /** @param capacityBytes the budget; zero or negative for none (every reservation succeeds and is not counted) */
    public RequestMemoryPool(long capacityBytes) {
        this.capacityBytes = capacityBytes;
    }

    public long capacityBytes() {
        return capacityBytes;
    }

    /** Bytes reserved now. */
    public synchronized long reservedBytes() {
        return reservedBytes;
    }

    /**
     * Reserves {@code bytes}, or registers {@code onRelease} to be run (once) at the next release and returns false.
     */
    synchronized boolean tryReserve(long bytes, Runnable onRelease) {
        if (capacityBytes <= 0) {
            return true;
        }
        if (reservedBytes == 0 || reservedBytes + bytes <= capacityBytes) {
            reservedBytes += bytes;
            return true;
        }
        waiters.add(onRelease);
        return false;
    }

    void release(long bytes) {
        if (capacityBytes <= 0 || bytes == 0) {
            return;
        }
        List<Runnable> wake;
        synchronized (this) {
            reservedBytes -= bytes;
            wake = List.copyOf(waiters);
            waiters.clear();
        }
        wake.forEach(Runnable::run);
    }
}
