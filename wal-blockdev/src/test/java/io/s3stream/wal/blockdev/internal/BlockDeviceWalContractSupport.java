package io.s3stream.wal.blockdev.internal;

import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.testing.WriteAheadLogContractTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.UUID;
import java.util.stream.Stream;

/** Runs the WAL contract on a fresh file per test in the directory a subclass names. */
abstract class BlockDeviceWalContractSupport extends WriteAheadLogContractTest {
    static final long CAPACITY = 4L * 1024 * 1024;
    private Path dir;

    /** Where the test files go. */
    protected abstract Path baseDirectory();

    @BeforeEach
    void createDirectory() throws IOException {
        dir = baseDirectory().resolve("wal-contract-" + UUID.randomUUID());
        Files.createDirectories(dir);
    }

    @AfterEach
    void deleteDirectory() throws IOException {
        deleteRecursively(dir);
    }

    static void deleteRecursively(Path dir) throws IOException {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    protected URI uri() {
        return URI.create("blockdev://" + dir.toAbsolutePath().resolve("wal.img").toUri().getRawPath()
                + "?capacity=" + capacityBytes());
    }

    @Override
    protected WriteAheadLog openWal(long nodeId, long nodeEpoch, Duration backpressureTimeout) {
        return new BlockDeviceWalProvider().open(uri(), new WalContext(nodeId, nodeEpoch, dir, backpressureTimeout));
    }

    @Override
    protected long capacityBytes() {
        return CAPACITY;
    }

    @Override
    protected void crash(WriteAheadLog wal) throws Exception {
        ((BlockDeviceWal) wal).halt();
        super.crash(wal);
    }
}
