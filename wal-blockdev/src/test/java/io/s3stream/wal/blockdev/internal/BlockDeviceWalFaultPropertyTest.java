package io.s3stream.wal.blockdev.internal;

import io.netty.buffer.ByteBuf;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.testing.LeakCheck;
import io.s3stream.testing.Seeds;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Crashes the WAL at a random write (torn at a random byte, with a few later writes persisted out of order), with
 * several writes in flight and trims wrapping the ring, then recovers on the real file and checks: recovery returns
 * exactly a contiguous run of the submitted records, byte for byte, that contains every acknowledged and untrimmed
 * one; and after more appends and another crash, the new records follow the recovered ones with nothing in between.
 */
class BlockDeviceWalFaultPropertyTest {
    static {
        LeakCheck.install();
    }

    private static final long CAPACITY = 2L * 1024 * 1024;

    @AfterAll
    static void noLeaks() {
        LeakCheck.assertNoLeaks();
    }

    static LongStream seeds() {
        return Seeds.of(40);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void crashNeverLosesAcknowledgedRecordsNorReturnsGarbage(long seed) throws Exception {
        Random random = new Random(seed);
        Path file = Path.of("/dev/shm", "wal-fault-" + UUID.randomUUID() + ".img");
        try {
            int inflight = 1 + random.nextInt(4);
            BlockDeviceWalConfig config = TestWals.config(file, CAPACITY, inflight);
            FaultyBlockIo[] faulty = new FaultyBlockIo[1];
            BlockDeviceWal wal = TestWals.open(config, 1, io -> faulty[0] = new FaultyBlockIo(io));
            TestWals.recover(wal);
            faulty[0].crashAtWrite(1 + random.nextInt(60), random.nextInt(70_000), random.nextInt(3));

            List<byte[]> submitted = new ArrayList<>();
            List<WalAppendResult> results = new ArrayList<>();
            int acked = 0;
            int trimmedDurably = 0;
            int trimRequested = 0;
            long liveBytes = 0;
            boolean failed = false;
            while (!failed && submitted.size() < 2000) {
                int batch = 1 + random.nextInt(24);
                List<CompletableFuture<WalAppendResult>> futures = new ArrayList<>();
                List<ByteBuf> bufs = new ArrayList<>();
                for (int i = 0; i < batch; i++) {
                    byte[] data = new byte[1 + random.nextInt(random.nextInt(10) == 0 ? 60_000 : 3_000)];
                    random.nextBytes(data);
                    submitted.add(data);
                    ByteBuf buf = TestWals.buffer(data);
                    bufs.add(buf);
                    futures.add(wal.append(buf));
                }
                for (int i = 0; i < futures.size(); i++) {
                    try {
                        WalAppendResult r = futures.get(i).get(30, TimeUnit.SECONDS);
                        assertThat(failed).as("no acknowledgement after a failure (seed " + seed + ")").isFalse();
                        results.add(r);
                        acked++;
                        liveBytes += r.nextPosition() - r.walPosition();
                    } catch (java.util.concurrent.ExecutionException e) {
                        failed = true;
                    } finally {
                        bufs.get(i).release();
                    }
                }
                if (!failed && liveBytes > CAPACITY / 3) {
                    int upTo = trimRequested + (acked - trimRequested) / 2;
                    trimRequested = Math.max(trimRequested, upTo);
                    try {
                        wal.trim(results.get(upTo - 1).nextPosition()).get(30, TimeUnit.SECONDS);
                        trimmedDurably = upTo;
                        liveBytes = results.get(acked - 1).nextPosition() - results.get(upTo).walPosition();
                    } catch (java.util.concurrent.ExecutionException e) {
                        failed = true;
                    }
                }
            }
            wal.halt();

            BlockDeviceWal reopened = TestWals.open(config, 2);
            List<TestWals.Recovered> recovered = TestWals.recover(reopened);
            String info = " (seed " + seed + ", inflight " + inflight + ", acked " + acked + ", trimmed "
                    + trimmedDurably + ".." + trimRequested + ", submitted " + submitted.size() + ")";
            int start = recovered.isEmpty() ? acked : indexOf(submitted, recovered.getFirst().data(), trimmedDurably);
            assertThat(start).as("recovery starts within the trim window" + info)
                    .isBetween(trimmedDurably, Math.max(trimRequested, acked));
            for (int i = 0; i < recovered.size(); i++) {
                assertThat(start + i).as("recovered record " + i + " was submitted" + info).isLessThan(submitted.size());
                assertThat(recovered.get(i).data()).as("record " + (start + i) + " byte for byte" + info)
                        .isEqualTo(submitted.get(start + i));
                if (start + i < acked) {
                    assertThat(recovered.get(i).position()).isEqualTo(results.get(start + i).walPosition());
                }
            }
            assertThat(start + recovered.size()).as("every acknowledged record is recovered" + info)
                    .isGreaterThanOrEqualTo(acked);

            // Second life: append after the recovered records, crash without faults, and recover again.
            List<byte[]> expected = new ArrayList<>();
            recovered.forEach(r -> expected.add(r.data()));
            for (int i = 0; i < 1 + random.nextInt(30); i++) {
                byte[] data = new byte[1 + random.nextInt(5_000)];
                random.nextBytes(data);
                TestWals.appendSync(reopened, data);
                expected.add(data);
            }
            reopened.halt();
            BlockDeviceWal third = TestWals.open(config, 3);
            List<TestWals.Recovered> again = TestWals.recover(third);
            assertThat(again).extracting(TestWals.Recovered::data).as("second recovery" + info)
                    .containsExactlyElementsOf(expected);
            third.close();
        } finally {
            Files.deleteIfExists(file);
        }
    }

    private static int indexOf(List<byte[]> submitted, byte[] data, int from) {
        for (int i = Math.max(0, from - 1); i < submitted.size(); i++) {
            if (java.util.Arrays.equals(submitted.get(i), data)) {
                return i;
            }
        }
        for (int i = 0; i < submitted.size(); i++) {
            if (java.util.Arrays.equals(submitted.get(i), data)) {
                return i;
            }
        }
        return -1;
    }
}
