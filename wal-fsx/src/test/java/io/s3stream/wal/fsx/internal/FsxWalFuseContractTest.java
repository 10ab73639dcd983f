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
 * The shared-WAL contract on latencyfs, a FUSE file system: the owner writes through one mount and the node taking
 * it over reads through a second mount of the same backing directory, as two nodes sharing a file server.
 */
class FsxWalFuseContractTest extends FsxWalContractSupport {
    private static Path base;
    private static LatencyFs nodeA;
    private static LatencyFs nodeB;

    @BeforeAll
    static void mount() throws IOException {
        base = Files.createTempDirectory("fsx-fuse-");
        nodeA = LatencyFs.mount(base.resolve("backing"), base.resolve("a"));
        nodeB = LatencyFs.mount(base.resolve("backing"), base.resolve("b"));
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
    void usesDirectIoThroughFuse() throws Exception {
        FsxWal wal = (FsxWal) open(1, 1);
        assertThat(wal.directIo()).isTrue();
    }
}
