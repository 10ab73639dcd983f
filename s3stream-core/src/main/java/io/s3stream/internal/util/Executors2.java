package io.s3stream.internal.util;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;

/** Stopping the engine's background threads, written once. */
public final class Executors2 {
    private Executors2() {
    }

    /**
     * Stops {@code executor} gracefully: no new tasks, the queued and running ones get up to {@code grace} (in
     * {@code unit}) to finish, then they are interrupted. An interrupt of the caller while it waits interrupts them at
     * once and stays set. Returns whether everything ended within the grace.
     */
    public static boolean stop(ExecutorService executor, long grace, TimeUnit unit) {
        executor.shutdown();
        try {
            if (executor.awaitTermination(grace, unit)) {
                return true;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        executor.shutdownNow();
        return false;
    }
}
