package io.s3stream.internal.store;

import io.s3stream.InvalidConfigException;
import io.s3stream.spi.ObjectStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Finding object store backends by URI scheme. */
class ObjectStoresTest {

    @Test
    void findsTheBuiltInProvidersThroughServiceLoader() {
        assertThat(ObjectStores.availableSchemes()).contains("file", "mem");
    }

    @Test
    void opensAMemStoreCaseInsensitively() {
        String name = "stores-" + UUID.randomUUID();
        try (ObjectStore store = ObjectStores.open("MEM://" + name)) {
            assertThat(store).isInstanceOf(MemObjectStore.class);
        } finally {
            MemObjectStore.clear(name);
        }
    }

    @Test
    void opensAFileStoreAndCreatesItsDirectory(@TempDir Path dir) {
        Path root = dir.resolve("a").resolve("b");
        try (ObjectStore store = ObjectStores.open(root.toUri().toString())) {
            assertThat(store).isInstanceOf(FileObjectStore.class);
            assertThat(store.description()).isEqualTo("file://" + root);
        }
        assertThat(Files.isDirectory(root)).isTrue();
    }

    @Test
    void unknownSchemeListsTheAvailableOnes() {
        assertThatThrownBy(() -> ObjectStores.open("nope://bucket/prefix"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("objectStore")
                .hasMessageContaining("nope://bucket/prefix")
                .hasMessageContaining("'nope'")
                .hasMessageContaining("file")
                .hasMessageContaining("mem");
    }

    @Test
    void s3AndAzureWithoutTheirModulesNameTheArtifactToAddAndNoSecret() {
        // Core's own test class path holds neither store module: this is what an embedder without them sees.
        assertThatThrownBy(() -> ObjectStores.open("s3://bucket/prefix?region=eu-west-1&secretKey=hunter2"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("s3://bucket/prefix")
                .hasMessageContaining("add the artifact io.s3stream:s3stream-store-s3")
                .hasMessageNotContaining("hunter2");
        assertThatThrownBy(() -> ObjectStores.open("azblob://account/container/prefix?key=k"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("add the artifact io.s3stream:s3stream-store-azure");
    }

    @Test
    void malformedUriNamesTheSettingAndValue() {
        assertThatThrownBy(() -> ObjectStores.open("file:///with space/x"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("objectStore")
                .hasMessageContaining("file:///with space/x");
        assertThatThrownBy(() -> ObjectStores.open("/var/lib/objects"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("objectStore")
                .hasMessageContaining("no scheme")
                .hasMessageContaining("file");
        assertThatThrownBy(() -> ObjectStores.open(" "))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("objectStore");
        assertThatThrownBy(() -> ObjectStores.open(null))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("objectStore");
    }
}
