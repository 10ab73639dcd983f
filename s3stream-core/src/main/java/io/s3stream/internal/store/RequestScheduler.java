package io.s3stream.internal.store;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * Limits the requests in flight to an object store and hands free slots out by {@link ObjectStorage.Priority}.
 *
 * <p>A request waits in the queue of its class until a slot is free; a freed slot goes to the highest class whose
 * queue is not empty and that is under its cap. Read classes are capped below the total ({@code TAIL_READ} at 3/4,
 * {@code CATCH_UP_READ} at 1/2), so a burst of catch-up reads can never take the slots an upload needs: an upload
 * waits at most for one request to finish, never behind a queue of reads.
 *
 * <p>Design note: one lock, held only to move counters and queues; the request itself is started outside it. Cold
 * enough (one acquisition per object-store request, which costs milliseconds) that a lock-free design is not worth it.
 */
final class RequestScheduler {
    private static final ThreadLocal<ArrayDeque<Task<?>>> TRAMPOLINE = new ThreadLocal<>();
    private final int maxInFlight;
    private final int[] caps;
    private final int[] inFlightByClass;
    private final java.util.List<ArrayDeque<Task<?>>> queues;
    private int inFlight;

    RequestScheduler(int maxInFlight) {
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("maxInFlight must be >= 1, was " + maxInFlight);
        }
        ObjectStorage.Priority[] classes = ObjectStorage.Priority.values();
        this.maxInFlight = maxInFlight;
        this.caps = new int[classes.length];
        this.inFlightByClass = new int[classes.length];
        this.queues = new java.util.ArrayList<>(classes.length);
        for (ObjectStorage.Priority p : classes) {
            caps[p.ordinal()] = Math.max(1, (int) Math.ceil(maxInFlight * p.shareOfSlots()));
            queues.add(new ArrayDeque<>());
        }
    }

    /** Runs {@code request} when a slot of its class is free; the result completes with the request's. */
    <T> CompletableFuture<T> submit(ObjectStorage.Priority priority, Supplier<CompletableFuture<T>> request) {
        Task<T> task = new Task<>(priority, request);
        boolean runNow;
        synchronized (this) {
            runNow = canRun(priority.ordinal()) && queuesAboveAreEmpty(priority.ordinal());
            if (runNow) {
                take(priority.ordinal());
            } else {
                queues.get(priority.ordinal()).add(task);
            }
        }
        if (runNow) {
            trampolined(task);
        }
        return task.result;
    }

    /** Requests in flight now. */
    synchronized int inFlight() {
        return inFlight;
    }

    /** Requests waiting for a slot now. */
    synchronized int queued() {
        int n = 0;
        for (ArrayDeque<Task<?>> q : queues) {
            n += q.size();
        }
        return n;
    }

    private boolean canRun(int cls) {
        return inFlight < maxInFlight && inFlightByClass[cls] < caps[cls];
    }

    private boolean queuesAboveAreEmpty(int cls) {
        for (int i = 0; i < cls; i++) {
            if (!queues.get(i).isEmpty()) {
                return false;
            }
        }
        return true;
    }

    private void take(int cls) {
        inFlight++;
        inFlightByClass[cls]++;
    }

    private <T> void run(Task<T> task) {
        CompletableFuture<T> f;
        try {
            f = task.request.get();
        } catch (Throwable e) {
            // Even an Error (an OutOfMemoryError in a store that copies to the heap) must fail this request's future
            // and free its slot: escaping here would unwind the trampoline and strand every task queued behind it.
            f = CompletableFuture.failedFuture(e);
        }
        if (f == null) {
            f = CompletableFuture.failedFuture(new IllegalStateException("object-store request returned no future"));
        }
        f.whenComplete((value, error) -> {
            if (error != null) {
                task.result.completeExceptionally(error);
            } else {
                task.result.complete(value);
            }
            release(task.priority.ordinal());
        });
    }

    private void release(int cls) {
        Task<?> next = null;
        synchronized (this) {
            inFlight--;
            inFlightByClass[cls]--;
            for (int i = 0; i < queues.size() && next == null; i++) {
                if (!queues.get(i).isEmpty() && canRun(i)) {
                    next = queues.get(i).poll();
                    take(i);
                }
            }
        }
        if (next != null) {
            trampolined(next);
        }
    }

    /**
     * Runs a task, and the tasks its completion releases, in a loop rather than by recursion: a store that answers
     * synchronously (memory, local files) would otherwise nest one stack frame per queued request.
     */
    private void trampolined(Task<?> task) {
        ArrayDeque<Task<?>> local = TRAMPOLINE.get();
        if (local != null) {
            local.add(task);
            return;
        }
        local = new ArrayDeque<>();
        TRAMPOLINE.set(local);
        try {
            for (Task<?> t = task; t != null; t = local.poll()) {
                try {
                    run(t);
                } catch (Throwable e) {
                    // A dependent of a completed request threw (run() itself does not): keep draining, so that no
                    // queued request is stranded with a future that never completes.
                    t.result.completeExceptionally(e);
                }
            }
        } finally {
            TRAMPOLINE.remove();
        }
    }

    private record Task<T>(ObjectStorage.Priority priority, Supplier<CompletableFuture<T>> request,
                           CompletableFuture<T> result) {
        Task(ObjectStorage.Priority priority, Supplier<CompletableFuture<T>> request) {
            this(priority, request, new CompletableFuture<>());
        }
    }
}
