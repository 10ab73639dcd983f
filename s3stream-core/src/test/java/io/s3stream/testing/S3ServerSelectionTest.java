package io.s3stream.testing;

import io.s3stream.testing.S3Server.Kind;
import io.s3stream.testing.S3Server.Source;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Where {@link S3Server} takes its server from, with a Docker engine reported present and absent: the container
 * path cannot run on machines without Docker (CI here), so its selection is checked here and the process path by
 * every MinIO integration test ({@code MinioObjectStoreIT} asserts which one it got).
 */
class S3ServerSelectionTest {

    /** A Docker answer that counts how often it was asked. */
    private static final class Docker implements BooleanSupplier {
        final boolean present;
        final AtomicInteger asked = new AtomicInteger();

        Docker(boolean present) {
            this.present = present;
        }

        @Override
        public boolean getAsBoolean() {
            asked.incrementAndGet();
            return present;
        }
    }

    @Test
    void minioRunsInAContainerOnlyWhereDockerAnswers() {
        assertThat(S3Server.choose(Kind.MINIO, Map.of(), new Docker(true))).isEqualTo(Source.CONTAINER);
        assertThat(S3Server.choose(Kind.MINIO, Map.of(), new Docker(false))).isEqualTo(Source.PROCESS);
        assertThat(S3Server.choose(Kind.MINIO, Map.of("S3STREAM_TEST_DOCKER", "auto"), new Docker(true)))
                .isEqualTo(Source.CONTAINER);
    }

    @Test
    void s3proxyIsAlwaysAJavaProcessAndDockerIsNotAsked() {
        for (String mode : new String[] {"auto", "never", "always"}) {
            Docker docker = new Docker(true);
            assertThat(S3Server.choose(Kind.S3PROXY, Map.of("S3STREAM_TEST_DOCKER", mode), docker)).as(mode)
                    .isEqualTo(Source.PROCESS);
            assertThat(docker.asked).as(mode).hasValue(0);
        }
    }

    @Test
    void anExternalEndpointWinsWithoutAskingDocker() {
        Docker docker = new Docker(true);
        Map<String, String> env = Map.of("S3STREAM_TEST_S3_ENDPOINT", "http://10.0.0.1:9000",
                "S3STREAM_TEST_DOCKER", "always");
        assertThat(S3Server.choose(Kind.MINIO, env, docker)).isEqualTo(Source.EXTERNAL);
        assertThat(S3Server.choose(Kind.S3PROXY, env, docker)).isEqualTo(Source.EXTERNAL);
        assertThat(docker.asked).hasValue(0);
        // A blank endpoint is no endpoint.
        assertThat(S3Server.choose(Kind.MINIO, Map.of("S3STREAM_TEST_S3_ENDPOINT", " "), new Docker(false)))
                .isEqualTo(Source.PROCESS);
    }

    @Test
    void neverKeepsTheProcessEvenWithDocker() {
        Docker docker = new Docker(true);
        assertThat(S3Server.choose(Kind.MINIO, Map.of("S3STREAM_TEST_DOCKER", "never"), docker))
                .isEqualTo(Source.PROCESS);
        assertThat(docker.asked).hasValue(0);
    }

    @Test
    void alwaysWithoutDockerFailsSayingWhy() {
        assertThat(S3Server.choose(Kind.MINIO, Map.of("S3STREAM_TEST_DOCKER", "always"), new Docker(true)))
                .isEqualTo(Source.CONTAINER);
        assertThatThrownBy(() -> S3Server.choose(Kind.MINIO, Map.of("S3STREAM_TEST_DOCKER", "always"),
                new Docker(false)))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("S3STREAM_TEST_DOCKER=always")
                .hasMessageContaining("no Docker engine");
    }

    @Test
    void anUnknownModeIsRefusedNamingIt() {
        assertThatThrownBy(() -> S3Server.choose(Kind.MINIO, Map.of("S3STREAM_TEST_DOCKER", "sometimes"),
                new Docker(true)))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("auto, never or always")
                .hasMessageContaining("'sometimes'");
    }
}
