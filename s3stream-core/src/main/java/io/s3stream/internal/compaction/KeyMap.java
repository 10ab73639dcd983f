package io.s3stream.internal.compaction;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Key compaction's map of key → latest offset, in a fixed budget: each key is stored as its 128-bit hash
 * (MurmurHash3 x64/128, so two keys collide with probability about n² / 2¹²⁹) with its offset, 24 bytes per slot in
 * one open-addressing table filled to at most 90%. It never grows: {@link #put} says when it is full, and the caller
 * stops indexing there (the next run continues). Not thread-safe; reused across runs ({@link #clear}).
 */
final class KeyMap {
    static final int SLOT_BYTES = 24;
    private static final double MAX_LOAD = 0.9;

    /** Slot i: hash halves at 3i and 3i+1, offset + 1 at 3i+2 (0 = empty). */
    private final long[] slots;
    private final int capacity;
    private final int maxEntries;
    private int size;

    KeyMap(long budgetBytes) {
        long cap = Math.max(16, budgetBytes / SLOT_BYTES);
        if (cap * 3 > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("key map of " + budgetBytes + " bytes is larger than one table holds");
        }
        this.capacity = (int) cap;
        this.slots = new long[capacity * 3];
        this.maxEntries = (int) (capacity * MAX_LOAD);
    }

    /** Keys the map holds at most. */
    int maxEntries() {
        return maxEntries;
    }

    int size() {
        return size;
    }

    void clear() {
        Arrays.fill(slots, 0);
        size = 0;
    }

    /**
     * Records {@code offset} as the latest of {@code key} (offsets are put in increasing order). Returns false, changing
     * nothing, when the key is new and the map is full.
     */
    boolean put(ByteBuffer key, long offset) {
        long h1 = hash1(key);
        long h2 = hash2;
        int i = slotOf(h1, h2);
        if (slots[3 * i + 2] != 0) {
            slots[3 * i + 2] = offset + 1;
            return true;
        }
        if (size >= maxEntries) {
            return false;
        }
        slots[3 * i] = h1;
        slots[3 * i + 1] = h2;
        slots[3 * i + 2] = offset + 1;
        size++;
        return true;
    }

    /** The latest offset recorded for {@code key}, or -1. */
    long get(ByteBuffer key) {
        long h1 = hash1(key);
        long stored = slots[3 * slotOf(h1, hash2) + 2];
        return stored - 1;
    }

    /** The slot holding the hash, or the empty slot where it would go (linear probing; never full). */
    private int slotOf(long h1, long h2) {
        int i = (int) Long.remainderUnsigned(h1, capacity);
        while (true) {
            if (slots[3 * i + 2] == 0 || (slots[3 * i] == h1 && slots[3 * i + 1] == h2)) {
                return i;
            }
            if (++i == capacity) {
                i = 0;
            }
        }
    }

    // ------------------------------------------------------------------ MurmurHash3 x64/128 (seed 0)

    /** The key's 128-bit hash as two longs (tests check it against the reference implementation). */
    long[] hashOf(ByteBuffer key) {
        long h1 = hash1(key);
        return new long[] {h1, hash2};
    }

    private long hash2; // second half of the last hash1 call

    private long hash1(ByteBuffer key) {
        ByteBuffer b = key.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int pos = b.position();
        int len = b.remaining();
        long h1 = 0;
        long h2 = 0;
        final long c1 = 0x87c37b91114253d5L;
        final long c2 = 0x4cf5ad432745937fL;
        int blocks = len / 16;
        for (int i = 0; i < blocks; i++) {
            long k1 = b.getLong(pos + 16 * i);
            long k2 = b.getLong(pos + 16 * i + 8);
            k1 *= c1;
            k1 = Long.rotateLeft(k1, 31);
            k1 *= c2;
            h1 ^= k1;
            h1 = Long.rotateLeft(h1, 27);
            h1 += h2;
            h1 = h1 * 5 + 0x52dce729;
            k2 *= c2;
            k2 = Long.rotateLeft(k2, 33);
            k2 *= c1;
            h2 ^= k2;
            h2 = Long.rotateLeft(h2, 31);
            h2 += h1;
            h2 = h2 * 5 + 0x38495ab5;
        }
        int tail = pos + 16 * blocks;
        int rest = len & 15;
        long k1 = 0;
        long k2 = 0;
        for (int i = rest - 1; i >= 8; i--) {
            k2 ^= (b.get(tail + i) & 0xffL) << (8 * (i - 8));
        }
        for (int i = Math.min(rest, 8) - 1; i >= 0; i--) {
            k1 ^= (b.get(tail + i) & 0xffL) << (8 * i);
        }
        if (rest > 8) {
            k2 *= c2;
            k2 = Long.rotateLeft(k2, 33);
            k2 *= c1;
            h2 ^= k2;
        }
        if (rest > 0) {
            k1 *= c1;
            k1 = Long.rotateLeft(k1, 31);
            k1 *= c2;
            h1 ^= k1;
        }
        h1 ^= len;
        h2 ^= len;
        h1 += h2;
        h2 += h1;
        h1 = fmix(h1);
        h2 = fmix(h2);
        h1 += h2;
        h2 += h1;
        hash2 = h2;
        return h1;
    }

    private static long fmix(long k) {
        k ^= k >>> 33;
        k *= 0xff51afd7ed558ccdL;
        k ^= k >>> 33;
        k *= 0xc4ceb9fe1a85ec53L;
        k ^= k >>> 33;
        return k;
    }
}
