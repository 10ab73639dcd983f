package io.s3stream.wal.fsx.internal;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The shared-WAL contract on a local directory (ext4 or xfs: direct IO accepted). */
class FsxWalLocalDirectoryContractTest extends FsxWalContractSupport {
    @TempDir
    Path root;

    @Override
    protected Path ownerRoot() {
        return root;
    }

    @Test
    void usesDirectIoWhereTheFileSystemAcceptsIt() throws Exception {
        FsxWal wal = (FsxWal) open(1, 1);
        assertThat(wal.directIo()).isTrue();
        assertThat(wal.description()).contains("direct IO");
    }
}
