package io.s3stream.wal.blockdev.internal;

import org.junit.jupiter.api.Assumptions;

import java.nio.file.Files;
import java.nio.file.Path;

/** The WAL contract on tmpfs (/dev/shm): O_DIRECT works there but nothing is durable; a fast functional run. */
class BlockDeviceWalShmTest extends BlockDeviceWalContractSupport {
    @Override
    protected Path baseDirectory() {
        Path shm = Path.of("/dev/shm");
        Assumptions.assumeTrue(Files.isDirectory(shm) || "true".equals(System.getenv("CI")), "no /dev/shm");
        return shm;
    }
}
