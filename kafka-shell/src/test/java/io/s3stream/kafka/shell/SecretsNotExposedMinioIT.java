package io.s3stream.kafka.shell;

import io.s3stream.testing.S3Server;
import org.apache.kafka.clients.admin.Config;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link SecretsNotExposedTest} with the shell's objects in MinIO: the s3:// URI's keys appear nowhere. */
@Timeout(120)
class SecretsNotExposedMinioIT {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    @Test
    void theStoreCredentialsAppearNowhere() throws Exception {
        String prefix = "secrets-" + UUID.randomUUID();
        String uri = S3.uri(prefix);
        Config broker = SecretsNotExposedTest.assertSecretsAppearNowhere(Map.of("s3stream.object.store", uri),
                List.of(S3.server().accessKey(), S3.server().secretKey()));
        assertThat(broker.get("s3stream.object.store").value()).startsWith("s3://").contains(prefix)
                .contains("accessKey=[hidden]").contains("secretKey=[hidden]");
    }
}
