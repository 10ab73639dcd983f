package io.s3stream.store.s3.internal;

import io.s3stream.testing.S3Server;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/** The object-store contract on MinIO. */
class MinioObjectStoreIT extends S3ObjectStoreContract {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    @Override
    protected S3Server server() {
        return S3;
    }

    /**
     * The server came from where {@link S3Server#choose} says, asked with Testcontainers' real Docker detection
     * (this module has org.testcontainers:minio on its test class path): a container where Docker answers, the
     * minio binary as a process where it does not (CI here), or the user's endpoint.
     */
    @Test
    void theServerComesFromWhereTheSelectionSays() {
        S3Server.Source expected = S3Server.choose(S3Server.Kind.MINIO, System.getenv(),
                () -> org.testcontainers.DockerClientFactory.instance().isDockerAvailable());
        String name = S3.server().name();
        switch (expected) {
            case CONTAINER -> assertThat(name).startsWith("minio container ");
            case PROCESS -> assertThat(name).startsWith("minio http://");
            case EXTERNAL -> assertThat(name).startsWith("external ");
        }
    }
}
