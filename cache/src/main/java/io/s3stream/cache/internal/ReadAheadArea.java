package io.s3stream.cache.internal;

import io.netty.buffer.ByteBuf;
import io.s3stream.cache.BlockKey;
import io.s3stream.cache.ReadAheadListener;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The part of the block cache's budget that holds blocks read ahead for sequential readers: single-use blocks that
 * leave the area the moment a reader takes them.
 *
 * <p>Design note: bytes are reserved before the read-ahead GET is sent and stay reserved until the block is taken,
 * evicted or dropped, so reserved bytes (in flight plus resident) never exceed the capacity: read-ahead is held back
 * by the budget instead of growing past it. To make room, the oldest resident blocks are evicted unread (their
 * readers fell behind or went away; each one's {@link ReadAheadListener} hears of it and shrinks its window);
 * blocks still in flight are never evicted, so when they alone fill the area a reservation fails and read-ahead
 * waits. A plain insertion-ordered map under one monitor is enough: every operation is a map operation and a few
 * additions, and buffers are released outside the monitor. Caffeine's W-TinyLFU would be the wrong policy here: a
 * block read once has the lowest frequency there is, so a full cache would reject exactly the blocks a reader is
 * about to need.
 */
public final class ReadAheadArea {
    private final long capacityBytes;
    private final LinkedHashMap<BlockKey, Entry> resident = new LinkedHashMap<>();
    private long reservedBytes; // guarded by this: in flight plus resident
    private long residentBytes; // guarded by this

    /**
     * Creates an empty area.
     *
     * @param capacityBytes the area's budget; zero disables read-ahead
     */
    public ReadAheadArea(long capacityBytes) {
        this.capacityBytes = capacityBytes;
    }

    /** A resident block and the reader it was read for. */
    private record Entry(ByteBuf block, int bytes, ReadAheadListener owner) {
    }

    /**
     * A block evicted unread; the caller releases it and tells its owner, outside any lock.
     *
     * @param key the block
     * @param block the area's reference, now the caller's
     * @param bytes size of the block
     * @param owner the reader it was read for
     */
    public record Evicted(BlockKey key, ByteBuf block, int bytes, ReadAheadListener owner) {
        /** Releases the block and tells its owner. */
        public void dispose() {
            block.release();
            owner.evictedUnread(key, bytes);
        }
    }

    /**
     * Reserves room for a block about to be read ahead, evicting the oldest resident blocks if needed.
     *
     * @param bytes size of the block
     * @param evicted receives the blocks evicted to make room (also when the reservation fails)
     * @return whether the reservation was made; {@code false} when blocks in flight fill the area
     */
    public boolean reserve(int bytes, List<Evicted> evicted) {
        synchronized (this) {
            if (bytes > capacityBytes || bytes > capacityBytes - (reservedBytes - residentBytes)) {
                return false;
            }
            Iterator<Map.Entry<BlockKey, Entry>> oldest = resident.entrySet().iterator();
            while (reservedBytes + bytes > capacityBytes) {
                Map.Entry<BlockKey, Entry> e = oldest.next();
                oldest.remove();
                residentBytes -= e.getValue().bytes();
                reservedBytes -= e.getValue().bytes();
                evicted.add(new Evicted(e.getKey(), e.getValue().block(), e.getValue().bytes(), e.getValue().owner()));
            }
            reservedBytes += bytes;
            return true;
        }
    }

    /**
     * Gives back a reservation whose block will not be inserted.
     *
     * @param bytes the reserved size
     */
    public synchronized void unreserve(int bytes) {
        reservedBytes -= bytes;
    }

    /**
     * Turns a reservation into a resident block, taking one reference to it.
     *
     * @param key the block
     * @param block the block, one reference handed over
     * @param bytes the reserved size
     * @param owner the reader it was read for
     * @return a block this one replaced, which the caller must release, or {@code null}
     */
    public ByteBuf insert(BlockKey key, ByteBuf block, int bytes, ReadAheadListener owner) {
        synchronized (this) {
            Entry previous = resident.put(key, new Entry(block, bytes, owner));
            residentBytes += bytes;
            if (previous == null) {
                return null;
            }
            residentBytes -= previous.bytes();
            reservedBytes -= previous.bytes();
            return previous.block();
        }
    }

    /**
     * Removes a block for a reader: the area's reference becomes the caller's.
     *
     * @param key the block
     * @return the block, which the caller must release, or {@code null} if it is not resident
     */
    public ByteBuf take(BlockKey key) {
        synchronized (this) {
            if (resident.isEmpty()) {
                return null;
            }
            Entry e = resident.remove(key);
            if (e == null) {
                return null;
            }
            residentBytes -= e.bytes();
            reservedBytes -= e.bytes();
            return e.block();
        }
    }

    /**
     * Removes the block under {@code key} if it is exactly {@code block}.
     *
     * @param key the block
     * @param block the buffer inserted under it
     * @return whether it was removed; the caller then owns the area's reference
     */
    public boolean remove(BlockKey key, ByteBuf block) {
        synchronized (this) {
            Entry e = resident.get(key);
            if (e == null || e.block() != block) {
                return false;
            }
            resident.remove(key);
            residentBytes -= e.bytes();
            reservedBytes -= e.bytes();
            return true;
        }
    }

    /**
     * Returns whether a block is resident.
     *
     * @param key the block
     * @return whether it is resident
     */
    public synchronized boolean contains(BlockKey key) {
        return resident.containsKey(key);
    }

    /**
     * Removes every resident block whose key matches; they were dropped, not evicted, so no owner is told.
     *
     * @param which the blocks to drop
     * @return the removed blocks, which the caller must release
     */
    public List<ByteBuf> drop(Predicate<BlockKey> which) {
        List<ByteBuf> out = new ArrayList<>();
        synchronized (this) {
            Iterator<Map.Entry<BlockKey, Entry>> it = resident.entrySet().iterator();
            while (it.hasNext()) {
                Map.Entry<BlockKey, Entry> e = it.next();
                if (which.test(e.getKey())) {
                    it.remove();
                    residentBytes -= e.getValue().bytes();
                    reservedBytes -= e.getValue().bytes();
                    out.add(e.getValue().block());
                }
            }
        }
        return out;
    }

    /**
     * Returns the bytes of the resident blocks.
     *
     * @return resident bytes
     */
    public synchronized long residentBytes() {
        return residentBytes;
    }

    /**
     * Returns the bytes reserved: resident blocks plus blocks in flight.
     *
     * @return reserved bytes, never more than the capacity
     */
    public synchronized long reservedBytes() {
        return reservedBytes;
    }

    /**
     * Returns the number of resident blocks.
     *
     * @return the count
     */
    public synchronized int residentBlocks() {
        return resident.size();
    }

    /**
     * Returns the area's budget.
     *
     * @return capacity in bytes
     */
    public long capacityBytes() {
        return capacityBytes;
    }
}
