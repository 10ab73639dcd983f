package io.s3stream.kafka.shell;

import io.s3stream.testing.S3Server;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

/**
 * {@link FailoverProcessTest}'s SIGKILL scenario with the shells' objects, manifest and WAL ({@code objectwal://}) in
 * MinIO: three shell processes, an idempotent producer and a consumer group; the shell leading four partitions and
 * coordinating the group is killed, the survivors take it over, every acknowledged record is read back exactly once
 * and the group's committed offsets survive.
 */
@Timeout(300)
class FailoverMinioIT {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    @Test
    void survivorsTakeOverAKilledShellOnMinio() throws Exception {
        Path run = Files.createTempDirectory("kafka-failover-minio-");
        try {
            FailoverProcessTest.failover(run, S3.uri("failover-" + UUID.randomUUID()), "objectwal", "KILL", true);
        } finally {
            try (var walk = Files.walk(run)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }
}
