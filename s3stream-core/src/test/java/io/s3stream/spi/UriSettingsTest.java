package io.s3stream.spi;

import io.s3stream.InvalidConfigException;
import io.s3stream.internal.manifest.ManifestConfig;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The one parser of URI settings, as WAL, object-store and metadata backends use it. */
class UriSettingsTest {

    @Test
    void hierarchicalAndOpaqueUrisAreReadAlikeDecodedAndInOrder() {
        assertThat(UriSettings.query(URI.create("blockdev:///var/wal.img?capacity=2GiB&inflight=4")))
                .containsExactly(Map.entry("capacity", "2GiB"), Map.entry("inflight", "4"));
        assertThat(UriSettings.query(URI.create("manifest:default?pollMs=500&prefix=a%2Fb")))
                .containsExactly(Map.entry("pollMs", "500"), Map.entry("prefix", "a/b"));
        assertThat(UriSettings.query(URI.create("mem://x?flag&&k=v"))).containsExactly(Map.entry("flag", ""),
                Map.entry("k", "v"));
        assertThat(UriSettings.query(URI.create("file:///tmp/objects"))).isEmpty();
        assertThat(UriSettings.query(URI.create("manifest:default"))).isEmpty();
    }

    @Test
    void anUnknownSettingIsNamedWithoutPrintingTheQueryThatMayHoldSecrets() {
        URI uri = URI.create("objectwal://s3/bucket/wal?secretKey=hunter2&batchMz=5");
        assertThatThrownBy(() -> UriSettings.query(uri, Set.of("secretKey", "batchMs")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("objectwal://s3/bucket/wal").hasMessageContaining("'batchMz'")
                .hasMessageContaining("batchMs").hasMessageNotContaining("hunter2");
    }

    @Test
    void theManifestReadsItsSettingsThroughIt() {
        ManifestConfig c = ManifestConfig.fromUri(URI.create("manifest:default?pollMs=250&checkpointEvery=7"));
        assertThat(c.pollMs()).isEqualTo(250);
        assertThat(c.checkpointEvery()).isEqualTo(7);
        assertThatThrownBy(() -> ManifestConfig.fromUri(URI.create("manifest:default?polMs=250")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("polMs");
        assertThatThrownBy(() -> ManifestConfig.fromUri(URI.create("manifest:default?pollMs=soon")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("pollMs");
    }
}
