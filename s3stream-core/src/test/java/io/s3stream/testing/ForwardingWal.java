package io.s3stream.testing;

import io.netty.buffer.ByteBuf;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalSegment;
import io.s3stream.spi.WriteAheadLog;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A WAL that hands every call to another, for test WALs that change one behaviour of a real one. The callback and
 * blocking forms of append are {@link WriteAheadLog}'s defaults, which go through {@link #append(ByteBuf)}: a
 * subclass that changes appends overrides that one method, and every path the engine takes sees the change.
 */
abstract class ForwardingWal implements WriteAheadLog {
    private final WriteAheadLog delegate;
    private final String label;

    /** {@code label} is put before the delegate's description ("gated", "slow-recovery"). */
    ForwardingWal(WriteAheadLog delegate, String label) {
        this.delegate = delegate;
        this.label = label;
    }

    @Override
    public RecoveryResult recover(RecordHandler handler) {
        return delegate.recover(handler);
    }

    @Override
    public CompletableFuture<WalAppendResult> append(ByteBuf record) {
        return delegate.append(record);
    }

    @Override
    public CompletableFuture<Void> trim(long walPosition) {
        return delegate.trim(walPosition);
    }

    @Override
    public long capacityBytes() {
        return delegate.capacityBytes();
    }

    @Override
    public int maxRecordBytes() {
        return delegate.maxRecordBytes();
    }

    @Override
    public boolean isSegmentBoundary(long walPosition) {
        return delegate.isSegmentBoundary(walPosition);
    }

    @Override
    public List<WalSegment> segments(long fromPosition, long toPosition) {
        return delegate.segments(fromPosition, toPosition);
    }

    @Override
    public String description() {
        return label + " " + delegate.description();
    }

    @Override
    public void close() {
        delegate.close();
    }
}
