package io.s3stream.kafka.shell.log;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

class SerialExecutorTest {

    @Test
    void anIdleExecutorRunsTheTaskOnTheCallingThread() {
        SerialExecutor executor = new SerialExecutor(r -> {
            throw new AssertionError("nothing should be handed to the shared executor");
        });
        Thread caller = Thread.currentThread();
        List<Thread> ranOn = new ArrayList<>();
        assertThat(executor.runHereIfIdle(() -> ranOn.add(Thread.currentThread()))).isTrue();
        assertThat(ranOn).containsExactly(caller);
    }

    @Test
    void aTaskThatWouldBlockIsNotCountedAsRunAndLeavesTheExecutorIdle() {
        SerialExecutor executor = new SerialExecutor(Runnable::run);
        assertThat(executor.runHereIfIdle(() -> false)).isFalse();
        assertThat(executor.runHereIfIdle(() -> true)).as("released after a refusal").isTrue();
    }

    @Test
    void aQueuedOrRunningTaskIsNeverOvertaken() throws Exception {
        ExecutorService shared = Executors.newSingleThreadExecutor();
        try {
            SerialExecutor executor = new SerialExecutor(shared);
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            List<String> order = Collections.synchronizedList(new ArrayList<>());
            executor.execute(() -> {
                order.add("first");
                started.countDown();
                await(release);
            });
            assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(executor.runHereIfIdle(() -> order.add("inline while running"))).isFalse();
            executor.execute(() -> order.add("second"));
            assertThat(executor.runHereIfIdle(() -> order.add("inline while queued"))).isFalse();
            release.countDown();
            CountDownLatch done = new CountDownLatch(1);
            executor.execute(done::countDown);
            assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(order).containsExactly("first", "second");
        } finally {
            shared.shutdownNow();
        }
    }

    @Test
    void aTaskSubmittedDuringAnInlineRunRunsAfterIt() throws Exception {
        ExecutorService shared = Executors.newSingleThreadExecutor();
        try {
            SerialExecutor executor = new SerialExecutor(shared);
            List<String> order = Collections.synchronizedList(new ArrayList<>());
            CountDownLatch done = new CountDownLatch(1);
            assertThat(executor.runHereIfIdle(() -> {
                executor.execute(() -> {
                    order.add("submitted during");
                    done.countDown();
                });
                order.add("inline");
                return true;
            })).isTrue();
            assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(order).containsExactly("inline", "submitted during");
        } finally {
            shared.shutdownNow();
        }
    }

    /**
     * Threads mixing inline runs and submissions, with seeded pauses: tasks never overlap, and each thread's tasks run
     * in the order it issued them (the order one connection's requests reach a partition).
     */
    @Test
    void tasksNeverOverlapAndEachThreadKeepsItsOrder() throws Exception {
        for (long seed = 1; seed <= 20; seed++) {
            ExecutorService shared = Executors.newVirtualThreadPerTaskExecutor();
            try {
                SerialExecutor executor = new SerialExecutor(shared);
                AtomicInteger running = new AtomicInteger();
                AtomicInteger overlaps = new AtomicInteger();
                int threads = 4;
                int perThread = 500;
                int[][] seen = new int[threads][perThread];
                AtomicInteger[] next = new AtomicInteger[threads];
                CountDownLatch finished = new CountDownLatch(threads * perThread);
                List<Thread> workers = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int thread = t;
                    next[t] = new AtomicInteger();
                    Random random = new Random(seed * 31 + t);
                    workers.add(Thread.ofPlatform().start(() -> {
                        for (int i = 0; i < perThread; i++) {
                            int index = i;
                            boolean refuse = random.nextInt(4) == 0;
                            Runnable body = () -> {
                                if (running.incrementAndGet() != 1) {
                                    overlaps.incrementAndGet();
                                }
                                seen[thread][next[thread].getAndIncrement()] = index;
                                if (random.nextInt(8) == 0) {
                                    Thread.onSpinWait();
                                }
                                running.decrementAndGet();
                                finished.countDown();
                            };
                            if (refuse || !executor.runHereIfIdle(() -> {
                                body.run();
                                return true;
                            })) {
                                executor.execute(body);
                            }
                        }
                    }));
                }
                for (Thread w : workers) {
                    w.join();
                }
                assertThat(finished.await(30, TimeUnit.SECONDS)).as("seed " + seed).isTrue();
                assertThat(overlaps.get()).as("seed " + seed + ": tasks that overlapped").isZero();
                for (int t = 0; t < threads; t++) {
                    for (int i = 0; i < perThread; i++) {
                        assertThat(seen[t][i]).as("seed " + seed + ", thread " + t + ", task " + i).isEqualTo(i);
                    }
                }
            } finally {
                shared.shutdownNow();
            }
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
