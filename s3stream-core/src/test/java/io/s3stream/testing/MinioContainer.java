package io.s3stream.testing;

import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.MinIOContainer;

/**
 * The Docker path of {@link S3Server}: MinIO in a container started by Testcontainers' MinIO module, for a
 * developer's machine with a Docker engine. The only class that touches Testcontainers, so that a module without it
 * on its test class path (kafka-shell) still loads {@link S3Server} and uses the process path.
 */
final class MinioContainer {

    /**
     * The image, overridable with {@code S3STREAM_TEST_MINIO_IMAGE}: a MinIO release the Testcontainers documentation
     * uses; it has the static KMS key ({@code MINIO_KMS_SECRET_KEY}) the SSE tests need.
     */
    static final String DEFAULT_IMAGE = "minio/minio:RELEASE.2023-09-04T19-57-37Z";

    private MinioContainer() {
    }

    /** Whether Testcontainers finds a working Docker engine (it looks at DOCKER_HOST, the socket, its config). */
    static boolean dockerAvailable() {
        return DockerClientFactory.instance().isDockerAvailable();
    }

    /** Starts a container with the same keys and KMS key as the MinIO process; closing the result removes it. */
    static S3Server.Running start(String image, String kmsKey) {
        MinIOContainer container = new MinIOContainer(image)
                .withUserName("minioadmin")
                .withPassword("minioadmin")
                .withEnv("MINIO_KMS_SECRET_KEY", kmsKey);
        try {
            container.start();
        } catch (RuntimeException e) {
            container.close();
            throw new AssertionError("MinIO did not start in Docker (" + image + "): " + e.getMessage()
                    + "; set S3STREAM_TEST_DOCKER=never to use the minio binary instead", e);
        }
        return new S3Server.Running("minio container " + container.getS3URL(), container, container.getS3URL(),
                container.getUserName(), container.getPassword(), "s3stream-test", "us-east-1");
    }
}
