package io.s3stream.wal.blockdev.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;

import static io.s3stream.wal.blockdev.internal.WalDescriptor.BLOCK_BYTES;

/**
 * A {@link BlockIo} that injects faults into a real one: fail the n-th write with an errno, or "crash" at the n-th
 * write: tear it at a byte boundary (the bytes before it reach the device, the rest do not), then let a few later
 * writes through anyway (as a device may persist writes out of order) while every call reports failure, so nothing
 * written after the crash point is ever acknowledged. Bits can be flipped in stored data.
 */
final class FaultyBlockIo extends ForwardingBlockIo {
    private final AtomicLong writes = new AtomicLong();
    private volatile long failAt = Long.MAX_VALUE;
    private volatile int failErrno;
    private volatile long crashAt = Long.MAX_VALUE;
    private volatile long tearAtByte;
    private volatile int applyAfterCrash;

    FaultyBlockIo(BlockIo delegate) {
        super(delegate);
    }

    /** The {@code n}-th write from now (1-based) fails with {@code errno} and writes nothing; later ones succeed. */
    void failWrite(long n, int errno) {
        failErrno = errno;
        failAt = writes.get() + n;
    }

    /**
     * The {@code n}-th write from now reaches the device only up to byte {@code tearAtByte} of it; the next
     * {@code applyAfter} writes reach it in full; all of them, and every later call, fail with EIO.
     */
    void crashAtWrite(long n, long tearAtByte, int applyAfter) {
        this.tearAtByte = tearAtByte;
        this.applyAfterCrash = applyAfter;
        crashAt = writes.get() + n;
    }

    long writeCount() {
        return writes.get();
    }

    /** Flips one bit of the stored byte at {@code offset} (read-modify-write of its block). */
    void flipBit(long offset, int bit) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(BLOCK_BYTES, BLOCK_BYTES);
            long blockStart = offset - offset % BLOCK_BYTES;
            delegate.read(blockStart, block);
            int i = (int) (offset - blockStart);
            block.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i,
                    (byte) (block.get(java.lang.foreign.ValueLayout.JAVA_BYTE, i) ^ (1 << bit)));
            delegate.write(blockStart, block);
        }
    }

    @Override
    public void write(long offset, MemorySegment source) {
        long n = writes.incrementAndGet();
        if (n == failAt) {
            throw new BlockIoException("pwrite of " + source.byteSize() + " bytes (injected)", path(), offset,
                    failErrno);
        }
        if (n >= crashAt) {
            if (n == crashAt) {
                tear(offset, source, Math.min(tearAtByte, source.byteSize()));
            } else if (n - crashAt <= applyAfterCrash) {
                delegate.write(offset, source);
            }
            throw new BlockIoException("pwrite of " + source.byteSize() + " bytes (injected crash)", path(), offset,
                    Errno.EIO);
        }
        delegate.write(offset, source);
    }

    private void tear(long offset, MemorySegment source, long keep) {
        long fullBlocks = keep / BLOCK_BYTES * BLOCK_BYTES;
        if (fullBlocks > 0) {
            delegate.write(offset, source.asSlice(0, fullBlocks));
        }
        long partial = keep - fullBlocks;
        if (partial > 0) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment block = arena.allocate(BLOCK_BYTES, BLOCK_BYTES);
                delegate.read(offset + fullBlocks, block);
                MemorySegment.copy(source, fullBlocks, block, 0, partial);
                delegate.write(offset + fullBlocks, block);
            }
        }
    }

    @Override
    public void read(long offset, MemorySegment target) {
        if (writes.get() >= crashAt) {
            throw new BlockIoException("pread (injected crash)", path(), offset, Errno.EIO);
        }
        delegate.read(offset, target);
    }
}
