package io.s3stream.internal.util;

import io.s3stream.InvalidConfigException;
import io.s3stream.internal.metadata.InMemoryMetadataStoreProvider;
import io.s3stream.internal.store.ObjectStores;
import io.s3stream.internal.wal.InMemoryWalProvider;
import io.s3stream.spi.WalContext;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** One form of in-memory URI, {@code mem://name}, parsed the same way by the WAL, the object store and the metadata. */
class MemNamesTest {

    @Test
    void theNameIsTheAuthorityAndTheQueryIsLeftToTheBackend() {
        assertThat(MemNames.of(URI.create("mem://node-1-wal?capacity=64MiB"), "mem WAL")).isEqualTo("node-1-wal");
        assertThat(MemNames.of(URI.create("MEM://x"), "mem object store")).isEqualTo("x");
    }

    @Test
    void everyOtherFormIsRefusedWithTheBackendNamedAndNoQuery() {
        for (String bad : new String[] {"mem:///", "mem:///path", "mem://name/path", "mem:?secret=1", "file:///x"}) {
            assertThatThrownBy(() -> MemNames.of(URI.create(bad), "mem WAL"))
                    .as(bad).isInstanceOf(InvalidConfigException.class)
                    .hasMessageContaining("mem WAL URI").hasMessageContaining("mem://name")
                    .hasMessageNotContaining("secret");
        }
        assertThatThrownBy(() -> MemNames.of(null, "mem metadata")).isInstanceOf(InvalidConfigException.class);
    }

    @Test
    void theThreeBackendsRefuseTheSameMalformedUri() {
        URI noName = URI.create("mem:///path");
        assertThatThrownBy(() -> ObjectStores.open(noName.toString()))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("mem object store URI");
        assertThatThrownBy(() -> new InMemoryMetadataStoreProvider().open(noName, null))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("mem metadata URI");
        WalContext context = new WalContext(1, 1, Path.of("target"), Duration.ofSeconds(1));
        assertThatThrownBy(() -> new InMemoryWalProvider().open(noName, context))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("mem WAL URI");
    }
}
