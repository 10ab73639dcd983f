package io.s3stream.examples;

import io.s3stream.testing.S3Server;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** The S3 example, as documented, against MinIO. */
class S3ExampleIT {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    @Test
    void writesToTheBucketAndReadsEverythingBackAfterARestart(@TempDir Path dir) throws Exception {
        String out = ExampleRun.run(S3Example.class, S3.uri("s3-example-" + UUID.randomUUID()), dir.toString());
        assertThat(out).contains("appended 1000 batches").contains("read 1000 batches back from s3://")
                .doesNotContain("secretKey");
    }
}
