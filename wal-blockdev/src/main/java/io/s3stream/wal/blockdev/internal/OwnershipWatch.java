package io.s3stream.wal.blockdev.internal;

import io.s3stream.InvalidConfigException;
import io.s3stream.NodeFencedException;
import io.s3stream.StorageIOException;
import io.s3stream.spi.WalContext;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * How a {@link BlockDeviceWal} learns that it lost its ring to another owner: the header slots re-read (another
 * owner writes a higher sequence) and, for a WAL on a shared file system, the external {@link OwnershipCheck}, asked
 * inline or off the conductor for the writes it must cover before their appends are acknowledged.
 *
 * <p>Each question answers null while this WAL still owns the ring, or the exception that fences it; the conductor
 * applies it. Apart from the asynchronous checks' bodies and {@link #checkMayRecover} (asked by recovery, before the
 * conductor starts), every method runs on the conductor and the counters are conductor-owned.
 */
final class OwnershipWatch {

    private static final long HEADER_CHECK_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final int MAX_CHECKS_IN_FLIGHT = 4;

    /** The answer of an asynchronous check that covered every group up to {@code coveredSeq}. */
    record CheckResult(long coveredSeq, String lostTo, RuntimeException error) {
    }

    private final String description;
    private final OwnershipCheck external;
    private final HeaderSlots headerSlots;
    /** Runs the asynchronous checks of a WAL with an external check; null otherwise. */
    private final ExecutorService checker;
    private int checksInFlight;
    private long requestedSeq = -1;  // groups up to this sequence are covered by a started check
    private long confirmedSeq = -1;  // groups up to this sequence passed a check
    private long lastHeaderCheckNanos = System.nanoTime();

    OwnershipWatch(String description, OwnershipCheck external, HeaderSlots headerSlots) {
        this.description = description;
        this.external = external;
        this.headerSlots = headerSlots;
        this.checker = external == null ? null : Executors.newFixedThreadPool(MAX_CHECKS_IN_FLIGHT,
                Thread.ofPlatform().daemon().name("blockdev-wal-ownership-", 0).factory());
    }

    /**
     * Refuses to recover a ring whose header names another node ({@link InvalidConfigException}) or a newer epoch of
     * this one ({@link NodeFencedException}: a newer owner took it over).
     */
    static void checkMayRecover(WalDescriptor.Header h, WalContext context, String description) {
        if (h.nodeId() >= 0 && h.nodeId() != context.nodeId()) {
            throw new InvalidConfigException(description + " belongs to node " + h.nodeId() + ", not node "
                    + context.nodeId() + "; point this node at its own WAL");
        }
        if (h.nodeEpoch() > context.nodeEpoch()) {
            throw new NodeFencedException(description + " is owned by node " + h.nodeId() + " at node epoch "
                    + h.nodeEpoch() + ", newer than this node's epoch " + context.nodeEpoch());
        }
    }

    boolean hasExternalCheck() {
        return external != null;
    }

    /** Whether group {@code seq}, whose write returned, may be acknowledged: no external check, or one confirmed it. */
    boolean confirmed(long seq) {
        return external == null || seq <= confirmedSeq;
    }

    /**
     * Starts (off the conductor) a check covering every group up to {@code covers}, whose writes have all returned;
     * {@code deliver} gets the answer on the checker thread. It must start after those writes returned: a new owner
     * that fenced this one before the check read the owner state then finds the groups in its recovery scan, and one
     * that fences it later is seen by the check. Does nothing when a started check covers them or too many run.
     */
    void startCheck(long covers, Consumer<CheckResult> deliver) {
        if (covers <= requestedSeq || checksInFlight >= MAX_CHECKS_IN_FLIGHT) {
            return; // a check already started after these writes, or the next completion starts one
        }
        requestedSeq = covers;
        checksInFlight++;
        checker.execute(() -> {
            String lostTo = null;
            RuntimeException error = null;
            try {
                lostTo = external.lostTo();
            } catch (RuntimeException e) {
                error = e;
            }
            deliver.accept(new CheckResult(covers, lostTo, error));
        });
    }

    /** Takes the answer of an asynchronous check; returns the fence it calls for, or null. */
    RuntimeException onChecked(CheckResult r, WalDescriptor.Header header) {
        checksInFlight--;
        if (r.error() != null) {
            return unconfirmed(r.error());
        }
        if (r.lostTo() != null) {
            return takenOver(r.lostTo(), header);
        }
        confirmedSeq = Math.max(confirmedSeq, r.coveredSeq());
        return null;
    }

    /** Asks the external check inline (null without one). */
    RuntimeException askExternal(WalDescriptor.Header header) {
        if (external == null) {
            return null;
        }
        String lostTo;
        try {
            lostTo = external.lostTo();
        } catch (RuntimeException e) {
            return unconfirmed(e);
        }
        return lostTo == null ? null : takenOver(lostTo, header);
    }

    /** Whether a second passed since the header slots were last re-read. */
    boolean headerCheckDue() {
        return System.nanoTime() - lastHeaderCheckNanos > HEADER_CHECK_INTERVAL_NANOS;
    }

    /**
     * Asks the external check, then re-reads the header slots: only another owner writes past our own sequence.
     *
     * @throws BlockIoException when the slots cannot be read
     */
    RuntimeException rereadHeaders(WalDescriptor.Header header) {
        lastHeaderCheckNanos = System.nanoTime();
        RuntimeException lost = askExternal(header);
        if (lost != null) {
            return lost;
        }
        for (WalDescriptor.HeaderRead slot : headerSlots.read()) {
            if (slot.valid() && slot.header().sequence() > header.sequence()) {
                WalDescriptor.Header h = slot.header();
                return new NodeFencedException(description + " was taken over by node " + h.nodeId()
                        + " at node epoch " + h.nodeEpoch() + "; this owner (node " + header.nodeId() + ", epoch "
                        + header.nodeEpoch() + ") is fenced");
            }
        }
        return null;
    }

    void shutdown() {
        if (checker != null) {
            checker.shutdown();
        }
    }

    private StorageIOException unconfirmed(RuntimeException error) {
        return new StorageIOException(description + " could not confirm that it still owns the WAL: "
                + error.getMessage() + "; the WAL is fenced and accepts no more appends", error);
    }

    private NodeFencedException takenOver(String lostTo, WalDescriptor.Header header) {
        return new NodeFencedException(description + " was taken over: " + lostTo + "; this owner (node "
                + header.nodeId() + ", epoch " + header.nodeEpoch() + ") is fenced and acknowledges nothing more");
    }
}
