package io.s3stream.wal.fsx.internal;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The shared-WAL contract on tmpfs (which accepts O_DIRECT since Linux 6.6, and refuses it before). */
class FsxWalTmpfsContractTest extends FsxWalContractSupport {
    private static Path root;

    @BeforeAll
    static void createRoot() throws IOException {
        Path shm = Path.of("/dev/shm");
        assertThat(shm).as("tmpfs at /dev/shm").isDirectory();
        root = Files.createTempDirectory(shm, "fsx-tmpfs-");
    }

    @AfterAll
    static void deleteRoot() throws IOException {
        deleteRecursively(root);
    }

    @Override
    protected Path ownerRoot() {
        return root;
    }
}
