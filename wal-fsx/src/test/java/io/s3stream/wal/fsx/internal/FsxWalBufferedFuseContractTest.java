package io.s3stream.wal.fsx.internal;

import io.s3stream.testing.LatencyFs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The shared-WAL contract on latencyfs mounts that refuse {@code O_DIRECT} (as some NFS and FUSE file systems do): the
 * WAL falls back to {@code pwrite} + {@code fdatasync} and reads the owner file by reopening it (close-to-open).
 */
class FsxWalBufferedFuseContractTest extends FsxWalContractSupport {
    private static Path base;
    private static LatencyFs nodeA;
    private static LatencyFs nodeB;

    @BeforeAll
    static void mount() throws IOException {
        base = Files.createTempDirectory("fsx-fuse-");
        nodeA = LatencyFs.mount(base.resolve("backing"), base.resolve("a"), "-refuse-direct");
        nodeB = LatencyFs.mount(base.resolve("backing"), base.resolve("b"), "-refuse-direct");
    }

    @AfterAll
    static void unmount() throws IOException {
        if (nodeA != null) {
            nodeA.close();
        }
        if (nodeB != null) {
            nodeB.close();
        }
        deleteRecursively(base);
    }

    @Override
    protected Path ownerRoot() {
        return nodeA.mountPoint();
    }

    @Override
    protected Path takeoverRoot() {
        return nodeB.mountPoint();
    }

    @Test
    void fallsBackToBufferedIoWhenTheFileSystemRefusesODirect() throws Exception {
        FsxWal wal = (FsxWal) open(1, 1);
        assertThat(wal.directIo()).isFalse();
        assertThat(wal.description()).contains("buffered IO + fdatasync");
        assertThat(nodeA.stats()).containsPattern("\"directRefused\":[1-9]");
    }
}
