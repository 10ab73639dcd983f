package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.s3stream.OverCapacityException;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Memory holding recently appended batches: all of them until they are uploaded, and uploaded ones for as long as the
 * budget allows, so tail reads never touch the object store.
 *
 * <h2>Structure</h2>
 * Batches enter the <em>active block</em>. The uploader {@linkplain #sealActive() seals} it (a new active block starts)
 * and, once the block's objects are committed, {@linkplain #markUploaded marks it uploaded}. Only uploaded blocks can
 * be evicted, oldest first; a sealed block is the unit of one upload and of one WAL trim. A per-stream index over the
 * blocks answers reads with binary searches.
 *
 * <h2>Memory</h2>
 * Every byte is reserved before the append is sent to the WAL ({@link #reserve}); when the budget is used up, uploaded
 * blocks are evicted, and when none are left the caller waits for an upload to finish, up to a deadline, then gets an
 * {@link OverCapacityException}. The cache therefore never exceeds its budget and never drops data that is not in an
 * object yet.
 *
 * <h2>Segment boundaries</h2>
 * A block covers WAL positions {@code [walStartPosition, walNextPosition)}. For a WAL whose records are already objects
 * (wal-object, {@link io.s3stream.spi.WriteAheadLog#segments}) the uploader commits those objects instead of writing
 * the records again, which works best when a block starts and ends where WAL segments do. So a block is sealed only
 * right after a batch that ends a segment: {@link #sealActive} seals at once when the active block ends on a boundary,
 * and otherwise arms a pending seal that the next insert ending on a boundary performs ({@link #insert} then returns
 * true and the block waits in {@link #pollSealed}). For a WAL without segments every position is a boundary.
 *
 * <h2>Concurrency</h2>
 * One lock guards everything. Critical sections are short (an insert, a binary search plus reference-count increments);
 * readers retain the buffers they return under the lock, so eviction can never free memory a reader holds.
 */
final class LogCache {
    private final long capacityBytes;
    /** Called (outside the lock) when an append has to wait for space: the uploader should upload now. */
    private volatile Runnable pressureListener = () -> { };
    /** The uploader's last failure while uploads fail, for the back-pressure message; null when uploads succeed. */
    private volatile String uploadProblem;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition spaceFreed = lock.newCondition();
    private final ArrayDeque<Block> blocks = new ArrayDeque<>();
    private final Map<Long, ArrayDeque<Run>> runsByStream = new HashMap<>();
    /** Blocks sealed by an insert that completed a pending seal, waiting for the uploader. */
    private final ArrayDeque<Block> sealedReady = new ArrayDeque<>();
    private long usedBytes;
    private long nextBlockId;
    private Block active;
    /** The WAL position after the last inserted batch: where the next block starts. */
    private long walPosition = -1;
    /** Whether the active block ends on a segment boundary (true while it is empty). */
    private boolean activeAtBoundary = true;
    /** A seal was asked for while the active block ended inside a segment. */
    private boolean sealPending;

    /** Records why uploads fail (null once one succeeds), so that refused appends say it. */
    void noteUploadProblem(String problem) {
        uploadProblem = problem;
    }

    /** @param capacityBytes the budget */
    LogCache(long capacityBytes) {
        this.capacityBytes = capacityBytes;
        this.active = new Block(nextBlockId++, System.nanoTime());
        blocks.add(active);
    }

    /** Sets who is told when an append has to wait for space (the uploader); set once, before the first append. */
    void pressureListener(Runnable listener) {
        this.pressureListener = listener;
    }

    /** Reserves {@code bytes}, evicting uploaded blocks or waiting for uploads up to {@code timeoutNanos}. */
    void reserve(int bytes, long timeoutNanos) {
        long deadline = System.nanoTime() + timeoutNanos;
        boolean signalled = false;
        lock.lock();
        try {
            while (usedBytes + bytes > capacityBytes) {
                if (evictOldestUploaded()) {
                    continue;
                }
                if (!signalled) {
                    signalled = true;
                    lock.unlock();
                    try {
                        pressureListener.run();
                    } finally {
                        lock.lock();
                    }
                    continue;
                }
                long wait = deadline - System.nanoTime();
                if (wait <= 0) {
                    throw new OverCapacityException("log cache full: " + usedBytes + " of " + capacityBytes
                            + " bytes (StorageConfig.logCacheBytes) are held by " + pendingBlocks()
                            + " block(s) waiting for upload, and none was uploaded within "
                            + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms; the object store is not keeping up"
                            + (uploadProblem == null ? "" : "; uploads are failing: " + uploadProblem));
                }
                try {
                    spaceFreed.awaitNanos(wait);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new OverCapacityException("interrupted while waiting for log cache space");
                }
            }
            usedBytes += bytes;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Reserves {@code bytes} if they fit now, evicting uploaded blocks as {@link #reserve} does; false, with nothing
     * reserved, when they would have to wait for an upload (the caller then waits in {@link #reserve}, which also
     * tells the uploader).
     */
    boolean tryReserve(int bytes) {
        lock.lock();
        try {
            while (usedBytes + bytes > capacityBytes) {
                if (!evictOldestUploaded()) {
                    return false;
                }
            }
            usedBytes += bytes;
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Gives back a reservation that will not be inserted (the append failed). */
    void unreserve(int bytes) {
        lock.lock();
        try {
            usedBytes -= bytes;
            spaceFreed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** What {@link #insert} returns when it completed a pending seal. */
    static final long SEALED = -1;

    /**
     * Inserts a durable batch into the active block; its bytes were reserved. Takes the batch's record reference.
     * {@code endsSegment} says whether the batch's {@code walNextPosition} is a segment boundary. Returns the active
     * block's size afterwards, or {@link #SEALED} when the insert completed a pending seal: the sealed block waits in
     * {@link #pollSealed}.
     */
    long insert(CachedBatch batch, boolean endsSegment) {
        lock.lock();
        try {
            Run run = active.lastRun; // consecutive batches of one stream: no map lookup (nor a boxed key)
            if (run == null || run.streamId != batch.streamId) {
                List<Run> streamRuns = active.runs.get(batch.streamId);
                run = streamRuns == null ? null : streamRuns.getLast();
            }
            if (run == null || run.epoch != batch.epoch || run.endOffset != batch.baseOffset) {
                ArrayDeque<Run> earlier = runsByStream.computeIfAbsent(batch.streamId, k -> new ArrayDeque<>());
                // Sized like the stream's previous run: blocks are sealed at similar sizes, so the list of a busy
                // stream does not grow (and copy) its way to thousands of entries in every block.
                int capacity = earlier.isEmpty() ? 16 : Math.clamp(earlier.peekLast().batches.size(), 16, 1 << 16);
                run = new Run(active, batch.streamId, batch.epoch, batch.baseOffset, capacity);
                active.runs.computeIfAbsent(batch.streamId, k -> new ArrayList<>(1)).add(run);
                earlier.add(run);
            }
            active.lastRun = run;
            run.batches.add(batch);
            run.endOffset = batch.endOffset();
            run.bytes += batch.sizeBytes();
            active.sizeBytes += batch.sizeBytes();
            active.walNextPosition = Math.max(active.walNextPosition, batch.walNextPosition);
            walPosition = Math.max(walPosition, batch.walNextPosition);
            activeAtBoundary = endsSegment;
            if (sealPending && endsSegment) {
                sealPending = false;
                sealedReady.add(sealLocked());
                return SEALED;
            }
            return active.sizeBytes;
        } finally {
            lock.unlock();
        }
    }

    /** Sets where the next block starts in the WAL (after recovery: the position of the first new append). */
    void startAt(long walPosition) {
        lock.lock();
        try {
            this.walPosition = walPosition;
            if (active.sizeBytes == 0) {
                active.walStartPosition = walPosition;
            }
        } finally {
            lock.unlock();
        }
    }

    /** Size of the active block in bytes. */
    long activeBytes() {
        lock.lock();
        try {
            return active.sizeBytes;
        } finally {
            lock.unlock();
        }
    }

    /** Nanos since the active block received its first batch, or 0 when empty. */
    long activeAgeNanos(long now) {
        lock.lock();
        try {
            return active.sizeBytes == 0 ? 0 : now - active.createdNanos;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Seals the active block and starts a new one. Returns null when the active block is empty, or when it ends inside
     * a WAL segment: then the seal happens at the next insert that ends a segment (see the class comment), unless
     * {@code anywhere} forces it (the records of that segment then get uploaded by the engine, not committed as the
     * segment's object).
     */
    Block sealActive(boolean anywhere) {
        lock.lock();
        try {
            if (active.sizeBytes == 0) {
                active.createdNanos = System.nanoTime();
                return null;
            }
            if (!activeAtBoundary && !anywhere) {
                sealPending = true;
                return null;
            }
            sealPending = false;
            return sealLocked();
        } finally {
            lock.unlock();
        }
    }

    /** Seals the active block at a segment boundary, or returns null and arms a pending seal (see above). */
    Block sealActive() {
        return sealActive(false);
    }

    /**
     * A sealed block holding no batch that covers {@code [position after the last insert, nextPosition)}, for committing
     * WAL segments in that range that hold no record the engine keeps; null when the range is empty or unknown. The
     * block is not part of the cache.
     */
    Block emptyBlockUpTo(long nextPosition) {
        lock.lock();
        try {
            if (walPosition < 0 || nextPosition <= walPosition) {
                return null;
            }
            Block block = new Block(nextBlockId++, System.nanoTime());
            block.walStartPosition = walPosition;
            block.walNextPosition = nextPosition;
            block.sealed = true;
            return block;
        } finally {
            lock.unlock();
        }
    }

    /** The oldest block sealed by an insert that completed a pending seal, or null. */
    Block pollSealed() {
        lock.lock();
        try {
            return sealedReady.poll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Performs an armed seal now, inside a segment (the segment will not complete: an append of it failed); the block
     * waits in {@link #pollSealed}. Returns whether a seal was armed.
     */
    boolean sealPendingNow() {
        lock.lock();
        try {
            if (!sealPending) {
                return false;
            }
            sealPending = false;
            if (active.sizeBytes > 0) {
                sealedReady.add(sealLocked());
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Whether a seal is armed and waits for a segment boundary. */
    boolean sealPending() {
        lock.lock();
        try {
            return sealPending;
        } finally {
            lock.unlock();
        }
    }

    private Block sealLocked() {
        Block sealed = active;
        sealed.sealed = true;
        active = new Block(nextBlockId++, System.nanoTime());
        active.walStartPosition = walPosition;
        activeAtBoundary = true;
        blocks.add(active);
        return sealed;
    }

    /** Marks a sealed block's data as committed to objects: it may now be evicted. */
    void markUploaded(Block block) {
        lock.lock();
        try {
            block.uploaded = true;
            spaceFreed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Batches of {@code streamId} from the one containing {@code startOffset} on, below {@code endOffset}, up to about
     * {@code maxBytes} (at least one). Returns null when the cache does not hold {@code startOffset}. Every returned
     * payload is retained for the caller.
     */
    List<CachedRead> read(long streamId, long startOffset, long endOffset, int maxBytes) {
        lock.lock();
        try {
            ArrayDeque<Run> runs = runsByStream.get(streamId);
            if (runs == null || runs.isEmpty()) {
                return null;
            }
            List<CachedRead> out = null;
            long bytes = 0;
            long next = startOffset;
            for (Run run : runs) {
                if (run.endOffset <= next) {
                    continue;
                }
                if (run.startOffset > next) {
                    break; // a gap: the cache does not hold `next`
                }
                int i = run.indexOf(next);
                for (; i < run.batches.size(); i++) {
                    CachedBatch b = run.batches.get(i);
                    if (b.baseOffset >= endOffset || (out != null && bytes >= maxBytes)) {
                        return out;
                    }
                    if (out == null) {
                        out = new ArrayList<>();
                    }
                    out.add(new CachedRead(b.baseOffset, b.count, b.retainedPayload()));
                    bytes += b.payloadBytes();
                    next = b.endOffset();
                }
            }
            return out;
        } finally {
            lock.unlock();
        }
    }

    long usedBytes() {
        lock.lock();
        try {
            return usedBytes;
        } finally {
            lock.unlock();
        }
    }

    long capacityBytes() {
        return capacityBytes;
    }

    /** Releases every buffer (engine shutdown). */
    void releaseAll() {
        lock.lock();
        try {
            for (Block block : blocks) {
                for (List<Run> runs : block.runs.values()) {
                    for (Run run : runs) {
                        release(run);
                    }
                }
                block.runs.clear();
            }
            blocks.clear();
            runsByStream.clear();
            usedBytes = 0;
            sealedReady.clear();
            sealPending = false;
            activeAtBoundary = true;
            active = new Block(nextBlockId++, System.nanoTime());
            active.walStartPosition = walPosition;
            blocks.add(active);
            spaceFreed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private int pendingBlocks() {
        int n = 0;
        for (Block b : blocks) {
            if (!b.uploaded && b.sizeBytes > 0) {
                n++;
            }
        }
        return n;
    }

    private boolean evictOldestUploaded() {
        Block oldest = blocks.peekFirst();
        if (oldest == null || !oldest.uploaded) {
            return false;
        }
        blocks.pollFirst();
        for (Map.Entry<Long, List<Run>> e : oldest.runs.entrySet()) {
            ArrayDeque<Run> streamRuns = runsByStream.get(e.getKey());
            for (Run run : e.getValue()) {
                if (streamRuns != null) {
                    streamRuns.remove(run); // the oldest block's runs are at the head: O(1) in practice
                }
                release(run);
            }
            if (streamRuns != null && streamRuns.isEmpty()) {
                runsByStream.remove(e.getKey());
            }
        }
        oldest.runs.clear();
        oldest.lastRun = null;
        spaceFreed.signalAll();
        return true;
    }

    private void release(Run run) {
        for (CachedBatch b : run.batches) {
            usedBytes -= b.sizeBytes();
            b.releaseRecord();
        }
        run.batches.clear();
    }

    /** A payload handed to a reader; the reader releases {@code payload}. */
    record CachedRead(long baseOffset, int count, ByteBuf payload) {
    }

    /** A contiguous run of one stream's batches inside one block. */
    static final class Run {
        final Block block;
        final long streamId;
        final long epoch;
        final long startOffset;
        long endOffset;
        long bytes;
        final ArrayList<CachedBatch> batches;

        Run(Block block, long streamId, long epoch, long startOffset, int capacity) {
            this.batches = new ArrayList<>(capacity);
            this.block = block;
            this.streamId = streamId;
            this.epoch = epoch;
            this.startOffset = startOffset;
            this.endOffset = startOffset;
        }

        /** Index of the batch containing {@code offset} (which lies in this run). */
        int indexOf(long offset) {
            int lo = 0;
            int hi = batches.size() - 1;
            while (lo < hi) {
                int mid = (lo + hi + 1) >>> 1;
                if (batches.get(mid).baseOffset <= offset) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            return lo;
        }
    }

    /** A unit of upload: the batches appended between two seals. */
    static final class Block {
        final long id;
        long createdNanos;
        /** Runs per stream, streams in id order; normally one run per stream. */
        final TreeMap<Long, List<Run>> runs = new TreeMap<>();
        /** The run the last batch went into (active block only). */
        Run lastRun;
        long sizeBytes;
        /** WAL position where the block starts (the end of the previous block), or -1 when unknown. */
        long walStartPosition = -1;
        long walNextPosition = -1;
        boolean sealed;
        boolean uploaded;

        Block(long id, long createdNanos) {
            this.id = id;
            this.createdNanos = createdNanos;
        }

        /** The runs of every stream in (stream id, offset) order; valid once the block is sealed. */
        List<Run> runsInOrder() {
            List<Run> out = new ArrayList<>();
            for (List<Run> r : runs.values()) {
                out.addAll(r);
            }
            return Collections.unmodifiableList(out);
        }
    }
}
