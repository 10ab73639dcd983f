package io.s3stream.wal.blockdev.internal;

import java.lang.foreign.MemorySegment;

/** A {@link BlockIo} that passes every call to a real one; tests override what they observe or break. */
abstract class ForwardingBlockIo implements BlockIo {
    protected final BlockIo delegate;

    ForwardingBlockIo(BlockIo delegate) {
        this.delegate = delegate;
    }

    @Override
    public void write(long offset, MemorySegment source) {
        delegate.write(offset, source);
    }

    @Override
    public void read(long offset, MemorySegment target) {
        delegate.read(offset, target);
    }

    @Override
    public void sync() {
        delegate.sync();
    }

    @Override
    public long sizeBytes() {
        return delegate.sizeBytes();
    }

    @Override
    public boolean isBlockDevice() {
        return delegate.isBlockDevice();
    }

    @Override
    public String path() {
        return delegate.path();
    }

    @Override
    public void close() {
        delegate.close();
    }
}
