package io.s3stream.wal.fsx.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.s3stream.StorageIOException;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.testing.LatencyFs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Faults of the shared file system, injected by latencyfs: failed writes (EIO, ENOSPC, EDQUOT), a write that never
 * returns (direct IO) and an {@code fdatasync} that never returns (buffered IO, on a mount that refuses O_DIRECT). In
 * every case the append fails with an error naming the cause, later appends fail too (the WAL is fenced), the process
 * stays responsive (close returns), and a later recovery delivers every acknowledged record.
 */
class FsxWalFaultTest {
    private static Path base;
    private static LatencyFs direct;
    private static LatencyFs buffered;
    private final Random random = new Random();
    private String name;
    private final List<WriteAheadLog> opened = new ArrayList<>();

    @BeforeAll
    static void mount() throws IOException {
        base = Files.createTempDirectory("fsx-faults-");
        direct = LatencyFs.mount(base.resolve("backing"), base.resolve("direct"));
        buffered = LatencyFs.mount(base.resolve("backing"), base.resolve("buffered"), "-refuse-direct");
    }

    @AfterAll
    static void unmount() throws IOException {
        if (direct != null) {
            direct.close();
        }
        if (buffered != null) {
            buffered.close();
        }
        FsxWalContractSupport.deleteRecursively(base);
    }

    @BeforeEach
    void directory() throws IOException {
        name = "faults-" + UUID.randomUUID();
        Files.createDirectories(direct.mountPoint().resolve(name));
    }

    @AfterEach
    void clear() {
        direct.set("writeErr=none&fsyncErr=none&hangWrite=0&hangFsync=0&faultPath=");
        buffered.set("writeErr=none&fsyncErr=none&hangWrite=0&hangFsync=0&faultPath=");
        opened.forEach(WriteAheadLog::close);
    }

    private WriteAheadLog open(LatencyFs mount, long epoch, String extra) {
        URI uri = URI.create("fsx://" + mount.mountPoint().resolve(name) + "?capacity=4MiB&segmentBytes=1MiB" + extra);
        WriteAheadLog wal = new FsxWalProvider().open(uri, new WalContext(1, epoch, Path.of("."),
                Duration.ofSeconds(5)));
        opened.add(wal);
        return wal;
    }

    private List<byte[]> appendAcknowledged(WriteAheadLog wal, int count) throws Exception {
        List<byte[]> acked = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] data = new byte[1 + random.nextInt(3000)];
            random.nextBytes(data);
            append(wal, data).get(10, TimeUnit.SECONDS);
            acked.add(data);
        }
        return acked;
    }

    private static CompletableFuture<?> append(WriteAheadLog wal, byte[] data) {
        ByteBuf buf = Unpooled.wrappedBuffer(data);
        return wal.append(buf).whenComplete((r, e) -> buf.release());
    }

    private static List<byte[]> recovered(WriteAheadLog wal) {
        List<byte[]> out = new ArrayList<>();
        wal.recover((position, next, record) -> {
            byte[] bytes = new byte[record.readableBytes()];
            record.readBytes(bytes);
            record.release();
            out.add(bytes);
        });
        return out;
    }

    private static Throwable failure(CompletableFuture<?> f) {
        try {
            f.get(30, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (Exception e) {
            throw new AssertionError("the append neither completed nor failed: " + e, e);
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"EIO", "ENOSPC", "EDQUOT"})
    void aFailedWriteFencesTheWalAndLosesNothingAcknowledged(String errno) throws Exception {
        WriteAheadLog wal = open(direct, 1, "");
        recovered(wal);
        List<byte[]> acked = appendAcknowledged(wal, 20);

        direct.set("writeErr=" + errno + "&faultPath=gen-");
        Throwable failed = failure(append(wal, new byte[100]));
        assertThat(failed).isInstanceOf(StorageIOException.class).hasMessageContaining(errno)
                .hasMessageContaining("fenced");
        assertThat(failure(append(wal, new byte[100]))).as("later appends fail too")
                .isInstanceOf(StorageIOException.class);
        direct.set("writeErr=none");
        wal.close();

        assertThat(recovered(open(direct, 2, ""))).as("every acknowledged record, nothing else")
                .containsExactlyElementsOf(acked);
    }

    @Test
    void aWriteThatNeverReturnsTimesOutWithAClearError() throws Exception {
        WriteAheadLog wal = open(direct, 1, "&writeTimeoutMs=500");
        recovered(wal);
        List<byte[]> acked = appendAcknowledged(wal, 20);

        direct.set("hangWrite=1&faultPath=gen-");
        long started = System.nanoTime();
        Throwable failed = failure(append(wal, new byte[100]));
        assertThat(failed).isInstanceOf(StorageIOException.class).hasMessageContaining("has not returned after 500 ms")
                .hasMessageContaining("stopped answering");
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(10));
        assertThat(failure(append(wal, new byte[100]))).isInstanceOf(StorageIOException.class);
        wal.close(); // returns although a write is still stuck in the file system

        direct.set("hangWrite=0");
        List<byte[]> after = recovered(open(direct, 2, ""));
        assertThat(after.size()).as("acknowledged records, then at most the timed-out one")
                .isBetween(acked.size(), acked.size() + 1);
        assertThat(after.subList(0, acked.size())).containsExactlyElementsOf(acked);
    }

    @Test
    void anFdatasyncThatNeverReturnsTimesOutWithAClearError() throws Exception {
        WriteAheadLog wal = open(buffered, 1, "&writeTimeoutMs=500");
        recovered(wal);
        assertThat(((FsxWal) wal).directIo()).isFalse();
        List<byte[]> acked = appendAcknowledged(wal, 20);

        buffered.set("hangFsync=1&faultPath=gen-");
        Throwable failed = failure(append(wal, new byte[100]));
        assertThat(failed).isInstanceOf(StorageIOException.class).hasMessageContaining("has not returned");
        wal.close();

        buffered.set("hangFsync=0");
        List<byte[]> after = recovered(open(buffered, 2, ""));
        assertThat(after.size()).isBetween(acked.size(), acked.size() + 1);
        assertThat(after.subList(0, acked.size())).containsExactlyElementsOf(acked);
    }

    @Test
    void anOwnerFileThatCannotBeWrittenFailsRecoveryClearly() {
        direct.set("writeErr=EIO&faultPath=owner");
        WriteAheadLog wal = open(direct, 1, "");
        assertThatThrownBy(() -> recovered(wal)).isInstanceOf(StorageIOException.class)
                .hasMessageContaining("EIO").hasMessageContaining("owner");
    }
}
