package io.s3stream.wal.blockdev.internal;

import io.s3stream.StorageIOException;
import io.s3stream.wal.blockdev.internal.ConductorCommands.TrimRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import static io.s3stream.wal.blockdev.internal.WalDescriptor.BLOCK_BYTES;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The free ring and its header on a real pre-written file: what may be written, and when trimmed space is free. */
class RingSpaceTest {
    private static final long CAPACITY = 2 * 1024 * 1024;
    private static final long RING = CAPACITY - WalDescriptor.RING_OFFSET;

    @TempDir
    Path dir;
    private Arena arena;
    private BlockIo io;
    private RingSpace space;

    @BeforeEach
    void openFreshTarget() {
        WalTarget.Opened target = WalTarget.open(TestWals.config(dir.resolve("wal.img"), CAPACITY, 1));
        io = target.io();
        arena = Arena.ofShared();
        space = new RingSpace(slots(), RING);
        space.load(); // formats the target
    }

    @AfterEach
    void close() {
        io.close();
        arena.close();
    }

    private HeaderSlots slots() {
        return new HeaderSlots(io, arena.allocate(BLOCK_BYTES, BLOCK_BYTES), CAPACITY, "test WAL");
    }

    private TrimRequest trim(long position) {
        TrimRequest t = new TrimRequest(position, new CompletableFuture<>());
        space.requestTrim(t);
        return t;
    }

    @Test
    void aFreshRingFitsWritesUpToItsSizeCountingThePaddingToAWholeBlock() {
        space.recovered(space.header(), 0);
        assertTrue(space.fits(0, RING));
        assertTrue(space.fits(RING - BLOCK_BYTES, 1), "the last block, padded");
        assertFalse(space.fits(RING - BLOCK_BYTES + 1, BLOCK_BYTES), "padding spills one block past the free ring");
        assertFalse(space.fits(RING, 1));
        assertEquals(RING, space.bytesInUse(RING));
    }

    @Test
    void trimmedSpaceIsFreeOnlyOnceItsHeaderIsWrittenAndTheTrimsCompleteThen() {
        space.recovered(space.header(), 0);
        TrimRequest first = trim(8 * BLOCK_BYTES);
        TrimRequest second = trim(16 * BLOCK_BYTES);

        long target = space.trimTarget(12 * BLOCK_BYTES);
        assertEquals(12 * BLOCK_BYTES, target, "capped at the acknowledged end");
        assertFalse(first.future().isDone());

        long scanStart = 10 * BLOCK_BYTES; // a record still live from block 10
        space.writeHeader(target, scanStart);
        assertFalse(space.fits(RING, BLOCK_BYTES), "not free before free()");
        assertFalse(first.future().isDone());

        space.free(scanStart);
        assertTrue(first.future().isDone() && second.future().isDone());
        assertFalse(space.hasPendingTrims());
        assertTrue(space.fits(RING, scanStart));
        assertFalse(space.fits(RING, scanStart + 1));

        WalDescriptor.Header onDevice = slots().load();
        assertEquals(target, onDevice.trimPosition());
        assertEquals(scanStart, onDevice.scanStart());
        assertEquals(space.header(), onDevice);
    }

    @Test
    void aTrimThatFreesNothingCompletesWithoutAHeaderWrite() {
        space.recovered(space.header(), 0);
        trim(4 * BLOCK_BYTES);
        space.writeHeader(space.trimTarget(Long.MAX_VALUE), 4 * BLOCK_BYTES);
        space.free(4 * BLOCK_BYTES);
        WalDescriptor.Header before = space.header();

        TrimRequest again = trim(4 * BLOCK_BYTES);
        TrimRequest beyondTheAcknowledged = trim(64 * BLOCK_BYTES);
        assertEquals(-1, space.trimTarget(4 * BLOCK_BYTES), "nothing acknowledged past the current trim position");
        assertTrue(again.future().isDone() && beyondTheAcknowledged.future().isDone());
        assertEquals(before, space.header());
        assertEquals(before, slots().load());
        assertEquals(-1, space.trimTarget(Long.MAX_VALUE), "no trim pending");
    }

    @Test
    void failedTrimsCarryTheCause() {
        TrimRequest t = trim(BLOCK_BYTES);
        StorageIOException cause = new StorageIOException("fenced", null);
        space.failTrims(cause);
        ExecutionException e = assertThrows(ExecutionException.class, () -> t.future().get());
        assertInstanceOf(StorageIOException.class, e.getCause());
        assertFalse(space.hasPendingTrims());
    }
}
