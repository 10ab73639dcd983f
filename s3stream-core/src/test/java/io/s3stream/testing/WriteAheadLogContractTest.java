package io.s3stream.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.InvalidConfigException;
import io.s3stream.NodeFencedException;
import io.s3stream.OverCapacityException;
import io.s3stream.StreamClosedException;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WriteAheadLog;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

/**
 * The {@link WriteAheadLog} contract, run against every backend. A subclass provides a fresh log target per test
 * ({@link #openWal}, reopening the same target on every call within one test) and may simulate a crash.
 */
public abstract class WriteAheadLogContractTest {
    protected static final Duration SHORT_BACKPRESSURE = Duration.ofMillis(300);
    /** Every log opened by the test, closed after it. */
    protected final List<WriteAheadLog> opened = new ArrayList<>();
    private final long seed = System.nanoTime();
    protected final Random random = new Random(seed);

    /**
     * Opens this test's log target as node {@code nodeId} at {@code nodeEpoch}. Every call within one test opens the
     * same target; the first call creates it with {@link #capacityBytes()}.
     */
    protected abstract WriteAheadLog openWal(long nodeId, long nodeEpoch, Duration backpressureTimeout) throws Exception;

    /** Capacity of the target the subclass creates; small enough to wrap around quickly. */
    protected abstract long capacityBytes();

    /** Abandons a log without closing it, as a crash would; by default simply forgets it. */
    protected void crash(WriteAheadLog wal) throws Exception {
        opened.remove(wal);
    }

    protected WriteAheadLog open(long nodeId, long nodeEpoch) throws Exception {
        return open(nodeId, nodeEpoch, Duration.ofSeconds(5));
    }

    protected WriteAheadLog open(long nodeId, long nodeEpoch, Duration backpressure) throws Exception {
        WriteAheadLog wal = openWal(nodeId, nodeEpoch, backpressure);
        opened.add(wal);
        return wal;
    }

    @AfterEach
    void closeAll() {
        for (WriteAheadLog wal : opened) {
            wal.close();
        }
        opened.clear();
    }

    protected String seedInfo() {
        return " (seed " + seed + ")";
    }

    protected static ByteBuf buffer(byte[] data) {
        ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(data.length);
        buf.writeBytes(data);
        return buf;
    }

    /** A record of between 1 and {@code maxSize} bytes (see {@link #newRecord}). */
    protected byte[] randomRecord(int maxSize) {
        return newRecord(random, 1 + random.nextInt(maxSize));
    }

    /**
     * A record of exactly {@code size} bytes, its content drawn from {@code r}. Random bytes by default; a backend that
     * reads the engine's record layout (wal-object) makes valid {@link io.s3stream.spi.WalRecordFormat} records.
     * Called concurrently by several threads (each with its own {@code r}).
     */
    protected byte[] newRecord(Random r, int size) {
        byte[] data = new byte[size];
        r.nextBytes(data);
        return data;
    }

    protected WalAppendResult appendSync(WriteAheadLog wal, byte[] data) throws Exception {
        ByteBuf buf = buffer(data);
        try {
            return wal.append(buf).get(30, TimeUnit.SECONDS);
        } finally {
            buf.release();
        }
    }

    protected static List<Recovered> recover(WriteAheadLog wal) {
        List<Recovered> out = new ArrayList<>();
        wal.recover((position, next, record) -> {
            try {
                byte[] bytes = new byte[record.readableBytes()];
                record.getBytes(record.readerIndex(), bytes);
                out.add(new Recovered(position, next, bytes));
            } finally {
                record.release();
            }
        });
        return out;
    }

    protected record Recovered(long position, long nextPosition, byte[] data) {
    }

    protected static Throwable rootCause(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    @Test
    void freshLogRecoversNothing() throws Exception {
        WriteAheadLog wal = open(1, 1);
        assertThat(recover(wal)).isEmpty();
        assertThat(wal.capacityBytes()).isEqualTo(capacityBytes());
        assertThat(wal.maxRecordBytes()).isPositive().isLessThanOrEqualTo((int) Math.min(Integer.MAX_VALUE, capacityBytes()));
        assertThat(wal.description()).isNotBlank();
    }

    @Test
    void appendedRecordsAreRecoveredInOrderByteForByte() throws Exception {
        WriteAheadLog wal = open(1, 1);
        recover(wal);
        List<byte[]> written = new ArrayList<>();
        List<WalAppendResult> results = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            byte[] data = randomRecord(4000);
            written.add(data);
            results.add(appendSync(wal, data));
        }
        for (int i = 1; i < results.size(); i++) {
            assertThat(results.get(i).walPosition()).as("positions increase" + seedInfo())
                    .isGreaterThan(results.get(i - 1).walPosition())
                    .isGreaterThanOrEqualTo(results.get(i - 1).nextPosition());
        }
        wal.close();

        WriteAheadLog reopened = open(1, 2);
        List<Recovered> recovered = recover(reopened);
        assertThat(recovered).hasSize(written.size());
        for (int i = 0; i < written.size(); i++) {
            assertThat(recovered.get(i).data()).as("record " + i + seedInfo()).isEqualTo(written.get(i));
            assertThat(recovered.get(i).position()).isEqualTo(results.get(i).walPosition());
            assertThat(recovered.get(i).nextPosition()).isEqualTo(results.get(i).nextPosition());
        }
    }

    @Test
    void recordsSurviveACrashWithoutClose() throws Exception {
        WriteAheadLog wal = open(1, 1);
        recover(wal);
        List<byte[]> written = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            byte[] data = randomRecord(10_000);
            written.add(data);
            appendSync(wal, data);
        }
        crash(wal);
        WriteAheadLog reopened = open(1, 2);
        List<Recovered> recovered = recover(reopened);
        assertThat(recovered).extracting(Recovered::data).containsExactlyElementsOf(written);
    }

    @Test
    void concurrentAppendsCompleteInPositionOrder() throws Exception {
        WriteAheadLog wal = open(1, 1);
        recover(wal);
        int threads = 8;
        int perThread = 100;
        List<String> violations = Collections.synchronizedList(new ArrayList<>());
        List<Long> positions = Collections.synchronizedList(new ArrayList<>());
        List<CompletableFuture<WalAppendResult>> all = Collections.synchronizedList(new ArrayList<>());
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long threadSeed = random.nextLong();
            workers.add(Thread.ofPlatform().start(() -> {
                Random r = new Random(threadSeed);
                CompletableFuture<WalAppendResult> previous = null;
                for (int i = 0; i < perThread; i++) {
                    byte[] data = newRecord(r, 1 + r.nextInt(2000));
                    ByteBuf buf = buffer(data);
                    CompletableFuture<WalAppendResult> f = wal.append(buf);
                    CompletableFuture<WalAppendResult> before = previous;
                    // A record appended later by the same thread has a higher position, so it must not complete
                    // before the earlier one. The check is sound whenever the callback runs at completion time.
                    f.whenComplete((res, err) -> {
                        buf.release();
                        if (res != null) {
                            if (before != null && !before.isDone()) {
                                violations.add("position " + res.walPosition() + " completed before an earlier record");
                            }
                        }
                    });
                    previous = f;
                    all.add(f);
                }
            }));
        }
        for (Thread w : workers) {
            w.join();
        }
        CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        assertThat(violations).as("completions are delivered in position order" + seedInfo()).isEmpty();
        all.forEach(f -> positions.add(f.join().walPosition()));
        assertThat(positions).hasSize(threads * perThread).doesNotHaveDuplicates();
        wal.close();
        List<Recovered> recovered = recover(open(1, 2));
        assertThat(recovered).hasSize(threads * perThread);
        List<Long> sorted = new ArrayList<>(positions);
        Collections.sort(sorted);
        assertThat(recovered).extracting(Recovered::position).containsExactlyElementsOf(sorted);
    }

    @Test
    void callbackAppendsAreReportedOnceEachInPositionOrder() throws Exception {
        WriteAheadLog wal = open(1, 1);
        recover(wal);
        int records = 200;
        List<String> calls = Collections.synchronizedList(new ArrayList<>());
        List<Long> durable = Collections.synchronizedList(new ArrayList<>());
        List<byte[]> written = new ArrayList<>();
        CountDownLatch done = new CountDownLatch(records);
        for (int i = 0; i < records; i++) {
            byte[] data = randomRecord(1500);
            written.add(data);
            ByteBuf buf = buffer(data);
            int index = i;
            wal.append(buf, new WriteAheadLog.AppendCallback() {
                @Override
                public void onDurable(long walPosition, long nextPosition) {
                    calls.add(index + " durable");
                    if (nextPosition <= walPosition) {
                        calls.add(index + ": nextPosition " + nextPosition + " <= position " + walPosition);
                    }
                    durable.add(walPosition);
                    buf.release();
                    done.countDown();
                }

                @Override
                public void onFailure(Throwable error) {
                    calls.add(index + " failed: " + error);
                    buf.release();
                    done.countDown();
                }
            });
        }
        assertThat(done.await(60, TimeUnit.SECONDS)).as("every callback called" + seedInfo()).isTrue();
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < records; i++) {
            expected.add(i + " durable");
        }
        assertThat(calls).as("each record reported once, durable, in append order" + seedInfo())
                .containsExactlyElementsOf(expected);
        assertThat(durable).isSorted().doesNotHaveDuplicates();
        if (wal.maxRecordBytes() < 64 * 1024 * 1024) {
            ByteBuf tooBig = PooledByteBufAllocator.DEFAULT.directBuffer(wal.maxRecordBytes() + 1);
            tooBig.writerIndex(wal.maxRecordBytes() + 1);
            CompletableFuture<Throwable> refused = new CompletableFuture<>();
            try {
                wal.append(tooBig, failureInto(refused));
                assertThat(refused.get(10, TimeUnit.SECONDS)).isInstanceOf(IllegalArgumentException.class);
            } finally {
                tooBig.release();
            }
        }
        wal.close();
        ByteBuf late = buffer(newRecord(random, 64));
        CompletableFuture<Throwable> closed = new CompletableFuture<>();
        try {
            wal.append(late, failureInto(closed));
            assertThat(closed.get(10, TimeUnit.SECONDS)).isInstanceOf(StreamClosedException.class);
        } finally {
            late.release();
        }
        List<Recovered> recovered = recover(open(1, 2));
        assertThat(recovered).extracting(Recovered::position).containsExactlyElementsOf(durable);
        for (int i = 0; i < records; i++) {
            assertThat(recovered.get(i).data()).as("record " + i + seedInfo()).isEqualTo(written.get(i));
        }
    }

    /**
     * The engine's form: records are regions of one shared buffer, given by index and length; the buffer's own indexes
     * mean nothing to the WAL and stay where they were.
     */
    @Test
    void indexedAppendsWriteExactlyTheirRegionOfASharedBuffer() throws Exception {
        WriteAheadLog wal = open(1, 1);
        recover(wal);
        // Records as this WAL expects them, laid one after another into one buffer with junk between them.
        List<byte[]> written = new ArrayList<>();
        List<Integer> starts = new ArrayList<>();
        byte[] chunk = new byte[128 * 1024];
        random.nextBytes(chunk);
        int at = random.nextInt(64);
        while (true) {
            byte[] record = randomRecord(1 + random.nextInt(6000));
            if (at + record.length > chunk.length) {
                break;
            }
            System.arraycopy(record, 0, chunk, at, record.length);
            written.add(record);
            starts.add(at);
            at += record.length + random.nextInt(64);
        }
        ByteBuf shared = buffer(chunk);
        shared.readerIndex(13).writerIndex(17); // unrelated to every record's region
        List<CompletableFuture<Long>> durable = new ArrayList<>();
        for (int i = 0; i < written.size(); i++) {
            CompletableFuture<Long> outcome = new CompletableFuture<>();
            durable.add(outcome);
            wal.append(shared, starts.get(i), written.get(i).length, new WriteAheadLog.AppendCallback() {
                @Override
                public void onDurable(long walPosition, long nextPosition) {
                    outcome.complete(walPosition);
                }

                @Override
                public void onFailure(Throwable error) {
                    outcome.completeExceptionally(error);
                }
            });
        }
        try {
            CompletableFuture.allOf(durable.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
            assertThat(shared.readerIndex()).isEqualTo(13);
            assertThat(shared.writerIndex()).isEqualTo(17);
        } finally {
            wal.close();
            shared.release();
        }
        List<Recovered> recovered = recover(open(1, 2));
        assertThat(recovered).hasSize(written.size());
        for (int i = 0; i < written.size(); i++) {
            assertThat(recovered.get(i).data()).as("record " + i + seedInfo()).isEqualTo(written.get(i));
            assertThat(recovered.get(i).position()).isEqualTo(durable.get(i).join());
        }
    }

    /** A callback that expects a failure and hands it to {@code into}. */
    private static WriteAheadLog.AppendCallback failureInto(CompletableFuture<Throwable> into) {
        return new WriteAheadLog.AppendCallback() {
            @Override
            public void onDurable(long walPosition, long nextPosition) {
                into.completeExceptionally(new AssertionError("expected a refusal, got durable at " + walPosition));
            }

            @Override
            public void onFailure(Throwable error) {
                into.complete(error);
            }
        };
    }

    /**
     * Threads that await each append next to threads with appends in flight: an awaited append returns only after
     * every record appended before it is durable (no future still pending then may end below it), each awaiting
     * thread's positions grow, and every record is recovered byte for byte at its position.
     */
    @Test
    void awaitedAppendsReturnInPositionOrderAmongAsynchronousOnes() throws Exception {
        WriteAheadLog wal = open(1, 1);
        recover(wal);
        int perThread = 150;
        List<CompletableFuture<WalAppendResult>> pending = Collections.synchronizedList(new ArrayList<>());
        List<String> violations = Collections.synchronizedList(new ArrayList<>());
        List<long[]> awaitedBelow = Collections.synchronizedList(new ArrayList<>()); // {position, index in pending}
        Map<Long, byte[]> written = new ConcurrentHashMap<>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            boolean awaiting = t % 2 == 0;
            long threadSeed = random.nextLong();
            workers.add(Thread.ofPlatform().start(() -> {
                Random r = new Random(threadSeed);
                long last = -1;
                List<CompletableFuture<WalAppendResult>> window = new ArrayList<>();
                for (int i = 0; i < perThread; i++) {
                    byte[] data = newRecord(r, 1 + r.nextInt(3000));
                    ByteBuf buf = buffer(data);
                    if (awaiting) {
                        try {
                            WalAppendResult res = wal.appendAndAwait(buf);
                            written.put(res.walPosition(), data);
                            if (res.walPosition() <= last) {
                                violations.add("awaited position " + res.walPosition() + " after " + last);
                            }
                            last = res.walPosition();
                            List<CompletableFuture<WalAppendResult>> snapshot;
                            synchronized (pending) {
                                snapshot = new ArrayList<>(pending);
                            }
                            for (int k = 0; k < snapshot.size(); k++) {
                                if (!snapshot.get(k).isDone()) {
                                    awaitedBelow.add(new long[] {res.walPosition(), k});
                                }
                            }
                        } finally {
                            buf.release();
                        }
                    } else {
                        CompletableFuture<WalAppendResult> f = wal.append(buf);
                        f.whenComplete((res, err) -> {
                            buf.release();
                            if (res != null) {
                                written.put(res.walPosition(), data);
                            }
                        });
                        pending.add(f);
                        window.add(f);
                        if (window.size() == 8) {
                            window.removeFirst().join();
                        }
                    }
                }
                window.forEach(CompletableFuture::join);
            }));
        }
        for (Thread w : workers) {
            w.join();
        }
        CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        assertThat(violations).as("each awaiting thread's positions grow" + seedInfo()).isEmpty();
        for (long[] below : awaitedBelow) {
            assertThat(pending.get((int) below[1]).join().walPosition())
                    .as("a record still pending when an awaited append at %d returned%s", below[0], seedInfo())
                    .isGreaterThan(below[0]);
        }
        assertThat(written).hasSize(4 * perThread);
        wal.close();
        List<Recovered> recovered = recover(open(1, 2));
        assertThat(recovered).hasSize(4 * perThread);
        for (Recovered rec : recovered) {
            assertThat(rec.data()).as("record at %d%s", rec.position(), seedInfo())
                    .isEqualTo(written.get(rec.position()));
        }
    }

    /** An awaited append throws the failure the future would carry, unwrapped. */
    @Test
    void awaitedAppendsThrowTheirFailureUnwrapped() throws Exception {
        WriteAheadLog wal = open(1, 1, SHORT_BACKPRESSURE);
        recover(wal);
        if (wal.maxRecordBytes() < 64 * 1024 * 1024) {
            ByteBuf tooBig = PooledByteBufAllocator.DEFAULT.directBuffer(wal.maxRecordBytes() + 1);
            tooBig.writerIndex(wal.maxRecordBytes() + 1);
            try {
                assertThatThrownBy(() -> wal.appendAndAwait(tooBig)).isInstanceOf(IllegalArgumentException.class);
            } finally {
                tooBig.release();
            }
        }
        byte[] data = newRecord(random, (int) Math.min(wal.maxRecordBytes(), capacityBytes() / 16));
        Throwable refusal = null;
        int accepted = 0;
        for (int i = 0; i < 64 && refusal == null; i++) {
            ByteBuf buf = buffer(data);
            try {
                wal.appendAndAwait(buf);
                accepted++;
            } catch (RuntimeException e) {
                refusal = e;
            } finally {
                buf.release();
            }
        }
        assertThat(refusal).as("a full log refuses an awaited append after the back-pressure wait")
                .isInstanceOf(OverCapacityException.class);
        assertThat(accepted).isGreaterThanOrEqualTo(8);
        wal.close();
        ByteBuf buf = buffer(data);
        try {
            assertThatThrownBy(() -> wal.appendAndAwait(buf)).isInstanceOf(StreamClosedException.class);
        } finally {
            buf.release();
        }
    }

    @Test
    void trimmedRecordsAreNotRecovered() throws Exception {
        WriteAheadLog wal = open(1, 1);
        recover(wal);
        List<WalAppendResult> results = new ArrayList<>();
        List<byte[]> written = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            byte[] data = randomRecord(1500);
            written.add(data);
            results.add(appendSync(wal, data));
        }
        wal.trim(results.get(24).nextPosition()).get(10, TimeUnit.SECONDS);
        wal.close();
        List<Recovered> recovered = recover(open(1, 2));
        assertThat(recovered).extracting(Recovered::data).containsExactlyElementsOf(written.subList(25, 40));
    }

    @Test
    void fullLogAppliesBackPressureThenFailsAndTrimFreesSpace() throws Exception {
        WriteAheadLog wal = open(1, 1, SHORT_BACKPRESSURE);
        recover(wal);
        int recordSize = (int) Math.min(wal.maxRecordBytes(), capacityBytes() / 16);
        byte[] data = newRecord(random, recordSize);
        List<WalAppendResult> results = new ArrayList<>();
        Throwable refusal = null;
        for (int i = 0; i < 64 && refusal == null; i++) {
            ByteBuf buf = buffer(data);
            try {
                results.add(wal.append(buf).get(30, TimeUnit.SECONDS));
            } catch (ExecutionException e) {
                refusal = rootCause(e);
            } finally {
                buf.release();
            }
        }
        assertThat(refusal).as("a full log refuses appends after the back-pressure wait")
                .isInstanceOf(OverCapacityException.class);
        assertThat(results.size()).isGreaterThanOrEqualTo(8);
        wal.trim(results.get(results.size() / 2).nextPosition()).get(10, TimeUnit.SECONDS);
        WalAppendResult after = appendSync(wal, data);
        assertThat(after.walPosition()).isGreaterThan(results.getLast().walPosition());
    }

    @Test
    void blockedAppendProceedsWhenATrimFreesSpace() throws Exception {
        WriteAheadLog wal = open(1, 1, Duration.ofSeconds(20));
        recover(wal);
        int recordSize = (int) Math.min(wal.maxRecordBytes(), capacityBytes() / 8);
        byte[] data = newRecord(random, recordSize);
        List<WalAppendResult> results = new ArrayList<>();
        CompletableFuture<WalAppendResult> blocked = null;
        ByteBuf blockedBuf = null;
        for (int i = 0; i < 32; i++) {
            ByteBuf buf = buffer(data);
            CompletableFuture<CompletableFuture<WalAppendResult>> attempt =
                    CompletableFuture.supplyAsync(() -> wal.append(buf));
            try {
                CompletableFuture<WalAppendResult> f = attempt.get(500, TimeUnit.MILLISECONDS);
                WalAppendResult r = f.get(500, TimeUnit.MILLISECONDS);
                results.add(r);
                buf.release();
            } catch (java.util.concurrent.TimeoutException e) {
                blocked = attempt.thenCompose(f -> f);
                blockedBuf = buf;
                break;
            }
        }
        assertThat(blocked).as("an append into a full log waits").isNotNull();
        wal.trim(results.getLast().nextPosition()).get(10, TimeUnit.SECONDS);
        assertThat(blocked.get(20, TimeUnit.SECONDS).walPosition()).isGreaterThan(results.getLast().walPosition());
        blockedBuf.release();
    }

    @Test
    void wrapsAroundManyTimesAndRecoversOnlyLiveRecords() throws Exception {
        WriteAheadLog wal = open(1, 1);
        recover(wal);
        long total = 0;
        List<WalAppendResult> live = new ArrayList<>();
        List<byte[]> liveData = new ArrayList<>();
        int maxSize = (int) Math.min(wal.maxRecordBytes(), capacityBytes() / 10);
        while (total < capacityBytes() * 4) {
            byte[] data = randomRecord(maxSize);
            live.add(appendSync(wal, data));
            liveData.add(data);
            total += data.length;
            if (live.size() > 4) {
                int drop = live.size() - 3;
                wal.trim(live.get(drop - 1).nextPosition()).get(10, TimeUnit.SECONDS);
                live.subList(0, drop).clear();
                liveData.subList(0, drop).clear();
            }
        }
        crash(wal);
        List<Recovered> recovered = recover(open(1, 2));
        assertThat(recovered).extracting(Recovered::data).as(seedInfo()).containsExactlyElementsOf(liveData);
        assertThat(recovered).extracting(Recovered::position)
                .containsExactlyElementsOf(live.stream().map(WalAppendResult::walPosition).toList());
    }

    @Test
    void appendsAfterRecoveryContinueAfterTheLastRecord() throws Exception {
        WriteAheadLog wal = open(1, 1);
        recover(wal);
        WalAppendResult first = appendSync(wal, randomRecord(1000));
        crash(wal);
        WriteAheadLog second = open(1, 2);
        WriteAheadLog.RecoveryResult result = second.recover((p, n, r) -> r.release());
        assertThat(result.records()).isEqualTo(1);
        assertThat(result.nextPosition()).isGreaterThanOrEqualTo(first.nextPosition());
        byte[] more = randomRecord(1000);
        WalAppendResult next = appendSync(second, more);
        assertThat(next.walPosition()).isGreaterThanOrEqualTo(result.nextPosition());
        second.close();
        List<Recovered> recovered = recover(open(1, 3));
        assertThat(recovered).hasSize(2);
        assertThat(recovered.get(1).data()).isEqualTo(more);
    }

    @Test
    void largestRecordIsAcceptedAndLargerIsRefused() throws Exception {
        WriteAheadLog wal = open(1, 1);
        recover(wal);
        int max = Math.min(wal.maxRecordBytes(), 8 * 1024 * 1024);
        byte[] big = newRecord(random, max);
        appendSync(wal, big);
        if (wal.maxRecordBytes() < 64 * 1024 * 1024) {
            ByteBuf tooBig = PooledByteBufAllocator.DEFAULT.directBuffer(wal.maxRecordBytes() + 1);
            tooBig.writerIndex(wal.maxRecordBytes() + 1);
            try {
                assertThatThrownBy(() -> wal.append(tooBig).get(10, TimeUnit.SECONDS))
                        .hasRootCauseInstanceOf(IllegalArgumentException.class);
            } finally {
                tooBig.release();
            }
        }
        wal.close();
        List<Recovered> recovered = recover(open(1, 2));
        assertThat(recovered).hasSize(1);
        assertThat(Arrays.equals(recovered.getFirst().data(), big)).isTrue();
    }

    @Test
    void olderNodeEpochIsFenced() throws Exception {
        WriteAheadLog wal = open(1, 5);
        recover(wal);
        appendSync(wal, randomRecord(100));
        wal.close();
        WriteAheadLog newer = open(1, 6);
        recover(newer);
        newer.close();
        try {
            WriteAheadLog older = open(1, 4);
            assertThatThrownBy(() -> recover(older)).isInstanceOf(NodeFencedException.class)
                    .hasMessageContaining("6");
        } catch (NodeFencedException e) {
            assertThat(e).hasMessageContaining("6"); // a backend may refuse already when opening
        }
    }

    @Test
    void anotherNodeGetsItsOwnLogOrIsRefused() throws Exception {
        WriteAheadLog wal = open(1, 5);
        recover(wal);
        byte[] data = randomRecord(100);
        appendSync(wal, data);
        wal.close();
        if (logsPerNode()) {
            WriteAheadLog other = open(2, 1);
            assertThat(recover(other)).as("node 2 has a log of its own").isEmpty();
            other.close();
            assertThat(recover(open(1, 6))).extracting(Recovered::data).containsExactly(data);
        } else {
            try {
                WriteAheadLog other = open(2, 100);
                assertThatThrownBy(() -> recover(other)).isInstanceOf(InvalidConfigException.class)
                        .hasMessageContaining("node 1");
            } catch (InvalidConfigException e) {
                assertThat(e).hasMessageContaining("node 1");
            }
        }
    }

    /** Whether each node id has a log of its own under one target (shared WALs); otherwise another node is refused. */
    protected boolean logsPerNode() {
        return false;
    }

    @Test
    void appendAfterCloseFails() throws Exception {
        WriteAheadLog wal = open(1, 1);
        recover(wal);
        wal.close();
        wal.close();
        ByteBuf buf = buffer(newRecord(random, 64));
        try {
            Throwable t = null;
            try {
                wal.append(buf).get(10, TimeUnit.SECONDS);
                fail("append after close must fail");
            } catch (ExecutionException e) {
                t = rootCause(e);
            }
            assertThat(t).as("the SPI contract: a closed WAL refuses with StreamClosedException")
                    .isInstanceOf(StreamClosedException.class).hasMessageContaining("closed");
        } finally {
            buf.release();
        }
    }
}
