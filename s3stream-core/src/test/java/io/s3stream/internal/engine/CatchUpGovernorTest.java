package io.s3stream.internal.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

class CatchUpGovernorTest {
    private static final long MIB = 1L << 20;

    private final AtomicLong appends = new AtomicLong();
    private double load;
    private final CatchUpThrottle throttle = new CatchUpThrottle(1_000, 0);

    @AfterEach
    void closeThrottle() {
        throttle.close();
    }

    /** A catch-up read of {@code bytes} during the coming tick (counted when submitted, run when paced). */
    private void read(long bytes) {
        throttle.submit((int) bytes, () -> CompletableFuture.completedFuture(Unpooled.EMPTY_BUFFER));
    }

    /** One tick of {@code readPerSecond} of catch-up at {@code cpu}, with appends or without. */
    private void tick(CatchUpGovernor governor, double cpu, boolean appending, long readPerSecond) {
        load = cpu;
        if (appending) {
            appends.addAndGet(10);
        }
        if (readPerSecond > 0) {
            read(readPerSecond * CatchUpGovernor.TICK_NANOS / TimeUnit.SECONDS.toNanos(1));
        }
        governor.tick();
    }

    private CatchUpGovernor governor(long cap) {
        return new CatchUpGovernor(0.8, cap, () -> load, appends::get, throttle);
    }

    @Test
    void aBusyMachineTakingAppendsCutsCatchUpToBelowWhatItReadAndNeverBelowTheFloor() {
        CatchUpGovernor governor = governor(0);
        assertThat(governor.bytesPerSecond()).as("unbounded until contention").isEqualTo(Long.MAX_VALUE);
        tick(governor, 0.95, true, 200 * MIB);
        assertThat(governor.bytesPerSecond()).as("70 % of what it read").isEqualTo(140 * MIB);
        tick(governor, 0.95, true, 140 * MIB);
        assertThat(governor.bytesPerSecond()).isEqualTo(98 * MIB);
        for (int i = 0; i < 50; i++) {
            tick(governor, 0.95, true, governor.bytesPerSecond());
        }
        assertThat(governor.bytesPerSecond()).isEqualTo(CatchUpGovernor.FLOOR_BYTES_PER_SECOND);
        assertThat(governor.cuts()).isEqualTo(52);
    }

    @Test
    void noCutWithoutAppendsOrWithoutCatchUpOrBelowTheTarget() {
        CatchUpGovernor governor = governor(0);
        tick(governor, 0.99, false, 300 * MIB); // replaying alone: take the machine
        tick(governor, 0.99, true, 0); // busy, but not with catch-up
        tick(governor, 0.8, true, 300 * MIB); // at the target, not above it
        tick(governor, -1, true, 300 * MIB); // load unknown
        assertThat(governor.bytesPerSecond()).isEqualTo(Long.MAX_VALUE);
        assertThat(governor.cuts()).isZero();
    }

    @Test
    void theRateRecoversOnceTheMachineHasCpuToSpareUpToTheCap() {
        CatchUpGovernor governor = governor(256 * MIB);
        tick(governor, 0.95, true, 100 * MIB);
        assertThat(governor.bytesPerSecond()).isEqualTo(70 * MIB);
        int ticks = 0;
        while (governor.bytesPerSecond() < 256 * MIB) {
            tick(governor, 0.5, true, governor.bytesPerSecond());
            ticks++;
        }
        assertThat(governor.bytesPerSecond()).as("capped").isEqualTo(256 * MIB);
        assertThat(ticks).as("70 -> 256 MiB/s at 5 %% + 0.4 MiB a tick").isBetween(20, 30);
    }

    @Test
    void aRateNobodyUsesDoesNotGrowSoTheNextReplayStartsWhereTheLastSettled() {
        CatchUpGovernor governor = governor(0);
        tick(governor, 0.95, true, 100 * MIB);
        assertThat(governor.bytesPerSecond()).isEqualTo(70 * MIB);
        for (int i = 0; i < 100; i++) {
            tick(governor, 0.2, true, i % 2 == 0 ? 0 : 30 * MIB); // idle, or less than half the rate
        }
        assertThat(governor.bytesPerSecond()).isEqualTo(70 * MIB);
        tick(governor, 0.2, true, 40 * MIB); // the rate binds again: it grows
        assertThat(governor.bytesPerSecond()).isGreaterThan(70 * MIB);
    }

    @Test
    void theLoadIsReadEveryTickOnlyWhileCatchUpReads() {
        AtomicLong readings = new AtomicLong();
        CatchUpGovernor governor = new CatchUpGovernor(0.8, 0, () -> {
            readings.incrementAndGet();
            return load;
        }, appends::get, throttle);
        for (int i = 0; i < 100; i++) {
            tick(governor, 0.95, true, 0); // appends, no catch-up: nothing to cut
        }
        assertThat(readings.get()).as("one reading a second while idle").isEqualTo(10);
        readings.set(0);
        tick(governor, 0.95, true, 100 * MIB);
        assertThat(governor.bytesPerSecond()).as("the first tick of a catch-up cuts").isEqualTo(70 * MIB);
        for (int i = 0; i < CatchUpGovernor.IDLE_SAMPLE_TICKS - 1; i++) {
            tick(governor, 0.2, true, 0); // a pause between reads still samples every tick
        }
        assertThat(readings.get()).isEqualTo(CatchUpGovernor.IDLE_SAMPLE_TICKS);
        tick(governor, 0.2, true, 0);
        tick(governor, 0.2, true, 0);
        assertThat(readings.get()).as("idle again").isEqualTo(CatchUpGovernor.IDLE_SAMPLE_TICKS);
    }

    @Test
    void theThrottlePacesCatchUpAtTheGovernedRate() throws Exception {
        CatchUpGovernor governor = governor(0);
        tick(governor, 0.95, true, 40 * MIB); // cut to 28 MiB/s
        // 14 MiB at 28 MiB/s: the last read starts about half a second after the first.
        long started = System.nanoTime();
        CompletableFuture<?> last = null;
        for (int i = 0; i < 14; i++) {
            last = throttle.submit((int) MIB, () -> CompletableFuture.completedFuture(Unpooled.EMPTY_BUFFER));
        }
        last.get(10, TimeUnit.SECONDS);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isBetween(400L, 2_000L);
    }

    @Test
    void startedGovernorsTickOnTheirOwnAndStopWhenClosed() throws Exception {
        try (CatchUpGovernor governor = governor(0).start()) {
            load = 0.95;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (governor.cuts() == 0 && System.nanoTime() < deadline) {
                appends.incrementAndGet();
                read(MIB);
                Thread.sleep(20);
            }
            assertThat(governor.cuts()).isPositive();
        }
    }
}
