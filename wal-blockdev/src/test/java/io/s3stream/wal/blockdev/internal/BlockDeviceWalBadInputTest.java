package io.s3stream.wal.blockdev.internal;

import io.s3stream.InvalidConfigException;
import io.s3stream.spi.WriteAheadLogProvider;
import io.s3stream.wal.blockdev.WalTool;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.ServiceLoader;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Bad targets and settings are refused with a message naming the path and the problem; the provider and the tool. */
class BlockDeviceWalBadInputTest {
    private final Path dir = Path.of("target").toAbsolutePath().resolve("wal-bad-" + UUID.randomUUID());

    @AfterEach
    void delete() throws Exception {
        BlockDeviceWalContractSupport.deleteRecursively(dir);
    }

    private static URI uri(Path p, String query) {
        return URI.create("blockdev://" + p.toUri().getRawPath() + (query.isEmpty() ? "" : "?" + query));
    }

    private static void open(URI uri) {
        BlockDeviceWal.open(BlockDeviceWalConfig.parse(uri), TestWals.context(1)).close();
    }

    @Test
    void newFileIsCreatedPreWrittenWithTheDefaultOrRequestedCapacity() throws Exception {
        Path file = dir.resolve("sub/wal.img");
        open(uri(file, "capacity=3MiB"));
        assertThat(Files.size(file)).isEqualTo(3L << 20);
        assertThat(Files.exists(dir.resolve("sub/wal.img.creating"))).isFalse();
        open(uri(file, "")); // no capacity: the file's own size
        assertThat(BlockDeviceWalConfig.DEFAULT_CAPACITY_BYTES).isEqualTo(512L << 20);
    }

    @Test
    void capacityMismatchNamesThePathAndBothSizes() {
        Path file = dir.resolve("wal.img");
        open(uri(file, "capacity=2MiB"));
        assertThatThrownBy(() -> open(uri(file, "capacity=4MiB"))).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("2097152").hasMessageContaining("4194304");
    }

    @Test
    void unalignedFileIsRefused() throws Exception {
        Files.createDirectories(dir);
        Path file = dir.resolve("odd.img");
        Files.write(file, new byte[(2 << 20) + 100]);
        assertThatThrownBy(() -> open(uri(file, ""))).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("not a multiple of 4096");
    }

    @Test
    void tooSmallIsRefused() {
        Path file = dir.resolve("tiny.img");
        assertThatThrownBy(() -> open(uri(file, "capacity=64KiB"))).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("too small");
    }

    @Test
    void directoryAndCharacterDeviceAreRefused() throws Exception {
        Files.createDirectories(dir);
        assertThatThrownBy(() -> open(uri(dir, ""))).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining(dir.toString()).hasMessageContaining("directory");
        assertThatThrownBy(() -> open(URI.create("blockdev:///dev/null"))).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("/dev/null").hasMessageContaining("neither a regular file nor a block device");
    }

    @Test
    void fileOfZerosWithoutAHeaderIsFormatted() throws Exception {
        Files.createDirectories(dir);
        Path file = dir.resolve("zeros.img");
        Files.write(file, new byte[2 << 20]);
        BlockDeviceWalConfig config = BlockDeviceWalConfig.parse(uri(file, ""));
        BlockDeviceWal wal = TestWals.open(config, 3); // all zeros: formatted, the file's own size
        assertThat(TestWals.recover(wal)).as("a formatted log holds no record").isEmpty();
        TestWals.appendSync(wal, new byte[] {4, 5, 6});
        wal.close();
        byte[] head = new byte[4096];
        try (var in = Files.newInputStream(file)) {
            assertThat(in.readNBytes(head, 0, head.length)).isEqualTo(head.length);
        }
        assertThat(head).as("a header was written").isNotEqualTo(new byte[head.length]);
        assertThat(Files.size(file)).as("the file keeps its size").isEqualTo(2L << 20);

        BlockDeviceWal reopened = TestWals.open(config, 4);
        try {
            List<TestWals.Recovered> records = TestWals.recover(reopened);
            assertThat(records).as("the append after formatting is recovered").hasSize(1);
            assertThat(records.get(0).data()).containsExactly(4, 5, 6);
        } finally {
            reopened.close();
        }
    }

    @Test
    void badUrisAreRefused() {
        assertThatThrownBy(() -> BlockDeviceWalConfig.parse(URI.create("blockdev://host/x")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("three slashes");
        assertThatThrownBy(() -> BlockDeviceWalConfig.parse(URI.create("blockdev:///x?capacity=lots")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("capacity");
        assertThatThrownBy(() -> BlockDeviceWalConfig.parse(URI.create("blockdev:///x?inflight=99")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("inflight");
        assertThatThrownBy(() -> BlockDeviceWalConfig.parse(URI.create("blockdev:///x?colour=red")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("colour");
        assertThat(BlockDeviceWalConfig.parse(URI.create("blockdev:///x?capacity=2GiB")).capacityBytes())
                .isEqualTo(2L << 30);
    }

    @Test
    void providerIsFoundByServiceLoaderAndProposesAFileUnderTheDataDir() {
        WriteAheadLogProvider provider = ServiceLoader.load(WriteAheadLogProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.scheme().equals("blockdev")).findFirst().orElseThrow();
        assertThat(provider.defaultUri(Path.of("/var/lib/app"))).contains(URI.create("blockdev:///var/lib/app/wal.img"));
    }

    @Test
    void walToolPrintsHeadersAndRecords() throws Exception {
        Path file = dir.resolve("wal.img");
        BlockDeviceWalConfig config = TestWals.config(file, 2L << 20, 1);
        BlockDeviceWal wal = TestWals.open(config, 7);
        TestWals.recover(wal);
        TestWals.appendSync(wal, new byte[]{1, 2, 3});
        TestWals.appendSync(wal, new byte[5000]);
        wal.close();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int status = WalTool.print(file.toString(), new PrintStream(bytes, true, StandardCharsets.UTF_8),
                (position, payload) -> "first byte " + payload.get(0), 100);
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertThat(status).isZero();
        assertThat(out).contains("nodeEpoch 7").contains("record position 0 next 64 size 3 session 1 crc ok first byte 1")
                .contains("size 5000").contains("2 records, 5003 payload bytes");
    }
}
