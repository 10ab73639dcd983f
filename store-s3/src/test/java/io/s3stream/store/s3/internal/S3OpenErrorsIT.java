package io.s3stream.store.s3.internal;

import io.s3stream.StorageConfig;
import io.s3stream.StreamStorage;
import io.s3stream.spi.ObjectStoreException;
import io.s3stream.testing.S3Server;
import io.s3stream.testing.TestStores;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Wrong credentials, a missing bucket, an unreachable endpoint: a precise error when the store opens, not a hang. */
class S3OpenErrorsIT {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    @TempDir
    Path dir;

    @Test
    void wrongCredentialsAreReportedAtOpen() {
        String uri = S3.uri("p").replace("secretKey=" + S3.server().secretKey(), "secretKey=wrong");
        assertThatThrownBy(() -> TestStores.open(uri)).isInstanceOf(ObjectStoreException.class)
                .hasMessageContaining("s3stream-test").hasMessageContaining("access denied")
                .hasMessageContaining("403").hasMessageNotContaining("wrong");
    }

    @Test
    void aMissingBucketIsReportedAtOpen() {
        String uri = S3.uri("p").replace("s3://s3stream-test/", "s3://no-such-bucket/");
        assertThatThrownBy(() -> TestStores.open(uri)).isInstanceOf(ObjectStoreException.class)
                .hasMessageContaining("no-such-bucket").hasMessageContaining("does not exist")
                .hasMessageContaining("NoSuchBucket");
    }

    @Test
    void anUnreachableEndpointFailsFastAtStreamStorageOpen() {
        int port = freePort();
        String uri = "s3://b/p?endpoint=http://127.0.0.1:" + port + "&accessKey=a&secretKey=b";
        long start = System.nanoTime();
        assertThatThrownBy(() -> StreamStorage.open(StorageConfig.builder().nodeId(1).dataDir(dir)
                .wal("mem://open-errors?capacity=8MiB").metadata("mem://open-errors").objectStore(uri).build()))
                .hasMessageContaining("cannot reach http://127.0.0.1:" + port);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(15));
    }

    @Test
    void anUnknownSettingIsRefused() {
        assertThatThrownBy(() -> TestStores.open(S3.uri("p") + "&regoin=x"))
                .hasMessageContaining("unknown setting 'regoin'");
    }

    private static int freePort() {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
