package io.s3stream.internal.wal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.InvalidConfigException;
import io.s3stream.NodeFencedException;
import io.s3stream.OverCapacityException;
import io.s3stream.StorageIOException;
import io.s3stream.StreamClosedException;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A write-ahead log kept in memory: the reference implementation of the {@link WriteAheadLog} contract and the WAL
 * of unit tests. Not durable across processes.
 *
 * <p>Design note: the records live in a {@link Log} that is shared across the JVM by name and node id
 * ({@code mem://name} holds one log per node, as a directory on a shared file system would), so a test can abandon an
 * engine (a simulated crash), open a new one on the same name and watch it recover, and another engine can take the
 * log over ({@link WalContext#takeover()}). Each opened handle is one owner; a handle whose owner epoch was superseded
 * is fenced with {@link NodeFencedException}: appends made before the new owner's recovery are delivered to it, later
 * ones are refused. Completion is asynchronous, on one committer thread per handle, in position order, like a real
 * group-committing WAL.
 *
 * <p>Records are not copied: the log holds a reference to the appender's buffer (the engine never modifies a record
 * after appending it), and the engine's appends report to a callback, so the WAL adds one small object per append
 * (its record) to heap-allocation measurements of the engine.
 *
 * <p>Positions count bytes as a real ring would: a record of {@code n} bytes occupies
 * {@code RECORD_OVERHEAD_BYTES + n}, and {@link #capacityBytes()} bounds the bytes between the trim point and the
 * write point. Fault hooks ({@link #failAppendsAfter}) let engine tests inject device errors.
 */
public final class InMemoryWal implements WriteAheadLog {
    /** Bytes a record occupies beyond its payload, mimicking a real record header. */
    public static final int RECORD_OVERHEAD_BYTES = 24;

    /** Logs by name, then by node id. */
    private static final ConcurrentHashMap<String, ConcurrentHashMap<Long, Log>> LOGS = new ConcurrentHashMap<>();

    private final String name;
    private final Log log;
    private final WalContext context;
    private final Thread committer;
    private final ArrayDeque<Record> pending = new ArrayDeque<>();
    private boolean recovered;
    private boolean closed;
    private long ownerEpoch;
    private RuntimeException fenceCause;

    private InMemoryWal(String name, Log log, WalContext context) {
        this.name = name;
        this.log = log;
        this.context = context;
        this.committer = Thread.ofPlatform().daemon().name("mem-wal-committer-" + name).unstarted(this::commitLoop);
    }

    /**
     * Opens (creating if needed) the context's node's log under {@code name} with the given capacity; for a takeover, a
     * log that does not exist is not created (recovery then finds nothing).
     */
    public static InMemoryWal open(String name, long capacityBytes, WalContext context) {
        if (capacityBytes < 64 * 1024) {
            throw new InvalidConfigException("mem WAL capacity must be >= 64 KiB, was " + capacityBytes);
        }
        ConcurrentHashMap<Long, Log> nodes = LOGS.computeIfAbsent(name, n -> new ConcurrentHashMap<>());
        Log log = context.takeover() ? nodes.getOrDefault(context.nodeId(), new Log(capacityBytes))
                : nodes.computeIfAbsent(context.nodeId(), n -> new Log(capacityBytes));
        if (log.capacityBytes != capacityBytes) {
            throw new InvalidConfigException("mem WAL '" + name + "' exists with capacity " + log.capacityBytes
                    + " bytes; it cannot be reopened with " + capacityBytes);
        }
        return new InMemoryWal(name, log, context);
    }

    /** Forgets the logs of every node under {@code name} and frees their records (test isolation). */
    public static void clear(String name) {
        ConcurrentHashMap<Long, Log> nodes = LOGS.remove(name);
        for (Log log : nodes == null ? List.<Log>of() : nodes.values()) {
            log.lock.lock();
            try {
                log.records.forEach(Record::release);
                log.records.clear();
            } finally {
                log.lock.unlock();
            }
        }
    }

    /**
     * Fault injection: after the next {@code appends} appends to the logs under {@code name}, the next append fails with
     * an IO error that fences the handle, as a failing device would.
     */
    public static void failAppendsAfter(String name, long appends) {
        ConcurrentHashMap<Long, Log> nodes = LOGS.get(name);
        if (nodes == null || nodes.isEmpty()) {
            throw new IllegalArgumentException("no mem WAL named " + name);
        }
        for (Log log : nodes.values()) {
            log.lock.lock();
            try {
                log.appendsUntilFailure = appends;
            } finally {
                log.lock.unlock();
            }
        }
    }

    @Override
    public RecoveryResult recover(RecordHandler handler) {
        List<Record> snapshot;
        long next;
        log.lock.lock();
        try {
            if (recovered) {
                throw new IllegalStateException("recover() was already called on " + description());
            }
            if (context.nodeEpoch() < log.ownerEpoch) {
                throw new NodeFencedException(description() + " is owned by node " + log.ownerNodeId
                        + " at node epoch " + log.ownerEpoch + ", newer than " + context.nodeEpoch());
            }
            log.ownerNodeId = context.nodeId();
            log.ownerEpoch = context.nodeEpoch();
            ownerEpoch = context.nodeEpoch();
            recovered = true;
            snapshot = new ArrayList<>(log.records);
            next = log.writePosition;
        } finally {
            log.lock.unlock();
        }
        long bytes = 0;
        for (Record r : snapshot) {
            bytes += r.length;
            ByteBuf copy = PooledByteBufAllocator.DEFAULT.directBuffer(r.length);
            log.lock.lock();
            try {
                if (r.data == null) {
                    copy.release();
                    continue; // trimmed meanwhile
                }
                copy.writeBytes(r.data, r.index, r.length);
            } finally {
                log.lock.unlock();
            }
            handler.onRecord(r.position, r.nextPosition(), copy);
        }
        committer.start();
        return new RecoveryResult(snapshot.size(), bytes, next, false, "end of log");
    }

    @Override
    public CompletableFuture<WalAppendResult> append(ByteBuf record) {
        CompletableFuture<WalAppendResult> future = new CompletableFuture<>();
        append(record, AppendCallback.completing(future));
        return future;
    }

    @Override
    public void append(ByteBuf record, AppendCallback callback) {
        append(record, record.readerIndex(), record.readableBytes(), callback);
    }

    @Override
    public void append(ByteBuf buffer, int index, int length, AppendCallback callback) {
        RuntimeException refused = admit(buffer, index, length, callback);
        if (refused != null) {
            callback.onFailure(refused); // outside the log's lock
        }
    }

    /** Queues the record ({@code size} bytes of {@code buffer} from {@code index}) for the committer, or says why not. */
    private RuntimeException admit(ByteBuf buffer, int index, int size, AppendCallback callback) {
        if (size > maxRecordBytes()) {
            return new IllegalArgumentException("record of " + size + " bytes exceeds the largest record "
                    + maxRecordBytes() + " of " + description());
        }
        long need = RECORD_OVERHEAD_BYTES + (long) size;
        long deadline = System.nanoTime() + context.backpressureTimeout().toNanos();
        log.lock.lock();
        try {
            RuntimeException refusal = refusal();
            if (refusal != null) {
                return refusal;
            }
            if (log.appendsUntilFailure-- <= 0) {
                log.appendsUntilFailure = Long.MAX_VALUE;
                fenceCause = new StorageIOException(description() + " failed a write: injected EIO (errno 5); "
                        + "the WAL is fenced", null);
                return fenceCause;
            }
            while (log.writePosition + need - log.trimPosition > log.capacityBytes) {
                long waitNanos = deadline - System.nanoTime();
                if (waitNanos <= 0) {
                    return new OverCapacityException(description() + " is full ("
                            + (log.writePosition - log.trimPosition) + " of " + log.capacityBytes
                            + " bytes in use) and no trim freed space within "
                            + Duration.ofNanos(context.backpressureTimeout().toNanos()));
                }
                log.spaceFreed.awaitNanos(waitNanos);
                refusal = refusal();
                if (refusal != null) {
                    return refusal;
                }
            }
            // The engine never modifies a record after appending it, so the log shares the caller's bytes (one more
            // reference, released on trim) instead of copying them.
            Record r = new Record(log.writePosition, buffer.retain(), index, size, callback);
            log.records.add(r);
            log.writePosition += need;
            synchronized (pending) {
                pending.add(r);
                pending.notifyAll();
            }
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new OverCapacityException("interrupted waiting for WAL space");
        } finally {
            log.lock.unlock();
        }
    }

    private RuntimeException refusal() {
        if (!recovered) {
            return new IllegalStateException("append before recover() on " + description());
        }
        if (context.takeover()) {
            return new IllegalStateException(description() + " was opened to take it over: it recovers and trims, "
                    + "it does not append");
        }
        if (closed) {
            return new StreamClosedException(description() + " is closed");
        }
        if (fenceCause != null) {
            return fenceCause;
        }
        if (log.ownerEpoch != ownerEpoch) {
            return new NodeFencedException(description() + " was taken over by node epoch " + log.ownerEpoch
                    + "; this handle (epoch " + ownerEpoch + ") is fenced");
        }
        return null;
    }

    private void commitLoop() {
        ArrayDeque<Record> batch = new ArrayDeque<>();
        while (true) {
            synchronized (pending) {
                while (pending.isEmpty() && !closed) {
                    try {
                        pending.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                if (pending.isEmpty()) {
                    pending.notifyAll();
                    return;
                }
                Record r;
                while ((r = pending.poll()) != null) {
                    batch.add(r);
                }
            }
            Record r;
            while ((r = batch.poll()) != null) {
                try {
                    r.callback.onDurable(r.position, r.nextPosition());
                } catch (Throwable t) {
                    // As a device WAL's completion thread: a throwing callback must not stop later acknowledgements.
                    System.getLogger(InMemoryWal.class.getName()).log(System.Logger.Level.ERROR,
                            "an append callback threw", t);
                }
            }
        }
    }

    @Override
    public CompletableFuture<Void> trim(long walPosition) {
        log.lock.lock();
        try {
            if (walPosition > log.trimPosition) {
                long limit = Math.min(walPosition, log.writePosition);
                while (!log.records.isEmpty() && log.records.peekFirst().position < limit) {
                    log.records.pollFirst().release();
                }
                log.trimPosition = log.records.isEmpty() ? log.writePosition : log.records.peekFirst().position;
                log.spaceFreed.signalAll();
            }
            return CompletableFuture.completedFuture(null);
        } finally {
            log.lock.unlock();
        }
    }

    @Override
    public long capacityBytes() {
        return log.capacityBytes;
    }

    @Override
    public int maxRecordBytes() {
        return (int) Math.min(Integer.MAX_VALUE - 64, log.capacityBytes - RECORD_OVERHEAD_BYTES);
    }

    @Override
    public String description() {
        return "mem://" + name + " (node " + context.nodeId() + ")";
    }

    @Override
    public void close() {
        log.lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            log.spaceFreed.signalAll();
        } finally {
            log.lock.unlock();
        }
        synchronized (pending) {
            pending.notifyAll();
        }
        if (committer.isAlive()) {
            try {
                committer.join(TimeUnit.SECONDS.toMillis(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * One record and whom to tell once it is durable: its bytes are the {@code length} readable bytes of the appender's
     * buffer (whose indexes the engine never moves), on which it holds a reference until trimmed.
     */
    private static final class Record {
        final long position;
        /** The record is {@code length} bytes of {@link #data} from {@code index}. */
        final int index;
        final int length;
        final AppendCallback callback;
        /** The appender's buffer; null once trimmed (under the log's lock). */
        ByteBuf data;

        Record(long position, ByteBuf data, int index, int length, AppendCallback callback) {
            this.position = position;
            this.data = data;
            this.index = index;
            this.length = length;
            this.callback = callback;
        }

        /** Trims the record: lets go of its buffer. Caller holds the log's lock. */
        void release() {
            data.release();
            data = null;
        }

        long nextPosition() {
            return position + RECORD_OVERHEAD_BYTES + length;
        }
    }

    /** The named, shared state: what a device would hold. */
    private static final class Log {
        final long capacityBytes;
        final ReentrantLock lock = new ReentrantLock();
        final Condition spaceFreed = lock.newCondition();
        final ArrayDeque<Record> records = new ArrayDeque<>();
        long writePosition;
        long trimPosition;
        long ownerNodeId = -1;
        long ownerEpoch = -1;
        long appendsUntilFailure = Long.MAX_VALUE;

        Log(long capacityBytes) {
            this.capacityBytes = capacityBytes;
        }
    }
}
