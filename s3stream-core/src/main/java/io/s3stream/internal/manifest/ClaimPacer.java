package io.s3stream.internal.manifest;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * When a manifest writer leaves the log to the others. A writer whose own entries fill the log back to back yields
 * before every fourth of them for one to two of its round trips, so that a writer that lost to it can claim a number
 * in between. A writer that has seen no other for {@link #FOREIGN_WINDOW_NANOS} yields at every 64th only: enough to
 * let a newcomer in, and about 2 % of its commit latency. Without it a
 * saturating writer (a group coordinator under load) wins every race, because a loser learns the tip a round trip
 * after the winner, and another node's lease renewal waits until its lease has expired. The price is at most a
 * fifth of the busy writer's entries; group commit ({@link CommitQueue}) puts more changes into each.
 *
 * <p>Confined to the conductor thread (and start-up, before it exists).
 */
final class ClaimPacer {

    /** How recently another writer's entry must have been applied for this writer to yield at every fourth entry. */
    static final long FOREIGN_WINDOW_NANOS = TimeUnit.SECONDS.toNanos(30);

    /** This writer's entries in a row at the log tip, as far as its view knows. */
    private long ownRun;
    private long lastWinNanos;
    private long lastForeignNanos = System.nanoTime() - FOREIGN_WINDOW_NANOS;
    /** This writer's round trip to claim an entry, averaged. */
    private long roundTripNanos = TimeUnit.MILLISECONDS.toNanos(5);

    /** Before a commit's first claim: yields if this writer's entries have been filling the log back to back. */
    void beforeFirstClaim() {
        long now = System.nanoTime();
        int every = now - lastForeignNanos < FOREIGN_WINDOW_NANOS ? 4 : 64;
        if (ownRun > 0 && ownRun % every == 0 && now - lastWinNanos < 2 * roundTripNanos) {
            LockSupport.parkNanos(roundTripNanos + ThreadLocalRandom.current().nextLong(roundTripNanos + 1));
        }
    }

    /** A claim of this writer created its entry after {@code tookNanos}. */
    void won(long tookNanos) {
        roundTripNanos += (tookNanos - roundTripNanos) / 8;
        lastWinNanos = System.nanoTime();
    }

    /** An entry was applied to the view: this writer's own, or another's. */
    void applied(boolean own) {
        if (own) {
            ownRun++;
        } else {
            ownRun = 0;
            lastForeignNanos = System.nanoTime();
        }
    }

    /** After start-up: the history replayed says nothing about who writes now. */
    void reset() {
        ownRun = 0;
        lastForeignNanos = System.nanoTime() - FOREIGN_WINDOW_NANOS;
    }
}
