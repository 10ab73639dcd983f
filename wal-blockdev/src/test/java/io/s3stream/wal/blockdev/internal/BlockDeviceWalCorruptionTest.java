package io.s3stream.wal.blockdev.internal;

import io.s3stream.InvalidConfigException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;

import static io.s3stream.wal.blockdev.internal.WalDescriptor.BLOCK_BYTES;
import static io.s3stream.wal.blockdev.internal.WalDescriptor.RECORD_HEADER_BYTES;
import static io.s3stream.wal.blockdev.internal.WalDescriptor.RECORD_MAGIC;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Recovery over hand-written headers and records at chosen positions: a record spanning the ring end, stale records
 * of an earlier lap, orphans of an earlier session, a torn header slot, and headers that must be refused.
 */
class BlockDeviceWalCorruptionTest {
    private static final long CAPACITY = 2L * 1024 * 1024;
    private static final long RING = CAPACITY - WalDescriptor.RING_OFFSET;
    private final Path file = Path.of("target").toAbsolutePath().resolve("wal-corrupt-" + UUID.randomUUID() + ".img");
    private final BlockDeviceWalConfig config = TestWals.config(file, CAPACITY, 1);
    private final Arena arena = Arena.ofConfined();
    private int walId;

    @AfterEach
    void delete() throws Exception {
        arena.close();
        Files.deleteIfExists(file);
    }

    /** Creates the file and returns its fresh header's WAL id. */
    private void format() {
        WalTarget.open(config).io().close();
        try (NativeBlockIo io = NativeBlockIo.open(file.toString())) {
            MemorySegment block = arena.allocate(BLOCK_BYTES, BLOCK_BYTES);
            io.read(BLOCK_BYTES, block);
            walId = WalDescriptor.decodeHeader(block).header().walId();
        }
    }

    private void writeHeader(int slot, long sequence, long trim, long scanStart, int session, boolean tear) {
        MemorySegment block = arena.allocate(BLOCK_BYTES, BLOCK_BYTES);
        WalDescriptor.encodeHeader(block, new WalDescriptor.Header(CAPACITY, sequence, trim, scanStart, 1, 1, walId,
                session));
        if (tear) {
            block.asSlice(WalDescriptor.H_TRIM_POSITION, 16).fill((byte) 0x5a);
        }
        try (NativeBlockIo io = NativeBlockIo.open(file.toString())) {
            io.write((long) slot * BLOCK_BYTES, block);
        }
    }

    /** Writes one group at {@code position}: records with these payload sizes, then padding to the block end. */
    private byte[][] writeGroup(long position, int session, int... sizes) {
        long total = 0;
        for (int size : sizes) {
            total += WalDescriptor.footprint(size);
        }
        long length = WalDescriptor.alignUp(total, BLOCK_BYTES);
        MemorySegment buf = arena.allocate(length, BLOCK_BYTES);
        byte[][] payloads = new byte[sizes.length][];
        long off = 0;
        for (int i = 0; i < sizes.length; i++) {
            payloads[i] = new byte[sizes[i]];
            new java.util.Random(position + i).nextBytes(payloads[i]);
            MemorySegment.copy(payloads[i], 0, buf, ValueLayout.JAVA_BYTE, off + RECORD_HEADER_BYTES, sizes[i]);
            WalDescriptor.encodeRecordHeader(buf, off, RECORD_MAGIC, sizes[i], position + off, walId, session,
                    WalDescriptor.crc(buf, off + RECORD_HEADER_BYTES, sizes[i]));
            off += WalDescriptor.footprint(sizes[i]);
        }
        if (length > off) {
            WalDescriptor.encodePad(buf, off, (int) (length - off), position + off, walId, session);
        }
        try (NativeBlockIo io = NativeBlockIo.open(file.toString())) {
            RingScanner.writeRing(io, RING, position, buf);
        }
        return payloads;
    }

    private List<TestWals.Recovered> recover(long epoch) {
        BlockDeviceWal wal = TestWals.open(config, epoch);
        try {
            return TestWals.recover(wal);
        } finally {
            wal.close();
        }
    }

    @Test
    void recordSpanningTheRingEndIsRecovered() {
        format();
        long start = 3 * RING - 2 * BLOCK_BYTES; // third lap, two blocks before the physical end
        writeHeader(0, 2, start, start, 1, false);
        byte[][] group = writeGroup(start, 1, 100, 20_000, 300);
        List<TestWals.Recovered> recovered = recover(2);
        assertThat(recovered).extracting(TestWals.Recovered::data).containsExactly(group);
        assertThat(recovered.get(1).position()).isEqualTo(start + WalDescriptor.footprint(100));
        assertThat(recovered.get(2).position() % RING).as("the third record is past the wrap").isLessThan(RING / 2);
    }

    @Test
    void staleRecordsOfAnEarlierLapAreNotAccepted() {
        format();
        long start = RING + 8 * BLOCK_BYTES; // second lap
        byte[][] current = writeGroup(start, 1, 1000);
        byte[][] previousLap = writeGroup(start + BLOCK_BYTES - RING, 1, 2000); // physically right after, lap one
        assertThat(previousLap).hasDimensions(1, 2000);
        writeHeader(0, 2, start, start, 1, false);
        List<TestWals.Recovered> recovered = recover(2);
        assertThat(recovered).extracting(TestWals.Recovered::data).containsExactly(current);
    }

    @Test
    void orphanOfAnEarlierSessionBehindANewerOneIsNotAccepted() {
        format();
        byte[][] s1 = writeGroup(0, 1, 500);
        byte[][] s2 = writeGroup(BLOCK_BYTES, 2, 700);
        writeGroup(2 * BLOCK_BYTES, 1, 900); // durable orphan of session 1 that a lost write once hid
        writeHeader(0, 2, 0, 0, 2, false);
        List<TestWals.Recovered> recovered = recover(2);
        assertThat(recovered).extracting(TestWals.Recovered::data).containsExactly(s1[0], s2[0]);
    }

    @Test
    void tornHeaderSlotFallsBackToTheOtherSlot() {
        format();
        byte[][] a = writeGroup(0, 1, 500);
        byte[][] b = writeGroup(BLOCK_BYTES, 1, 600);
        writeHeader(1, 3, 0, 0, 1, false);                 // older: nothing trimmed
        writeHeader(0, 4, BLOCK_BYTES, BLOCK_BYTES, 1, true); // newer trim, torn
        List<TestWals.Recovered> recovered = recover(2);
        assertThat(recovered).extracting(TestWals.Recovered::data).containsExactly(a[0], b[0]);
    }

    @Test
    void newerValidHeaderSlotWins() {
        format();
        writeGroup(0, 1, 500);
        byte[][] b = writeGroup(BLOCK_BYTES, 1, 600);
        writeHeader(1, 3, 0, 0, 1, false);
        writeHeader(0, 4, BLOCK_BYTES, BLOCK_BYTES, 1, false);
        assertThat(recover(2)).extracting(TestWals.Recovered::data).containsExactly(b[0]);
    }

    @Test
    void tornTailRecordIsCutAndTheNextSessionContinuesCleanly() throws Exception {
        format();
        byte[][] group = writeGroup(0, 1, 100, 9000);
        // Damage the second record's last block: its header stays valid, its body checksum does not.
        try (NativeBlockIo io = NativeBlockIo.open(file.toString())) {
            MemorySegment zero = arena.allocate(BLOCK_BYTES, BLOCK_BYTES);
            io.write(WalDescriptor.RING_OFFSET + 2 * BLOCK_BYTES, zero);
        }
        writeHeader(0, 2, 0, 0, 1, false);
        BlockDeviceWal wal = TestWals.open(config, 2);
        var result = wal.recover((p, n, buf) -> buf.release());
        assertThat(result.records()).isEqualTo(1);
        assertThat(result.stoppedEarly()).isTrue();
        assertThat(result.detail()).contains("checksum");
        byte[] next = new byte[50];
        TestWals.appendSync(wal, next);
        wal.halt();
        assertThat(recover(3)).extracting(TestWals.Recovered::data).containsExactly(group[0], next);
    }

    @Test
    void bothHeaderSlotsDamagedIsRefusedNamingThePath() {
        format();
        writeHeader(0, 2, 0, 0, 1, true);
        writeHeader(1, 3, 0, 0, 1, true);
        assertThatThrownBy(() -> TestWals.open(config, 1)).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("checksum");
    }

    @Test
    void incompatibleVersionIsRefused() {
        format();
        MemorySegment block = arena.allocate(BLOCK_BYTES, BLOCK_BYTES);
        WalDescriptor.encodeHeader(block, new WalDescriptor.Header(CAPACITY, 5, 0, 0, 1, 1, walId, 1));
        block.set(ValueLayout.JAVA_INT_UNALIGNED, WalDescriptor.H_VERSION, 2);
        block.set(ValueLayout.JAVA_INT_UNALIGNED, WalDescriptor.H_CRC, WalDescriptor.crc(block, 0, WalDescriptor.H_CRC));
        try (NativeBlockIo io = NativeBlockIo.open(file.toString())) {
            io.write(0, block);
        }
        assertThatThrownBy(() -> TestWals.open(config, 1)).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("incompatible layout version 2");
    }
}
