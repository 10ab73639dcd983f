package io.s3stream.wal.fsx.internal;

import io.s3stream.testing.EngineCrashHarness;
import io.s3stream.testing.LatencyFs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The engine-level SIGKILL crash test ({@link EngineCrashHarness}) on {@code fsx://} in a latencyfs (FUSE) mount:
 * every acknowledged batch is read back after each kill; each restart seals the previous generation and writes a new
 * one.
 */
class FsxWalEngineCrashTest extends EngineCrashHarness {
    private static Path base;
    private static LatencyFs mount;

    @BeforeAll
    static void mount() throws IOException {
        base = Files.createTempDirectory("fsx-crash-");
        mount = LatencyFs.mount(base.resolve("backing"), base.resolve("mnt"));
    }

    @AfterAll
    static void unmount() throws IOException {
        if (mount != null) {
            mount.close();
        }
        FsxWalContractSupport.deleteRecursively(base);
    }

    @Override
    protected String walUri(Path dataDir) {
        Path dir = mount.mountPoint().resolve("wal-" + dataDir.getFileName());
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return "fsx://" + dir + "?capacity=" + WAL_CAPACITY + "&segmentBytes=2MiB";
    }
}
