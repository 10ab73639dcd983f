package io.s3stream.kafka.shell.log;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

/**
 * Runs submitted tasks one at a time, in submission order, on a shared executor: the owner of one partition's
 * append path. Tasks may block (an append waits for log-cache space), which is why the shared executor runs
 * virtual threads and never a Netty event loop; a caller that must not block runs a task that does not need to on
 * its own thread when nothing else is queued ({@link #runHereIfIdle}).
 */
final class SerialExecutor implements Executor {
    private final Executor delegate;
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean scheduled = new AtomicBoolean();

    SerialExecutor(Executor delegate) {
        this.delegate = delegate;
    }

    @Override
    public void execute(Runnable task) {
        tasks.add(task);
        schedule();
    }

    /**
     * Runs {@code task} on the calling thread, in order with the submitted tasks, if none is queued or running: true
     * if it ran and did its work. The task returns false when it found it would have to block, having changed nothing;
     * so does this method, and the caller then submits it with {@link #execute}. A task submitted meanwhile runs after
     * it, on the shared executor.
     */
    boolean runHereIfIdle(BooleanSupplier task) {
        if (!tasks.isEmpty() || !scheduled.compareAndSet(false, true)) {
            return false;
        }
        try {
            // Re-checked under the claim: a task queued just before it would otherwise be overtaken.
            return tasks.isEmpty() && task.getAsBoolean();
        } finally {
            scheduled.set(false);
            if (!tasks.isEmpty()) {
                schedule();
            }
        }
    }

    /** Whether nothing is queued or running: what {@link #runHereIfIdle} needs (a snapshot). */
    boolean idle() {
        return !scheduled.get() && tasks.isEmpty();
    }

    private void schedule() {
        if (scheduled.compareAndSet(false, true)) {
            delegate.execute(this::drain);
        }
    }

    private void drain() {
        try {
            Runnable task;
            while ((task = tasks.poll()) != null) {
                try {
                    task.run();
                } catch (RuntimeException e) {
                    System.getLogger(SerialExecutor.class.getName()).log(System.Logger.Level.ERROR, "task failed", e);
                }
            }
        } finally {
            scheduled.set(false);
            if (!tasks.isEmpty()) {
                schedule();
            }
        }
    }
}
