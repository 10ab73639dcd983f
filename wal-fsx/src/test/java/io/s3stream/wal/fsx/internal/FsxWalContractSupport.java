package io.s3stream.wal.fsx.internal;

import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.testing.SharedWriteAheadLogContractTest;
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

/**
 * The shared-WAL contract on fsx WALs in a fresh directory per test. The owner opens the directory through
 * {@link #ownerRoot()} and a node taking it over through {@link #takeoverRoot()}: two mounts of one file system where a
 * subclass has them, so that takeover crosses from one client to another as between two nodes.
 */
abstract class FsxWalContractSupport extends SharedWriteAheadLogContractTest {
    private String name;

    /** Where the owner sees the shared directory. */
    protected abstract Path ownerRoot();

    /** Where a node taking over sees the same directory (another mount of it, or the same path). */
    protected Path takeoverRoot() {
        return ownerRoot();
    }

    protected String query() {
        return "capacity=" + capacityBytes() + "&segmentBytes=" + capacityBytes() / 4;
    }

    @BeforeEach
    void createDirectory() throws IOException {
        name = "fsx-contract-" + UUID.randomUUID();
        Files.createDirectories(ownerRoot().resolve(name));
    }

    @AfterEach
    void deleteDirectory() throws IOException {
        deleteRecursively(ownerRoot().resolve(name));
    }

    static void deleteRecursively(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    private URI uri(Path root) {
        return URI.create("fsx://" + root.resolve(name).toAbsolutePath().toUri().getRawPath() + "?" + query());
    }

    @Override
    protected WriteAheadLog openWal(long nodeId, long nodeEpoch, Duration backpressureTimeout) {
        return new FsxWalProvider().open(uri(ownerRoot()), new WalContext(nodeId, nodeEpoch, Path.of("."),
                backpressureTimeout));
    }

    @Override
    protected WriteAheadLog openWalForTakeover(long nodeId, long nodeEpoch) {
        return new FsxWalProvider().open(uri(takeoverRoot()), new WalContext(nodeId, nodeEpoch, Path.of("."),
                Duration.ofSeconds(5)).forTakeover());
    }

    @Override
    protected long capacityBytes() {
        return 4L * 1024 * 1024;
    }

    @Override
    protected void crash(WriteAheadLog wal) throws Exception {
        ((FsxWal) wal).halt();
        super.crash(wal);
    }
}
