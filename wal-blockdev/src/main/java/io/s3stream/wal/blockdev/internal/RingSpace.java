package io.s3stream.wal.blockdev.internal;

import io.s3stream.wal.blockdev.internal.ConductorCommands.TrimRequest;

import java.util.ArrayList;
import java.util.List;

import static io.s3stream.wal.blockdev.internal.WalDescriptor.BLOCK_BYTES;

/**
 * Which positions of the ring may be written, and the header that keeps it so across a crash: trims, coalesced into
 * header writes, move the recorded scan start forward, and the ring below the scan start of the newest durable header
 * is free.
 *
 * <p>Recovery scans from the header's scan start, so a position is reused only once a header recording a later scan
 * start is on the device: {@link #writeHeader} first, then (once the WAL has confirmed it still owns the ring, which
 * the conductor decides) {@link #free}. A trim that frees nothing beyond the current header completes at once. Trims
 * arrive a few times per upload, not per append, so a header write (one synchronous block) covers all that are pending.
 *
 * <p>Conductor-confined, like the rest of the WAL's mutable state; {@link BlockDeviceWal} decides when to trim and
 * what to do when a header write fails.
 */
final class RingSpace {
    private final HeaderSlots slots;
    private final long ringBytes;
    private final List<TrimRequest> pendingTrims = new ArrayList<>();
    private WalDescriptor.Header header;
    /** The scan start of the newest durable header: positions below it are free. */
    private long freedPosition;

    RingSpace(HeaderSlots slots, long ringBytes) {
        this.slots = slots;
        this.ringBytes = ringBytes;
    }

    /** Reads the current header from the slots, formatting a target that has none ({@link HeaderSlots#load}). */
    void load() {
        header = slots.load();
    }

    WalDescriptor.Header header() {
        return header;
    }

    /** After recovery took ownership with {@code owned}: what lies below {@code scanStart} is not live. */
    void recovered(WalDescriptor.Header owned, long scanStart) {
        header = owned;
        freedPosition = scanStart;
    }

    /** Whether {@code footprint} bytes written at {@code position}, padded to a whole block, fit in the free ring. */
    boolean fits(long position, long footprint) {
        return WalDescriptor.alignUp(position + footprint, BLOCK_BYTES) - freedPosition <= ringBytes;
    }

    /** Ring bytes not yet free below {@code writePosition}. */
    long bytesInUse(long writePosition) {
        return writePosition - freedPosition;
    }

    void requestTrim(TrimRequest trim) {
        pendingTrims.add(trim);
    }

    boolean hasPendingTrims() {
        return !pendingTrims.isEmpty();
    }

    /**
     * The trim position the pending trims ask for, capped at {@code ackedEnd} (an append is not trimmed before it is
     * acknowledged); -1 if there is none or it is not beyond the current header's, in which case the trims complete.
     */
    long trimTarget(long ackedEnd) {
        if (pendingTrims.isEmpty()) {
            return -1;
        }
        long requested = Long.MIN_VALUE;
        for (TrimRequest t : pendingTrims) {
            requested = Math.max(requested, t.position());
        }
        long target = Math.min(requested, ackedEnd);
        if (target <= header.trimPosition()) {
            completeTrims();
            return -1;
        }
        return target;
    }

    /**
     * Writes, synchronously, the next header: trimmed to {@code trimPosition}, recovery's scan starting at
     * {@code scanStart} (the oldest position still live). Frees nothing yet: see {@link #free}.
     *
     * @throws BlockIoException if the write failed; the slot written may be torn, the other one holds the previous
     *                          header
     */
    void writeHeader(long trimPosition, long scanStart) {
        WalDescriptor.Header next = header.next(Math.max(trimPosition, scanStart), scanStart, header.nodeId(),
                header.nodeEpoch(), header.session());
        slots.write(next);
        header = next;
    }

    /** Frees the ring below {@code scanStart}, the scan start of the header just written, and completes the trims. */
    void free(long scanStart) {
        freedPosition = scanStart;
        completeTrims();
    }

    void completeTrims() {
        for (TrimRequest t : pendingTrims) {
            t.future().complete(null);
        }
        pendingTrims.clear();
    }

    void failTrims(RuntimeException cause) {
        for (TrimRequest t : pendingTrims) {
            t.future().completeExceptionally(cause);
        }
        pendingTrims.clear();
    }
}
