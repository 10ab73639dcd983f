package io.s3stream.wal.blockdev.internal;

import io.netty.buffer.ByteBuf;
import io.s3stream.InvalidConfigException;
import io.s3stream.NodeFencedException;
import io.s3stream.OverCapacityException;
import io.s3stream.StorageIOException;
import io.s3stream.StreamClosedException;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.wal.blockdev.internal.ConductorCommands.AppendRequest;
import io.s3stream.wal.blockdev.internal.ConductorCommands.CloseCommand;
import io.s3stream.wal.blockdev.internal.ConductorCommands.Group;
import io.s3stream.wal.blockdev.internal.ConductorCommands.TrimRequest;

import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

import static io.s3stream.wal.blockdev.internal.WalDescriptor.BLOCK_BYTES;

/**
 * A write-ahead log in a ring on a block device or a pre-written file, written with direct, synchronous IO in
 * 4 KiB-aligned group commits.
 *
 * <h2>Layout</h2>
 * Two alternating 4 KiB header slots, then the ring of records, each group commit 4 KiB-aligned (the diagram and the
 * record format are in {@link WalDescriptor}).
 * Records are addressed by a logical position that only grows; position {@code p} lives at
 * {@code 8192 + p mod ringBytes}. Each group commit starts on a block boundary and ends with a padding record that
 * fills its last block, so a write never touches a block holding records of an earlier write (a torn rewrite of
 * such a block could destroy acknowledged data). The price is up to one block of padding per group at low load.
 * A record may wrap the ring end; its write is then split in two {@code pwrite}s.
 *
 * <h2>Concurrency</h2>
 * One platform thread, the conductor, does the WAL's work and owns its mutable state (the write position, the appends
 * waiting for a write, the groups in flight, the live ranges, the header), under the {@code turn} lock it shares with
 * appenders. Appenders and {@link #trim} enqueue commands into a lock-free queue and unpark it. The conductor builds a
 * group from as many queued appends as fit in one write ({@code writeBytes}, 1 MiB by default), copies their bytes
 * into an aligned buffer, and submits it. With {@code inflight=1} it writes inline; with more, up to that many writes
 * run at once on a small pool of IO threads, each durable on its own, once appends arrive while a write runs. A lone
 * group under light load is written inline: the hand-off to an IO thread and back would cost two wake-ups for no
 * overlap. On a quiet WAL (no write in the last millisecond, nothing waiting or in flight) the appending thread takes
 * the turn and writes its own group, sparing the conductor's wake-up too (measured: producer p99/p99.9 at 10,000
 * rec/s 9/13 → 7/11 ms, benchmarks/README.md); {@code append} then returns after the write. {@link #appendAndAwait},
 * whose caller waits anyway, writes so whenever nothing is waiting or in flight. Appends are acknowledged
 * strictly in position order, one callback at a time, under the turn: a group only after it and every group before it
 * are durable. Callbacks (and the futures of {@link #append(ByteBuf)}) run on the conductor, on the appending thread
 * or on the IO thread whose write returned while the conductor was parked (it then does the conductor's pass), and
 * must not block; one that throws is logged and does not stop the conductor.
 *
 * <h2>Durability</h2>
 * The target is opened with {@code O_DIRECT|O_DSYNC}: every {@code pwrite} returns only when its data is on stable
 * storage (FUA, or a cache flush the kernel issues), with no page cache and no block allocation on the path (the file
 * was pre-written at creation; a file system still writes the file's inode, whose mtime changed, with each write, as
 * it does for fio's). An append completes after its group's write returned. The header is rewritten
 * only by {@link #recover} (taking ownership) and by trims, coalesced: a trim is what frees space, trims arrive a few
 * times per upload rather than per append, and a header write costs one synchronous 4 KiB write on the conductor.
 * Space below a trim point is reused only after the header recording it is durable, so recovery's scan start is
 * never overwritten. Headers alternate between two slots with a growing sequence: a torn header write leaves the
 * other slot, which describes a state whose space has not been reused yet.
 *
 * <h2>Failure</h2>
 * A failed write or header write fences the WAL: the failing append, everything queued or in flight behind it, and
 * every later append fail with {@link StorageIOException} naming the device, the offset and the errno; nothing is
 * retried. A full ring makes appends wait (in order) for a trim, up to the back-pressure timeout, then fail with
 * {@link OverCapacityException}. Another node's WAL is refused ({@link InvalidConfigException}), one of a higher node
 * epoch too ({@link NodeFencedException}); a live older owner finds a takeover when it re-reads the header slots
 * (before every header write, each second while appending) and fails its later appends with the same exception.
 *
 * <h2>What lives elsewhere</h2>
 * This class is the conductor's loop and the transitions of the state it owns. What runs before the conductor or
 * only answers its questions is separate: the layout of a group's write ({@link GroupAssembler}), the free ring and
 * the header that records it ({@link RingSpace}), the format ({@link WalDescriptor}, {@link HeaderSlots}), recovery
 * ({@link RingRecovery}, which explains why no stale or torn record is ever read past the write point;
 * {@link RingScanner}), {@link LiveRanges}, {@link OwnershipWatch}, the configuration and IO.
 */
public final class BlockDeviceWal implements WriteAheadLog {
    private static final long IDLE_RESET_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private static final int NEW = 0;
    private static final int RUNNING = 1;
    private static final int CLOSING = 2;
    private static final int CLOSED = 3;

    private final BlockIo io;
    private final String description;
    private final WalContext context;
    private final long capacityBytes;
    private final long ringBytes;
    private final int maxRecordBytes;
    private final int inflightLimit;
    private final GroupAssembler assembler;
    private final Arena arena = Arena.ofShared();
    private final ConcurrentLinkedQueue<Object> inbox = new ConcurrentLinkedQueue<>();
    private final Thread conductor;
    private final ExecutorService ioPool;
    private long nextGroupSeq;               // conductor-owned
    private int writesInProgress;            // conductor-owned: submitted group writes that have not returned
    private final Object lifecycle = new Object();
    private volatile int state = NEW;
    private volatile boolean halted;
    private volatile boolean terminated;
    private volatile RuntimeException fence;
    private final OwnershipWatch ownership;
    private final long writeTimeoutNanos;
    private volatile boolean writesStuck;

    // ---- conductor-owned state (set by recover() before the conductor starts) ----
    private final ArrayDeque<AppendRequest> waiting = new ArrayDeque<>();
    private final ArrayDeque<Group> inflight = new ArrayDeque<>();
    private final LiveRanges live;
    private long writePosition;
    private long ackedEnd;
    private boolean closeRequested;
    /** Appends arrived while a write ran: groups go to the IO pool until the conductor idles (see submitGroups). */
    private boolean concurrentAppends;
    private final HeaderSlots headerSlots;
    private final RingSpace space;
    /** Guards the state above: held by the conductor but while it is parked, or by an appender writing its group. */
    private final ReentrantLock turn = new ReentrantLock();
    private volatile long lastWriteNanos = System.nanoTime() - IDLE_RESET_NANOS; // the last group write's return

    private BlockDeviceWal(BlockIo io, long capacityBytes, BlockDeviceWalConfig config, WalContext context,
                           OwnershipCheck ownership, Duration writeTimeout) {
        this.io = io;
        this.writeTimeoutNanos = writeTimeout == null ? 0 : writeTimeout.toNanos();
        this.context = context;
        this.capacityBytes = capacityBytes;
        this.ringBytes = capacityBytes - WalDescriptor.RING_OFFSET;
        this.maxRecordBytes = WalDescriptor.maxRecordBytes(capacityBytes);
        this.inflightLimit = config.inflight();
        this.assembler = new GroupAssembler(arena, config.writeBytes());
        this.live = new LiveRanges(ringBytes);
        this.description = config.uri() + " (" + (io.isBlockDevice() ? "block device " : "file ") + io.path() + ", "
                + capacityBytes + " bytes)";
        this.conductor = Thread.ofPlatform().daemon().name("blockdev-wal-conductor").unstarted(this::conduct);
        // A write timeout needs the writes off the conductor, which must stay free to notice it.
        this.ioPool = inflightLimit > 1 || writeTimeoutNanos > 0 ? Executors.newFixedThreadPool(inflightLimit,
                Thread.ofPlatform().daemon().name("blockdev-wal-io-", 0).factory()) : null;
        this.headerSlots = new HeaderSlots(io, arena.allocate(BLOCK_BYTES, BLOCK_BYTES), capacityBytes, description);
        this.ownership = new OwnershipWatch(description, ownership, headerSlots);
        this.space = new RingSpace(headerSlots, ringBytes);
    }

    /** Opens (creating a missing file) the WAL a {@code blockdev://} URI names. */
    public static BlockDeviceWal open(BlockDeviceWalConfig config, WalContext context) {
        WalTarget.Opened target = WalTarget.open(config);
        return open(target.io(), target.capacityBytes(), config, context);
    }

    /**
     * Opens a WAL on an already opened target (tests pass a fault-injecting {@link BlockIo} here). Formats the
     * target if neither header slot holds a header; refuses a target whose header is corrupt or of another version
     * or capacity. Takes ownership of {@code io} (closes it on failure).
     */
    public static BlockDeviceWal open(BlockIo io, long capacityBytes, BlockDeviceWalConfig config, WalContext context) {
        return open(io, capacityBytes, config, context, null, null);
    }

    /**
     * Opens a WAL whose ownership is also decided outside its header (a WAL on a shared file system, where another
     * node may take it over while this process still runs). {@code ownership} is asked after writes became durable
     * and before their appends are acknowledged, after every header write before freed space is reused, and at least
     * once a second; once it reports the WAL lost, the WAL is fenced with {@link NodeFencedException}. A group write
     * that has not returned after {@code writeTimeout} (a file server that stopped answering) fences the WAL with
     * {@link StorageIOException}: its appends and every later one fail instead of waiting forever.
     */
    public static BlockDeviceWal open(BlockIo io, long capacityBytes, BlockDeviceWalConfig config, WalContext context,
                                      OwnershipCheck ownership, Duration writeTimeout) {
        try {
            BlockDeviceWal wal = new BlockDeviceWal(io, capacityBytes, config, context, ownership, writeTimeout);
            wal.space.load();
            return wal;
        } catch (RuntimeException e) {
            io.close();
            throw e;
        }
    }

    // ------------------------------------------------------------------------------------------------ recovery

    @Override
    public RecoveryResult recover(RecordHandler handler) {
        synchronized (lifecycle) {
            if (state != NEW) {
                throw new IllegalStateException("recover() was already called on " + description);
            }
            WalDescriptor.Header h = space.header();
            OwnershipWatch.checkMayRecover(h, context, description);
            WalDescriptor.Header owned = h.next(h.trimPosition(), h.scanStart(), context.nodeId(), context.nodeEpoch(),
                    h.session() + 1);
            RingRecovery.Recovered r;
            try {
                r = RingRecovery.run(io, headerSlots, h, owned, ringBytes, maxRecordBytes, arena, live, handler);
            } catch (BlockIoException e) {
                throw new StorageIOException(description + " failed during recovery: " + e.getMessage(), e);
            }
            space.recovered(r.header(), h.scanStart());
            writePosition = r.writePosition();
            ackedEnd = r.endPosition();
            state = RUNNING;
            conductor.start();
            return new RecoveryResult(r.records(), r.payloadBytes(), writePosition, r.torn(), r.detail());
        }
    }

    // ------------------------------------------------------------------------------------------------ client API

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
    public void append(ByteBuf buffer, int index, int size, AppendCallback callback) {
        submit(buffer, index, size, callback, false);
    }

    /**
     * Writes the record's group on this thread whenever nothing else waits or is being written, however recently the
     * last write returned: a caller that waits for each append loses no group commit by writing it, and spares two
     * wake-ups (the conductor's and its own). Refused from an append callback, which would wait for its own thread.
     */
    @Override
    public WalAppendResult appendAndAwait(ByteBuf record) {
        if (turn.isHeldByCurrentThread()) {
            throw new IllegalStateException("appendAndAwait from an append callback of " + description
                    + " would wait for the thread that acknowledges it");
        }
        CompletableFuture<WalAppendResult> future = new CompletableFuture<>();
        submit(record, record.readerIndex(), record.readableBytes(), AppendCallback.completing(future), true);
        return WriteAheadLog.await(future);
    }

    private void submit(ByteBuf buffer, int index, int size, AppendCallback callback, boolean callerWaits) {
        if (size > maxRecordBytes) {
            callback.onFailure(new IllegalArgumentException("record of " + size
                    + " bytes exceeds the largest record (" + maxRecordBytes + " bytes) of " + description));
            return;
        }
        RuntimeException refusal = refusal();
        if (refusal != null) {
            callback.onFailure(refusal);
            return;
        }
        AppendRequest request = new AppendRequest(buffer, index, size,
                System.nanoTime() + context.backpressureTimeout().toNanos(), callback);
        inbox.offer(request);
        if (!writeOnCaller(callerWaits)) {
            LockSupport.unpark(conductor);
        }
        if (terminated) {
            drainAfterTermination();
        }
    }

    /**
     * Writes one group from the inbox on this thread, as the conductor would a lone group inline, when the WAL is idle
     * (nothing waiting or in flight, the conductor parked, appends not concurrent a moment ago) and either quiet (no
     * write in the last {@link #IDLE_RESET_NANOS}) or the caller waits for its append anyway: no wake-up before the
     * write, and the append returns after it. Appends closer together from callers that do not wait (several
     * appenders, or one with many in flight), write timeouts, external ownership checks and appends from callbacks
     * keep the conductor. True if nothing is left for it.
     */
    private boolean writeOnCaller(boolean callerWaits) {
        if (writeTimeoutNanos != 0 || ownership.hasExternalCheck() || turn.isHeldByCurrentThread()
                || (!callerWaits && System.nanoTime() - lastWriteNanos < IDLE_RESET_NANOS) || !turn.tryLock()) {
            return false;
        }
        try {
            forgetConcurrencyIfQuiet();
            if (state != RUNNING || fence != null || closeRequested || concurrentAppends || !inflight.isEmpty()
                    || !waiting.isEmpty() || space.hasPendingTrims()) {
                return false;
            }
            drainInbox();
            submitGroups(1); // its own group; appends that arrived during the write are the conductor's
            return inbox.isEmpty() && waiting.isEmpty() && inflight.isEmpty() && !space.hasPendingTrims()
                    && !closeRequested;
        } finally {
            turn.unlock();
        }
    }

    private RuntimeException refusal() {
        int s = state;
        if (s == NEW) {
            return new IllegalStateException("append before recover() on " + description);
        }
        if (s >= CLOSING) {
            return new StreamClosedException(description + " is closed");
        }
        return fence;
    }

    @Override
    public CompletableFuture<Void> trim(long walPosition) {
        if (state == NEW) {
            return CompletableFuture.failedFuture(new IllegalStateException("trim before recover() on "
                    + description));
        }
        TrimRequest request = new TrimRequest(walPosition, new CompletableFuture<>());
        inbox.offer(request);
        LockSupport.unpark(conductor);
        if (terminated) {
            drainAfterTermination();
        }
        return request.future();
    }

    @Override
    public long capacityBytes() {
        return capacityBytes;
    }

    @Override
    public int maxRecordBytes() {
        return maxRecordBytes;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public void close() {
        synchronized (lifecycle) {
            if (state == CLOSED || state == CLOSING) {
                return;
            }
            boolean started = state == RUNNING;
            state = CLOSING;
            if (started) {
                inbox.offer(CloseCommand.INSTANCE);
                LockSupport.unpark(conductor);
                joinConductor();
            }
            release();
            state = CLOSED;
        }
    }

    /**
     * Test hook: abandons the WAL as a crash would. Writes already submitted finish (the device would complete them
     * too), nothing else is written, and pending futures fail. The target is closed.
     */
    public void halt() {
        synchronized (lifecycle) {
            if (state == CLOSED) {
                return;
            }
            halted = true;
            boolean started = state == RUNNING;
            state = CLOSING;
            if (started) {
                LockSupport.unpark(conductor);
                joinConductor();
            }
            release();
            state = CLOSED;
        }
    }

    private void joinConductor() {
        try {
            conductor.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void release() {
        ownership.shutdown();
        boolean ioThreadsDone = true;
        if (ioPool != null) {
            ioPool.shutdown();
            try {
                ioThreadsDone = ioPool.awaitTermination(writesStuck ? 1 : 60, TimeUnit.SECONDS);
                if (!ioThreadsDone && !writesStuck) {
                    throw new IllegalStateException("IO threads of " + description + " did not finish");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                ioThreadsDone = false;
            }
        }
        io.close();
        terminated = true;
        drainAfterTermination();
        if (ioThreadsDone) {
            arena.close();
        }
        // else: a write stuck in the kernel still holds a buffer of the arena; it is left to the garbage collector
        // rather than freed under that write.
    }

    private void drainAfterTermination() {
        if (!inbox.isEmpty()) {
            failInbox(new StreamClosedException(description + " is closed"));
        }
    }

    /** Fails the appends and trims in the inbox (once the conductor will not take them any more). */
    private void failInbox(RuntimeException cause) {
        Object command;
        while ((command = inbox.poll()) != null) {
            if (command instanceof AppendRequest a) {
                a.fail(cause);
            } else if (command instanceof TrimRequest t) {
                t.future().completeExceptionally(cause);
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ conductor

    private void conduct() {
        turn.lock(); // let go only while parked
        try {
            while (!halted && !pass()) {
                if (inbox.isEmpty()) {
                    boolean idle = inflight.isEmpty() && waiting.isEmpty();
                    long parkNanos = parkNanos();
                    turn.unlock();
                    long parkedAt = System.nanoTime();
                    LockSupport.parkNanos(this, parkNanos);
                    turn.lock();
                    if (idle && System.nanoTime() - parkedAt > IDLE_RESET_NANOS) {
                        concurrentAppends = false;
                    }
                }
            }
        } catch (Throwable t) {
            fenceWith(new StorageIOException(description + " stopped on an unexpected error: " + t, t));
            throw t;
        } finally {
            if (halted) {
                StreamClosedException closed = new StreamClosedException(description + " was halted");
                awaitInflightQuietly();
                failAll(closed);
            }
            turn.unlock();
        }
    }

    /** One pass of the conductor's work, under {@link #turn}; true once a requested close has nothing left to do. */
    private boolean pass() {
        drainInbox();
        retireCompleted();
        if (fence != null) {
            failEverything(fence);
        } else {
            checkWriteTimeout();
            processTrims();
            checkFencingPeriodically();
            expireWaiting();
            submitGroups(Integer.MAX_VALUE);
        }
        if (closeRequested) {
            failWaitingOnClose();
            return waiting.isEmpty() && (inflight.isEmpty() || writesStuck) && inbox.isEmpty();
        }
        return false;
    }

    private long parkNanos() {
        if (!waiting.isEmpty() && inflight.isEmpty()) {
            return Math.max(1, Math.min(waiting.peekFirst().deadlineNanos - System.nanoTime(),
                    TimeUnit.MILLISECONDS.toNanos(100)));
        }
        return TimeUnit.MILLISECONDS.toNanos(100);
    }

    private void drainInbox() {
        Object command;
        while ((command = inbox.poll()) != null) {
            switch (command) {
                case AppendRequest a -> {
                    if (fence != null) {
                        a.fail(fence);
                    } else {
                        waiting.addLast(a);
                    }
                }
                case TrimRequest t -> space.requestTrim(t);
                case Group g -> {
                    g.completed = true;
                    writesInProgress--;
                }
                case CloseCommand ignored -> closeRequested = true;
                case OwnershipWatch.CheckResult r -> {
                    RuntimeException lost = ownership.onChecked(r, space.header());
                    if (lost != null && fence == null) {
                        fenceWith(lost);
                    }
                }
                default -> throw new IllegalStateException("unknown command " + command);
            }
        }
    }

    /** Acknowledges completed groups in position order; the first failed one fences the WAL. */
    private void retireCompleted() {
        Group g;
        while ((g = inflight.peekFirst()) != null && g.completed) {
            if (g.error == null && fence == null && !ownership.confirmed(g.seq)) {
                startOwnershipCheck();
                return; // acknowledged once a check that started after the write returned says we still own the log
            }
            inflight.pollFirst();
            if (g.error != null || fence != null) {
                if (fence == null) {
                    fence = writeFailure(g.error);
                }
                failGroup(g, fence);
                continue;
            }
            assembler.recycle(g);
            for (int i = 0; i < g.requests.size(); i++) {
                g.requests.get(i).succeed(g.positions[i], g.positions[i + 1]);
            }
            live.add(g.start, g.recordsEnd);
            ackedEnd = g.recordsEnd;
        }
    }

    private StorageIOException writeFailure(Throwable error) {
        String errno = error instanceof BlockIoException b ? " (" + Errno.describe(b.errno()) + ")" : "";
        return new StorageIOException(description + " failed a write" + errno + ": " + error.getMessage()
                + "; the WAL is fenced and accepts no more appends", error);
    }

    private void failGroup(Group g, RuntimeException cause) {
        for (AppendRequest r : g.requests) {
            r.fail(cause);
        }
    }

    private void failEverything(RuntimeException cause) {
        for (AppendRequest r : waiting) {
            r.fail(cause);
        }
        waiting.clear();
        space.failTrims(cause);
        // groups in flight are failed by retireCompleted() once their writes return
    }

    private void failAll(RuntimeException cause) {
        failEverything(cause);
        for (Group g : inflight) {
            failGroup(g, cause);
        }
        inflight.clear();
        failInbox(cause);
    }

    private void awaitInflightQuietly() {
        // Submitted writes hold buffers of the arena; they must return before it is closed.
        long deadline = System.nanoTime() + (writesStuck ? TimeUnit.SECONDS.toNanos(1) : TimeUnit.MINUTES.toNanos(1));
        while (inflight.stream().anyMatch(g -> !g.completed) && System.nanoTime() < deadline) {
            drainInbox();
            LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(1));
        }
    }

    private void failWaitingOnClose() {
        if (fence == null && !waiting.isEmpty() && inflight.isEmpty() && !canPlace(waiting.peekFirst())) {
            StreamClosedException closed = new StreamClosedException(description + " was closed while the append "
                    + "waited for space");
            for (AppendRequest r : waiting) {
                r.fail(closed);
            }
            waiting.clear();
        }
        if (fence == null) {
            space.completeTrims();
        }
    }

    private boolean canPlace(AppendRequest r) {
        return space.fits(writePosition, WalDescriptor.footprint(r.size));
    }

    private void expireWaiting() {
        AppendRequest head;
        long now = System.nanoTime();
        while ((head = waiting.peekFirst()) != null && !canPlace(head) && now - head.deadlineNanos >= 0) {
            waiting.pollFirst();
            head.fail(new OverCapacityException(description + " is full ("
                    + space.bytesInUse(writePosition) + " of " + ringBytes + " ring bytes in use, record of "
                    + head.size + " bytes) and no trim freed space within "
                    + Duration.ofNanos(context.backpressureTimeout().toNanos())));
        }
    }

    private void submitGroups(int maxGroups) {
        // The limit counts writes, not groups waiting for an ownership check: a check overlaps the next writes.
        for (int n = 0; n < maxGroups && !waiting.isEmpty() && writesInProgress < inflightLimit && fence == null; n++) {
            Group g = buildGroup();
            if (g == null) {
                return;
            }
            g.submittedNanos = System.nanoTime();
            g.seq = nextGroupSeq++;
            inflight.addLast(g);
            // A lone group under light load is written here: a hand-off to an IO thread and back costs two thread
            // wake-ups, each of which can wait milliseconds for a core on a busy machine. Once appends arrive while a
            // write runs, overlapping writes on the pool pay more than that, until the conductor idles again. Never
            // with a write timeout: the conductor must stay free to notice a write that does not return.
            boolean inline = ioPool == null;
            if (!inline) {
                forgetConcurrencyIfQuiet();
                concurrentAppends |= writesInProgress > 0 || !waiting.isEmpty();
                inline = !concurrentAppends && writeTimeoutNanos == 0;
            }
            writesInProgress++;
            if (inline) {
                write(g);
                g.completed = true;
                writesInProgress--;
                concurrentAppends |= inbox.peek() instanceof AppendRequest;
                drainInbox();
                retireCompleted();
            } else {
                ioPool.execute(() -> {
                    write(g);
                    writeReturned(g);
                });
            }
        }
    }

    /**
     * Goes back to inline writes once nothing has been in flight since the last write returned over
     * {@link #IDLE_RESET_NANOS} ago: the WAL idled, whichever thread acknowledged its last write (the conductor also
     * forgets when it wakes from an idle park). Under the turn.
     */
    private void forgetConcurrencyIfQuiet() {
        if (concurrentAppends && writesInProgress == 0 && inflight.isEmpty()
                && System.nanoTime() - lastWriteNanos > IDLE_RESET_NANOS) {
            concurrentAppends = false;
        }
    }

    /**
     * On the IO thread whose write of {@code g} returned. While the conductor is parked (it holds the turn otherwise)
     * this thread takes the turn and does the conductor's pass itself: the acknowledgements of every group now durable
     * in order, and the next groups; a hand-back would cost the conductor a wake-up per write, the largest share of
     * its context switches under a steady producer (benchmarks/README.md, "The IO thread acknowledges its own
     * write"). When the conductor is busy, or must keep the timing of writes (a write timeout) or the ownership
     * checks, the group goes back through the inbox.
     */
    private void writeReturned(Group g) {
        if (writeTimeoutNanos == 0 && !ownership.hasExternalCheck() && turn.tryLock()) {
            boolean wakeConductor;
            try {
                if (state == RUNNING && !halted) {
                    g.completed = true;
                    writesInProgress--;
                    boolean closeDone;
                    try {
                        closeDone = pass();
                    } catch (Throwable t) {
                        fenceWith(new StorageIOException(description + " stopped on an unexpected error: " + t, t));
                        closeDone = true;
                    }
                    wakeConductor = closeDone || !waiting.isEmpty() || !inbox.isEmpty();
                } else {
                    inbox.offer(g); // closing or halted: the conductor's own shutdown path takes it
                    wakeConductor = true;
                }
            } finally {
                turn.unlock();
            }
            if (wakeConductor) {
                LockSupport.unpark(conductor);
            }
            return;
        }
        inbox.offer(g);
        LockSupport.unpark(conductor);
    }

    private void write(Group g) {
        try {
            RingScanner.writeRing(io, ringBytes, g.start, g.buffer.asSlice(0, g.end - g.start));
        } catch (Throwable t) {
            g.error = t;
        }
        lastWriteNanos = System.nanoTime();
    }

    private Group buildGroup() {
        AppendRequest first = waiting.peekFirst();
        if (first == null || !canPlace(first)) {
            return null;
        }
        WalDescriptor.Header header = space.header();
        Group g = assembler.assemble(waiting, writePosition, header.walId(), header.session(), space::fits);
        writePosition = g.end;
        return g;
    }

    // ------------------------------------------------------------------------------------------------ trim & header

    /** Writes a header for the pending trims if they free anything; reuses the space once it is durable and ours. */
    private void processTrims() {
        long target = space.trimTarget(ackedEnd);
        if (target < 0) {
            return;
        }
        live.trimTo(target);
        long scanStart = !live.isEmpty() ? live.firstStart()
                : !inflight.isEmpty() ? inflight.peekFirst().start : writePosition;
        try {
            // With an external ownership check no one else writes this ring's header: re-reading its slots is moot,
            // and the check after the header write below is the one that matters.
            if (!ownership.hasExternalCheck() && !checkOwnership()) {
                return;
            }
            space.writeHeader(target, scanStart);
            // A new owner reads the header after fencing this one: if we are still the owner now, it will see this
            // header's scan start, so the space below it may be reused.
            if (!confirmOwnership()) {
                return;
            }
        } catch (BlockIoException e) {
            fenceWith(new StorageIOException(description + " failed a header write (" + Errno.describe(e.errno())
                    + "): " + e.getMessage() + "; the WAL is fenced and accepts no more appends", e));
            return;
        }
        space.free(scanStart);
    }

    /** Starts (off the conductor, which keeps submitting writes meanwhile) a check covering every completed group. */
    private void startOwnershipCheck() {
        long covers = -1;
        for (Group g : inflight) {
            if (!g.completed) {
                break;
            }
            covers = g.seq;
        }
        ownership.startCheck(covers, result -> {
            inbox.offer(result);
            LockSupport.unpark(conductor);
        });
    }

    private void fenceWith(RuntimeException cause) {
        fence = cause;
        failEverything(cause);
    }

    /** Fences the WAL when the oldest write in flight has not returned within the write timeout. */
    private void checkWriteTimeout() {
        Group oldest = inflight.peekFirst();
        if (writeTimeoutNanos <= 0 || oldest == null || System.nanoTime() - oldest.submittedNanos < writeTimeoutNanos) {
            return; // (a group whose write returned but whose ownership check hangs counts too)
        }
        writesStuck = true;
        fence = new StorageIOException(description + ": " + (oldest.completed ? "the ownership check after " : "")
                + "a write of " + (oldest.end - oldest.start) + " bytes at position " + oldest.start
                + " has not returned after " + Duration.ofNanos(writeTimeoutNanos).toMillis()
                + " ms (the file system stopped answering); the WAL is fenced and accepts no more appends", null);
        for (Group g : inflight) {
            failGroup(g, fence); // never acknowledged now, even if the write returns later
        }
        failEverything(fence);
    }

    private void checkFencingPeriodically() {
        if (!ownership.hasExternalCheck() && (!waiting.isEmpty() || !inflight.isEmpty())
                && ownership.headerCheckDue()) {
            try {
                checkOwnership();
            } catch (BlockIoException e) {
                fenceWith(new StorageIOException(description + " failed to read its header ("
                        + Errno.describe(e.errno()) + "): " + e.getMessage() + "; the WAL is fenced", e));
            }
        }
    }

    /** Asks the external ownership check (if any); fences this WAL and returns false when it reports the WAL lost. */
    private boolean confirmOwnership() {
        if (fence != null) {
            return false;
        }
        RuntimeException lost = ownership.askExternal(space.header());
        if (lost != null) {
            fenceWith(lost);
        }
        return lost == null;
    }

    /** Re-reads the header slots; fences this WAL and returns false when another owner has taken it over. */
    private boolean checkOwnership() {
        if (fence != null) {
            return false;
        }
        RuntimeException lost = ownership.rereadHeaders(space.header());
        if (lost != null) {
            fenceWith(lost);
        }
        return lost == null;
    }
}
