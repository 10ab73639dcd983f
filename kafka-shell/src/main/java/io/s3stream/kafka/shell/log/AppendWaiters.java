package io.s3stream.kafka.shell.log;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The long-polling fetches waiting for a partition's next append ({@link PartitionLog#awaitData}). Each waiter runs at
 * most once; a fetch that answered for another reason removes its own, so an idle partition holds none for long.
 * Thread-safe.
 */
final class AppendWaiters {
    private final Set<Runnable> waiters = ConcurrentHashMap.newKeySet();

    void add(Runnable waiter) {
        waiters.add(waiter);
    }

    void remove(Runnable waiter) {
        waiters.remove(waiter);
    }

    int size() {
        return waiters.size();
    }

    /** Runs the waiters registered so far; one registered while they run waits for the next call. */
    void wake() {
        if (!waiters.isEmpty()) {
            for (Object w : waiters.toArray()) {
                if (waiters.remove(w)) {
                    ((Runnable) w).run();
                }
            }
        }
    }
}
