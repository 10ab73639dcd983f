package io.s3stream.wal.blockdev.internal;

import io.netty.buffer.ByteBuf;
import io.s3stream.spi.WriteAheadLog.AppendCallback;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * What travels through a {@link BlockDeviceWal} conductor's inbox: appends, trims, the close request and returned
 * group writes (the answers of ownership checks are {@link OwnershipWatch.CheckResult}). Mutable fields are
 * conductor-owned unless marked volatile.
 */
final class ConductorCommands {

    private ConductorCommands() {
    }

    /** An append waiting for its group; the conductor reports its outcome to the appender's callback. */
    static final class AppendRequest {
        private static final System.Logger LOG = System.getLogger(AppendRequest.class.getName());

        /** The record is {@code size} bytes of {@code buf} from {@code index}. */
        final ByteBuf buf;
        final int index;
        final int size;
        final long deadlineNanos;
        private final AppendCallback callback;

        AppendRequest(ByteBuf buf, int index, int size, long deadlineNanos, AppendCallback callback) {
            this.buf = buf;
            this.index = index;
            this.size = size;
            this.deadlineNanos = deadlineNanos;
            this.callback = callback;
        }

        /** Reports the record durable; a throwing callback is logged, never allowed to stop the conductor. */
        void succeed(long position, long nextPosition) {
            try {
                callback.onDurable(position, nextPosition);
            } catch (Throwable t) {
                LOG.log(System.Logger.Level.ERROR, "an append callback threw", t);
            }
        }

        /** Reports the append failed; a throwing callback is logged, never allowed to stop the conductor. */
        void fail(Throwable cause) {
            try {
                callback.onFailure(cause);
            } catch (Throwable t) {
                LOG.log(System.Logger.Level.ERROR, "an append callback threw", t);
            }
        }
    }

    /** A trim up to {@code position}; completes once the header recording it is durable (or nothing to do). */
    record TrimRequest(long position, CompletableFuture<Void> future) {
    }

    /** Asks the conductor to finish: fail what waits, let what is in flight return, stop. */
    enum CloseCommand {
        INSTANCE
    }

    /** One group-commit write: records [start, recordsEnd) plus padding to end. */
    static final class Group {
        final long start;
        final MemorySegment buffer;
        final Arena ownArena;
        final List<AppendRequest> requests = new ArrayList<>();
        long[] positions;
        long recordsEnd;
        long end;
        volatile boolean completed;
        volatile Throwable error;
        long submittedNanos;
        long seq;

        Group(long start, MemorySegment buffer, Arena ownArena) {
            this.start = start;
            this.buffer = buffer;
            this.ownArena = ownArena;
        }
    }
}
