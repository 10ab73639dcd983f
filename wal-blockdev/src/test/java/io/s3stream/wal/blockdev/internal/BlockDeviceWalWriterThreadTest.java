package io.s3stream.wal.blockdev.internal;

import io.netty.buffer.ByteBuf;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WriteAheadLog;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which thread writes a group: the appending thread itself for a lone append on a quiet WAL (no wake-up before the
 * write), the conductor for appends close behind one another (no hand-off to an IO thread and back), the IO pool once
 * appends arrive while a write runs (overlapping writes), and the appender again after the WAL went quiet. Every
 * record written either way is recovered byte for byte.
 */
class BlockDeviceWalWriterThreadTest {
    private static final long CAPACITY = 16L * 1024 * 1024;
    private final Path file = Path.of("target").toAbsolutePath().resolve("wal-writer-" + UUID.randomUUID() + ".img");
    private final Random random = new Random(42);

    /** Counts ring writes per writing thread kind: "conductor", "io", or the writing thread's name. */
    private static final class CountingIo extends ForwardingBlockIo {
        final Map<String, AtomicLong> writes = new ConcurrentHashMap<>();

        CountingIo(BlockIo delegate) {
            super(delegate);
        }

        long count(String kind) {
            AtomicLong n = writes.get(kind);
            return n == null ? 0 : n.get();
        }

        @Override
        public void write(long offset, MemorySegment source) {
            if (offset >= WalDescriptor.RING_OFFSET) { // ring writes, not header slots
                String name = Thread.currentThread().getName();
                String kind = name.startsWith("blockdev-wal-io-") ? "io" : name.equals("blockdev-wal-conductor")
                        ? "conductor" : name;
                writes.computeIfAbsent(kind, k -> new AtomicLong()).incrementAndGet();
            }
            delegate.write(offset, source);
        }
    }

    @AfterEach
    void delete() throws Exception {
        Files.deleteIfExists(file);
    }

    private byte[] record() {
        byte[] b = new byte[1 + random.nextInt(6000)];
        random.nextBytes(b);
        return b;
    }

    /** Appends a new record through {@code appendAndAwait} and returns its bytes. */
    private byte[] appendAndAwait(BlockDeviceWal wal) {
        byte[] b = record();
        ByteBuf buf = TestWals.buffer(b);
        try {
            wal.appendAndAwait(buf);
        } finally {
            buf.release();
        }
        return b;
    }

    /** A thread appending {@code count} records of its own seed with 16 in flight, adding each to {@code written}. */
    private static Thread pipelinedAppender(BlockDeviceWal wal, long seed, int count, List<byte[]> written) {
        return pipelinedAppender(wal, seed, count, written, () -> { });
    }

    /** As above; {@code issued} runs once the last append is issued, before its acknowledgements are awaited. */
    private static Thread pipelinedAppender(BlockDeviceWal wal, long seed, int count, List<byte[]> written,
                                            Runnable issued) {
        return Thread.ofPlatform().start(() -> {
            Random own = new Random(seed);
            List<CompletableFuture<WalAppendResult>> window = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                byte[] b = new byte[1 + own.nextInt(6000)];
                own.nextBytes(b);
                ByteBuf buf = TestWals.buffer(b);
                window.add(wal.append(buf).whenComplete((r, e) -> buf.release()));
                written.add(b);
                if (window.size() == 16) {
                    window.removeFirst().join();
                }
            }
            issued.run();
            window.forEach(CompletableFuture::join);
        });
    }

    /** Every record of each list recovered, each list's in its own order, and nothing else. */
    private static void assertEachInOrder(List<ByteBuffer> recovered, List<List<byte[]>> perThread) {
        assertThat(recovered).hasSize(perThread.stream().mapToInt(List::size).sum());
        for (List<byte[]> mine : perThread) {
            List<ByteBuffer> expected = mine.stream().map(ByteBuffer::wrap).toList();
            assertThat(recovered.stream().filter(expected::contains).toList()).containsExactlyElementsOf(expected);
        }
    }

    @Test
    void aLoneAppendIsWrittenByItsThreadCloseOnesByTheConductorConcurrentOnesByThePool() throws Exception {
        BlockDeviceWalConfig config = TestWals.config(file, CAPACITY, 4);
        CountingIo[] io = new CountingIo[1];
        BlockDeviceWal wal = TestWals.open(config, 1, real -> io[0] = new CountingIo(real));
        TestWals.recover(wal);
        List<byte[]> written = new ArrayList<>();
        String me = Thread.currentThread().getName();

        for (int i = 0; i < 20; i++) {
            byte[] b = record();
            TestWals.appendSync(wal, b);
            written.add(b);
            Thread.sleep(3); // idle between appends, as a broker at a few hundred requests per second
        }
        assertThat(io[0].count("io")).as("ring writes on IO threads for a lone appender %s", io[0].writes).isZero();
        // Not all 20: an append that finds the conductor in its periodic pass leaves the write to it.
        assertThat(io[0].count(me)).as("written by the appending thread %s", io[0].writes).isGreaterThanOrEqualTo(15);
        assertThat(io[0].count(me) + io[0].count("conductor")).isEqualTo(20);

        // Appends one right after another's acknowledgement: the WAL is not quiet, so the conductor writes them inline
        // (a thread stalled for over a millisecond between two may still write its own: most, not all).
        long mineBefore = io[0].count(me);
        for (int i = 0; i < 50; i++) {
            byte[] b = record();
            TestWals.appendSync(wal, b);
            written.add(b);
        }
        assertThat(io[0].count("io")).as("back-to-back appends of one thread %s", io[0].writes).isZero();
        assertThat(io[0].count(me) - mineBefore).as("back-to-back appends written by their thread").isLessThan(10);

        // Four appenders with 16 appends in flight each: appends arrive while writes run.
        List<Thread> appenders = new ArrayList<>();
        List<List<byte[]>> perAppender = new ArrayList<>();
        for (int a = 0; a < 4; a++) {
            List<byte[]> mine = new ArrayList<>();
            perAppender.add(mine);
            appenders.add(pipelinedAppender(wal, a, 400, mine));
        }
        for (Thread t : appenders) {
            t.join(TimeUnit.SECONDS.toMillis(60));
        }
        long pooled = io[0].count("io");
        assertThat(pooled).as("ring writes on IO threads with concurrent appenders %s", io[0].writes).isPositive();

        Thread.sleep(50); // the WAL goes quiet: the next lone append is written by its thread again
        long before = io[0].count(me) + io[0].count("conductor");
        long mineAfterBurst = io[0].count(me);
        for (int i = 0; i < 5; i++) {
            byte[] b = record();
            TestWals.appendSync(wal, b);
            written.add(b);
            Thread.sleep(3);
        }
        assertThat(io[0].count("io")).as("after an idle spell %s", io[0].writes).isEqualTo(pooled);
        assertThat(io[0].count(me) + io[0].count("conductor")).isEqualTo(before + 5);
        assertThat(io[0].count(me)).as("lone appends after the burst %s", io[0].writes)
                .isGreaterThanOrEqualTo(mineAfterBurst + 3);
        wal.close();

        BlockDeviceWal reopened = TestWals.open(config, 2);
        List<byte[]> recovered = TestWals.recover(reopened).stream().map(TestWals.Recovered::data).toList();
        reopened.close();
        // Each appender's records in its own order; all of them, the lone appends in order around them.
        assertThat(recovered).hasSize(written.size() + perAppender.stream().mapToInt(List::size).sum());
        assertThat(recovered.subList(0, 70)).containsExactlyElementsOf(written.subList(0, 70));
        assertThat(recovered.subList(recovered.size() - 5, recovered.size()))
                .containsExactlyElementsOf(written.subList(70, 75));
        assertEachInOrder(recovered.subList(70, recovered.size() - 5).stream().map(ByteBuffer::wrap).toList(),
                perAppender);
    }

    /**
     * A producer at a steady rate as a burst drains: once the burst's writes are done, each paced append finds nothing
     * waiting or in flight and the conductor parked, but the last write returned under a millisecond ago, so the WAL
     * is still in its concurrent mode (groups to the IO pool through the conductor) until a pause of over a
     * millisecond sends it back to writes on the appending thread. Across those switches, every record is recovered,
     * each thread's in its order.
     */
    @Test
    void pacedAppendsAsABurstDrainsAreRecoveredInEachThreadsOrder() throws Exception {
        BlockDeviceWalConfig config = TestWals.config(file, CAPACITY, 4);
        BlockDeviceWal wal = TestWals.open(config, 1);
        TestWals.recover(wal);
        List<byte[]> pacedRecords = new ArrayList<>();
        List<List<byte[]>> burstRecords = new ArrayList<>();
        int bursts = 10;
        int paced = 40;
        for (int burst = 0; burst < bursts; burst++) {
            List<byte[]> pipelined = new ArrayList<>();
            burstRecords.add(pipelined);
            java.util.concurrent.CountDownLatch issued = new java.util.concurrent.CountDownLatch(1);
            Thread burster = pipelinedAppender(wal, burst, 60, pipelined, issued::countDown);
            // Paced appends start while the burst's last writes run, so no thread wake-up stands between those
            // writes and the first paced append that finds the WAL idle.
            assertThat(issued.await(60, TimeUnit.SECONDS)).isTrue();
            for (int i = 0; i < paced; i++) {
                byte[] b = record();
                ByteBuf buf = TestWals.buffer(b);
                wal.append(buf).whenComplete((r, e) -> buf.release()).get(10, TimeUnit.SECONDS);
                pacedRecords.add(b);
                long until = System.nanoTime() + TimeUnit.MICROSECONDS.toNanos(100); // well under the 1-ms reset
                while (System.nanoTime() < until) {
                    Thread.onSpinWait();
                }
            }
            burster.join(TimeUnit.SECONDS.toMillis(60));
        }
        wal.close();

        BlockDeviceWal reopened = TestWals.open(config, 2);
        List<ByteBuffer> recovered = TestWals.recover(reopened).stream()
                .map(r -> ByteBuffer.wrap(r.data())).toList();
        reopened.close();
        List<List<byte[]>> threads = new ArrayList<>(burstRecords);
        threads.add(pacedRecords);
        assertEachInOrder(recovered, threads);
    }

    /**
     * Under pipelined appenders, an IO thread whose write returns while the conductor is parked acknowledges the
     * groups itself (no hand-back to the conductor): acknowledgements still come one at a time in position order,
     * whichever thread runs them, and every record is recovered.
     */
    @Test
    void anIoThreadAcknowledgesItsWriteInPositionOrder() throws Exception {
        BlockDeviceWalConfig config = TestWals.config(file, CAPACITY, 4);
        BlockDeviceWal wal = TestWals.open(config, 1);
        TestWals.recover(wal);
        List<long[]> acks = java.util.Collections.synchronizedList(new ArrayList<>());
        Map<String, AtomicLong> ackThreads = new ConcurrentHashMap<>();
        java.util.concurrent.atomic.AtomicInteger concurrentCallbacks = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicBoolean overlapped = new java.util.concurrent.atomic.AtomicBoolean();
        List<Thread> appenders = new ArrayList<>();
        int perAppender = 500; // about 6 MiB in all: within the ring, which nothing trims here
        for (int a = 0; a < 3; a++) {
            long seed = a;
            appenders.add(Thread.ofPlatform().start(() -> {
                Random own = new Random(seed);
                java.util.concurrent.Semaphore window = new java.util.concurrent.Semaphore(16);
                for (int i = 0; i < perAppender; i++) {
                    byte[] b = new byte[1 + own.nextInt(8_000)];
                    own.nextBytes(b);
                    ByteBuf buf = TestWals.buffer(b);
                    window.acquireUninterruptibly();
                    wal.append(buf, new WriteAheadLog.AppendCallback() {
                        @Override
                        public void onDurable(long walPosition, long nextPosition) {
                            if (concurrentCallbacks.incrementAndGet() != 1) {
                                overlapped.set(true);
                            }
                            String name = Thread.currentThread().getName();
                            ackThreads.computeIfAbsent(name.startsWith("blockdev-wal-io-") ? "io" : name,
                                    k -> new AtomicLong()).incrementAndGet();
                            acks.add(new long[] {walPosition, nextPosition});
                            concurrentCallbacks.decrementAndGet();
                            buf.release();
                            window.release();
                        }

                        @Override
                        public void onFailure(Throwable error) {
                            acks.add(new long[] {-1, -1});
                            buf.release();
                            window.release();
                        }
                    });
                }
                window.acquireUninterruptibly(16);
            }));
        }
        for (Thread t : appenders) {
            t.join(TimeUnit.SECONDS.toMillis(60));
        }
        wal.close();
        assertThat(overlapped).as("callbacks run one at a time").isFalse();
        assertThat(acks).hasSize(3 * perAppender);
        for (int i = 1; i < acks.size(); i++) {
            assertThat(acks.get(i)[0]).as("acknowledgement %d of %d", i, acks.size())
                    .isGreaterThanOrEqualTo(acks.get(i - 1)[1]).isGreaterThan(acks.get(i - 1)[0]);
        }
        assertThat(ackThreads.get("io")).as("acknowledged on IO threads %s", ackThreads).isNotNull();
        assertThat(ackThreads.get("io").get()).as("acknowledged on IO threads %s", ackThreads).isPositive();

        BlockDeviceWal reopened = TestWals.open(config, 2);
        assertThat(TestWals.recover(reopened)).hasSize(3 * perAppender);
        reopened.close();
    }

    /**
     * A thread that awaits each append writes its own groups even back to back (its previous write returned
     * microseconds ago), while appenders with appends in flight next to it keep group commit on the IO pool; an
     * awaited append from an append callback is refused instead of waiting for its own thread.
     */
    @Test
    void anAwaitingThreadWritesItsOwnAppendsBackToBack() throws Exception {
        BlockDeviceWalConfig config = TestWals.config(file, CAPACITY, 4);
        CountingIo[] io = new CountingIo[1];
        BlockDeviceWal wal = TestWals.open(config, 1, real -> io[0] = new CountingIo(real));
        TestWals.recover(wal);
        String me = Thread.currentThread().getName();
        List<byte[]> awaited = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            awaited.add(appendAndAwait(wal));
        }
        assertThat(io[0].count("io")).as("ring writes on IO threads %s", io[0].writes).isZero();
        // Not all 200: an append that finds the conductor in its periodic pass (the header check each second, a
        // spurious wake-up) leaves the write to it.
        assertThat(io[0].count(me)).as("written by the awaiting thread %s", io[0].writes).isGreaterThanOrEqualTo(190);

        List<byte[]> pipelined = new ArrayList<>();
        Thread appender = pipelinedAppender(wal, 7, 800, pipelined);
        while (appender.isAlive()) {
            awaited.add(appendAndAwait(wal));
        }
        assertThat(io[0].count("io")).as("group commit for the pipelined appender %s", io[0].writes).isPositive();

        CompletableFuture<Throwable> fromCallback = new CompletableFuture<>();
        ByteBuf first = TestWals.buffer(record());
        ByteBuf second = TestWals.buffer(record());
        wal.append(first, new WriteAheadLog.AppendCallback() {
            @Override
            public void onDurable(long walPosition, long nextPosition) {
                try {
                    wal.appendAndAwait(second);
                    fromCallback.complete(null);
                } catch (Throwable t) {
                    fromCallback.complete(t);
                }
            }

            @Override
            public void onFailure(Throwable error) {
                fromCallback.complete(error);
            }
        });
        assertThat(fromCallback.get(10, TimeUnit.SECONDS)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("append callback");
        first.release();
        second.release();
        wal.close();

        BlockDeviceWal reopened = TestWals.open(config, 2);
        List<ByteBuffer> recovered = TestWals.recover(reopened).stream()
                .map(r -> ByteBuffer.wrap(r.data())).toList();
        reopened.close();
        assertThat(recovered).hasSize(awaited.size() + pipelined.size() + 1);
        List<ByteBuffer> awaitedBuffers = awaited.stream().map(ByteBuffer::wrap).toList();
        List<ByteBuffer> pipelinedBuffers = pipelined.stream().map(ByteBuffer::wrap).toList();
        assertThat(recovered.stream().filter(awaitedBuffers::contains).toList())
                .containsExactlyElementsOf(awaitedBuffers);
        assertThat(recovered.stream().filter(pipelinedBuffers::contains).toList())
                .containsExactlyElementsOf(pipelinedBuffers);
    }
}
