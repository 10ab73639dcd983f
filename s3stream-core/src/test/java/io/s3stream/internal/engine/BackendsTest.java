package io.s3stream.internal.engine;

import io.s3stream.InvalidConfigException;
import io.s3stream.StorageConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Finding the WAL backend by scheme. Core's own test class path holds none of the WAL modules, which is what an
 * embedder who forgot one sees.
 */
class BackendsTest {

    private static StorageConfig withWal(Path dir, String wal) {
        return StorageConfig.builder().nodeId(1).dataDir(dir).objectStore("mem://backends").wal(wal).build();
    }

    @Test
    void aWalOfAModuleThatIsMissingNamesTheArtifactToAddAndNoSecret(@TempDir Path dir) {
        assertThatThrownBy(() -> Backends.walBackend(withWal(dir, "objectwal://s3/bucket/wal?secretKey=hunter2")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("objectwal://s3/bucket/wal")
                .hasMessageContaining("add the artifact io.s3stream:s3stream-wal-object")
                .hasMessageNotContaining("hunter2");
        assertThatThrownBy(() -> Backends.walBackend(withWal(dir, "fsx:///mnt/fsx/s3stream")))
                .hasMessageContaining("io.s3stream:s3stream-wal-fsx");
        assertThatThrownBy(() -> Backends.walBackend(withWal(dir, "blockdev:///dev/nvme1n1")))
                .hasMessageContaining("io.s3stream:s3stream-wal-blockdev");
    }

    @Test
    void anUnknownWalSchemeListsTheAvailableOnes(@TempDir Path dir) {
        assertThatThrownBy(() -> Backends.walBackend(withWal(dir, "nope://x")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'nope'")
                .hasMessageContaining("mem")
                .hasMessageNotContaining("add the artifact");
    }

    @Test
    void aKnownSchemeFindsItsProvider(@TempDir Path dir) {
        assertThat(Backends.walBackend(withWal(dir, "mem://backends-wal")).provider().scheme()).isEqualTo("mem");
    }
}
