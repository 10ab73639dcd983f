package io.s3stream.wal.blockdev.internal;

import io.s3stream.StorageIOException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ExecutionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Device errors fence the WAL with the errno in the message; bit flips are never returned as data. */
class BlockDeviceWalFaultTest {
    private static final long CAPACITY = 2L * 1024 * 1024;
    private final Path file = Path.of("target").toAbsolutePath().resolve("wal-fault-" + UUID.randomUUID() + ".img");
    private final long seed = System.nanoTime();
    private final Random random = new Random(seed);

    @AfterEach
    void delete() throws Exception {
        Files.deleteIfExists(file);
    }

    private byte[] record(int max) {
        byte[] b = new byte[1 + random.nextInt(max)];
        random.nextBytes(b);
        return b;
    }

    @Test
    void eioFencesTheWalAndAcknowledgedRecordsSurvive() throws Exception {
        assertWriteErrorFences(Errno.EIO, "EIO (errno 5");
    }

    @Test
    void enospcFencesTheWalAndAcknowledgedRecordsSurvive() throws Exception {
        assertWriteErrorFences(Errno.ENOSPC, "ENOSPC (errno 28");
    }

    private void assertWriteErrorFences(int errno, String expected) throws Exception {
        BlockDeviceWalConfig config = TestWals.config(file, CAPACITY, 2);
        FaultyBlockIo[] faulty = new FaultyBlockIo[1];
        BlockDeviceWal wal = TestWals.open(config, 1, io -> faulty[0] = new FaultyBlockIo(io));
        TestWals.recover(wal);
        List<byte[]> acked = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            byte[] b = record(3000);
            TestWals.appendSync(wal, b);
            acked.add(b);
        }
        faulty[0].failWrite(1, errno);
        assertThatThrownBy(() -> TestWals.appendSync(wal, record(100)))
                .isInstanceOf(ExecutionException.class).cause().isInstanceOf(StorageIOException.class)
                .hasMessageContaining(expected).hasMessageContaining(file.toString()).hasMessageContaining("fenced");
        long writesBefore = faulty[0].writeCount();
        assertThatThrownBy(() -> TestWals.appendSync(wal, record(100)))
                .isInstanceOf(ExecutionException.class).cause().isInstanceOf(StorageIOException.class)
                .hasMessageContaining(expected);
        assertThat(faulty[0].writeCount()).as("a fenced WAL fails fast without writing").isEqualTo(writesBefore);
        assertThatThrownBy(() -> wal.trim(Long.MAX_VALUE).get()).cause().isInstanceOf(StorageIOException.class);
        wal.close();

        BlockDeviceWal reopened = TestWals.open(config, 2);
        assertThat(TestWals.recover(reopened)).extracting(TestWals.Recovered::data)
                .as("seed " + seed).containsExactlyElementsOf(acked);
        reopened.close();
    }

    @Test
    void aFlippedBitIsNeverReturnedAsData() throws Exception {
        BlockDeviceWalConfig config = TestWals.config(file, CAPACITY, 1);
        for (int round = 0; round < 20; round++) {
            Files.deleteIfExists(file);
            BlockDeviceWal wal = TestWals.open(config, 1);
            TestWals.recover(wal);
            List<byte[]> written = new ArrayList<>();
            List<Long> positions = new ArrayList<>();
            long end = 0;
            for (int i = 0; i < 30; i++) {
                byte[] b = record(8000);
                var r = TestWals.appendSync(wal, b);
                positions.add(r.walPosition());
                end = r.nextPosition();
                written.add(b);
            }
            wal.close();
            long victim = random.nextLong(end);
            try (NativeBlockIo io = NativeBlockIo.open(file.toString())) {
                new FaultyBlockIo(io).flipBit(WalDescriptor.RING_OFFSET + victim, random.nextInt(8));
            }
            BlockDeviceWal reopened = TestWals.open(config, 2);
            List<TestWals.Recovered> recovered = TestWals.recover(reopened);
            reopened.close();
            int hit = -1; // the record whose header or payload holds the flipped bit (padding is not data)
            for (int i = 0; i < written.size(); i++) {
                long start = positions.get(i);
                if (victim >= start && victim < start + WalDescriptor.RECORD_HEADER_BYTES + written.get(i).length) {
                    hit = i;
                }
            }
            if (hit >= 0) {
                assertThat(recovered.size()).as("the damaged record and those after it are not returned (seed "
                        + seed + ", byte " + victim + ")").isLessThanOrEqualTo(hit);
            }
            for (int i = 0; i < recovered.size(); i++) {
                assertThat(recovered.get(i).data()).as("seed " + seed).isEqualTo(written.get(i));
            }
        }
    }
}
