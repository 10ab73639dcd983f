package io.s3stream.internal.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

class CatchUpThrottleTest {
    private CatchUpThrottle throttle;

    @AfterEach
    void close() {
        if (throttle != null) {
            throttle.close();
        }
    }

    /** A read the test completes by hand, recording when and on which thread the throttle started it. */
    private static final class Read {
        final CompletableFuture<ByteBuf> store = new CompletableFuture<>();
        final CompletableFuture<Thread> startedOn = new CompletableFuture<>();
        volatile long startedAtNanos;

        CompletableFuture<ByteBuf> start() {
            startedAtNanos = System.nanoTime();
            startedOn.complete(Thread.currentThread());
            return store;
        }
    }

    @Test
    void atMostMaxInFlightReadsRunAtOnceAndTheRestStartInArrivalOrderAsSlotsFree() throws Exception {
        throttle = new CatchUpThrottle(2, 0);
        List<Integer> started = new CopyOnWriteArrayList<>();
        List<CompletableFuture<ByteBuf>> stores = new ArrayList<>();
        List<CompletableFuture<ByteBuf>> results = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            int n = i;
            CompletableFuture<ByteBuf> store = new CompletableFuture<>();
            stores.add(store);
            results.add(throttle.submit(100, () -> {
                started.add(n);
                return store;
            }));
        }
        assertThat(started).containsExactly(0, 1);
        assertThat(throttle.queued()).isEqualTo(3);

        stores.get(1).complete(Unpooled.wrappedBuffer(new byte[] {1}));
        assertThat(started).containsExactly(0, 1, 2);
        assertThat(results.get(1).get().getByte(0)).isEqualTo((byte) 1);

        stores.get(0).completeExceptionally(new IllegalStateException("store down"));
        assertThat(started).containsExactly(0, 1, 2, 3);
        assertThatThrownBy(() -> results.get(0).get()).isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(IllegalStateException.class);

        stores.get(2).complete(Unpooled.EMPTY_BUFFER);
        stores.get(3).complete(Unpooled.EMPTY_BUFFER);
        assertThat(started).containsExactly(0, 1, 2, 3, 4);
        stores.get(4).complete(Unpooled.EMPTY_BUFFER);
        assertThat(throttle.startedBytes()).isEqualTo(500);
    }

    @Test
    void aReadThatThrowsFailsItsResultAndFreesItsSlot() throws Exception {
        throttle = new CatchUpThrottle(1, 0);
        CompletableFuture<ByteBuf> failed = throttle.submit(10, () -> {
            throw new IllegalArgumentException("bad range");
        });
        assertThatThrownBy(failed::get).hasCauseInstanceOf(IllegalArgumentException.class);

        CompletableFuture<ByteBuf> next = throttle.submit(10, () -> CompletableFuture.completedFuture(
                Unpooled.wrappedBuffer(new byte[] {7})));
        assertThat(next.get(10, TimeUnit.SECONDS).getByte(0)).isEqualTo((byte) 7);
        assertThat(throttle.queued()).isZero();
    }

    @Test
    void aResultNobodyCanTakeAnyMoreGoesToDiscard() {
        throttle = new CatchUpThrottle(1, 0);
        CompletableFuture<ByteBuf> store = new CompletableFuture<>();
        CompletableFuture<ByteBuf> result = throttle.submit(10, () -> store);
        result.cancel(false); // the reader gave up

        ByteBuf late = Unpooled.directBuffer(16).writeLong(42);
        store.complete(late);
        assertThat(late.refCnt()).as("the default discard releases the buffer").isZero();
    }

    @Test
    void aReadTheBandwidthClockDefersStartsOnThePacerAndNoEarlierThanTheRateAllows() throws Exception {
        int mib = 1 << 20;
        throttle = new CatchUpThrottle(10, mib); // 1 MiB/s: a 256 KiB read moves the clock 250 ms on
        long before = System.nanoTime();
        Read first = new Read();
        Read second = new Read();
        throttle.submit(mib / 4, first::start);
        throttle.submit(1, second::start);

        assertThat(first.startedOn.getNow(null)).as("the first read starts at once, on the caller")
                .isSameAs(Thread.currentThread());
        Thread pacer = second.startedOn.get(30, TimeUnit.SECONDS);
        assertThat(pacer.getName()).isEqualTo(CatchUpThrottle.PACER_THREAD);
        assertThat(pacer.isDaemon()).isTrue();
        assertThat(second.startedAtNanos - before).as("the second read waited for the clock")
                .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(250));
        assertThat(throttle.startedBytes()).isEqualTo(mib / 4 + 1);
    }

    @Test
    void afterCloseNothingIsDeferredAndReadsStillComplete() throws Exception {
        throttle = new CatchUpThrottle(10, 1); // 1 byte/s: every read after the first would wait
        throttle.close();
        for (int i = 0; i < 3; i++) {
            Read read = new Read();
            CompletableFuture<ByteBuf> result = throttle.submit(1_000, read::start);
            assertThat(read.startedOn.getNow(null)).isSameAs(Thread.currentThread());
            read.store.complete(Unpooled.EMPTY_BUFFER);
            assertThat(result.get(10, TimeUnit.SECONDS)).isSameAs(Unpooled.EMPTY_BUFFER);
        }
    }

    @Test
    void aRateOfZeroOrMaxValueDefersNothing() {
        throttle = new CatchUpThrottle(10, 1);
        for (long rate : new long[] {0, Long.MAX_VALUE}) {
            throttle.bytesPerSecond(rate);
            assertThat(throttle.limit()).isZero();
            for (int i = 0; i < 3; i++) {
                Read read = new Read();
                throttle.submit(1 << 20, read::start);
                assertThat(read.startedOn.getNow(null)).isSameAs(Thread.currentThread());
                read.store.complete(Unpooled.EMPTY_BUFFER);
            }
        }
    }
}
