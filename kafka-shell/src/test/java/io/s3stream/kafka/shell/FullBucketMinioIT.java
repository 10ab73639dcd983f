package io.s3stream.kafka.shell;

import io.s3stream.kafka.shell.config.ShellConfig;
import io.s3stream.testing.S3Server;
import io.s3stream.testing.SmallFileSystem;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link FullDiskTest}'s scenario with a full bucket: the shell's objects and manifest are in a MinIO whose drive is a
 * real 96 MiB file system, its WAL on a disk of its own. A topic fills the drive; MinIO refuses writes (507
 * {@code XMinioStorageFull}). At the threshold even the manifest entry of a deletion is refused: DeleteTopics answers
 * a storage error naming the cause and changes nothing. Once a little space is freed elsewhere, deleting that topic
 * works, its objects go, and the other topic's acknowledged records are uploaded by themselves and read back after a
 * restart.
 */
@Timeout(300)
class FullBucketMinioIT {
    @TempDir
    Path tmp;

    private static KafkaShell shell(Path dir, S3Server.Running minio) {
        Map<String, String> m = FullDiskTest.settings(dir);
        m.put("s3stream.object.store", minio.uri("full-bucket"));
        return KafkaShell.start(ShellConfig.of(m));
    }

    @Test
    void deletingTheTopicThatFilledTheBucketHealsIt() throws Exception {
        try (SmallFileSystem fs = SmallFileSystem.mount(tmp.resolve("drive"), 96);
             S3Server.Running minio = S3Server.minioOnDrive(fs.path().resolve("data"))) {
            Path dir = Files.createDirectories(tmp.resolve("kafka-shell"));
            KafkaShell shell = shell(dir, minio);
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, shell.bootstrapServers(),
                    AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000))) {
                admin.createTopics(List.of(new NewTopic("big", 1, (short) 1), new NewTopic("small", 1, (short) 1)))
                        .all().get();
                FullDiskTest.produce(shell, "big", 2_560); // 40 MiB, uploaded
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (shell.metrics().uploads().bytes() < (40L << 20) && System.nanoTime() < deadline) {
                    Thread.sleep(100);
                }
                // Other files keep the drive full, leaving 512 KiB: below MinIO's reserve of 1 % of the drive, so it
                // refuses every write, however small. Compaction may free some space meanwhile (it merges the uploaded
                // objects and deletes its inputs), which they take at once. A 1 MiB ballast file among them stands for
                // what the operator deletes later, as MinIO's message asks.
                Path ballast = fs.path().resolve("ballast");
                Files.write(ballast, new byte[1 << 20]);
                SmallFileSystem.Filler filler = fs.keepFull(512L << 10);
                Thread.sleep(500);
                long uploaded = shell.metrics().uploads().bytes();
                FullDiskTest.produce(shell, "small", 256); // 4 MiB: acknowledged (in the WAL), its upload refused for lack of space
                Thread.sleep(2_000);
                System.getLogger(FullBucketMinioIT.class.getName()).log(System.Logger.Level.INFO,
                        "uploaded while the bucket was full: " + (shell.metrics().uploads().bytes() - uploaded) + " bytes");

                // At the threshold even the manifest entry that records a deletion is refused: retried, then answered
                // with a storage error naming the cause, within the Admin call's timeout, and nothing changed.
                long started = System.nanoTime();
                assertThatThrownBy(() -> admin.deleteTopics(List.of("big")).all().get(30, TimeUnit.SECONDS))
                        .hasCauseInstanceOf(KafkaStorageException.class)
                        .hasMessageContaining("the topic is unchanged").hasMessageContaining("XMinioStorageFull");
                assertThat(admin.listTopics().names().get()).contains("big", "small");
                System.getLogger(FullBucketMinioIT.class.getName()).log(System.Logger.Level.INFO,
                        "DeleteTopics refused at the threshold after " + (System.nanoTime() - started) / 1_000_000 + " ms");

                // The operator frees 1 MiB elsewhere on the drive: small writes fit again (a 2 MiB upload still does
                // not), and deleting the topic that filled the bucket now works and brings its space back.
                filler.close();
                Files.delete(ballast);
                FullDiskTest.deleteAndAwaitSpace(admin, fs, "big");
                FullDiskTest.produce(shell, "small", 64); // and the shell takes new records
            }
            shell.close();
            KafkaShell again = shell(dir, minio);
            try {
                FullDiskTest.assertReadBack(again, "small", 256, 64);
            } finally {
                again.close();
            }
        }
    }
}
