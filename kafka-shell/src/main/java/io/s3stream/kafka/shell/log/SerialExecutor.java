package io.s3stream.kafka.shell.log;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Runs submitted tasks one at a time, in submission order, on a shared executor: the owner of one partition's
 * append path. Tasks may block (an append waits for log-cache space), which is why the shared executor runs
 * virtual threads and never a Netty event loop.
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
