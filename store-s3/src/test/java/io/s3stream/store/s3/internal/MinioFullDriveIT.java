package io.s3stream.store.s3.internal;

import io.netty.buffer.Unpooled;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import io.s3stream.testing.S3Server;
import io.s3stream.testing.SmallFileSystem;
import io.s3stream.testing.TestStores;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A full bucket, for real: a MinIO whose drive is a 48 MiB file system. As the drive fills MinIO refuses writes with
 * 507 {@code XMinioStorageFull} (past its free-space threshold), 500 "no space left on device" (a write racing the
 * last bytes) or 400 {@code IncompleteBody} (the body could not be taken in): every one of them must be retriable,
 * because deleting objects (retention, compaction, a topic deletion) makes room again. Deletes still work on the full
 * drive. (That the writes then get through is shown end to end by kafka-shell's {@code FullBucketMinioIT}; MinIO
 * frees a deleted object's space only when its drive is almost full or when it empties its trash, every 5 minutes.)
 */
@Timeout(120)
class MinioFullDriveIT {
    @TempDir
    Path tmp;

    @Test
    void everyRefusalOfAFullDriveIsRetriable() throws Exception {
        try (SmallFileSystem fs = SmallFileSystem.mount(tmp.resolve("drive"), 48);
             S3Server.Running minio = S3Server.minioOnDrive(fs.path().resolve("data"));
             ObjectStore store = TestStores.open(minio.uri("full"))) {
            List<String> written = new ArrayList<>();
            List<ObjectStoreException> refusals = new ArrayList<>();
            // 4 MiB objects until the first refusal, then 256 KiB ones down to the last bytes.
            boolean thresholdSeen = false;
            for (int i = 0; i < 200 && !thresholdSeen; i++) {
                byte[] data = new byte[refusals.isEmpty() ? 4 << 20 : 256 << 10];
                String key = "o" + i;
                try {
                    store.put(key, Unpooled.wrappedBuffer(data)).get(30, TimeUnit.SECONDS);
                    written.add(key);
                } catch (ExecutionException e) {
                    assertThat(e.getCause()).isInstanceOf(ObjectStoreException.class);
                    refusals.add((ObjectStoreException) e.getCause());
                    thresholdSeen = e.getCause().getMessage().contains("XMinioStorageFull");
                }
            }
            assertThat(refusals).as("48 MiB are full after ~11 objects of 4 MiB").isNotEmpty();
            assertThat(written.size()).isBetween(5, 200);
            for (ObjectStoreException refusal : refusals) {
                assertThat(refusal.isRetriable()).as("a full drive heals when data is deleted: " + refusal).isTrue();
            }
            assertThat(refusals).as("MinIO names its full drive").anySatisfy(r ->
                    assertThat(r.getMessage()).contains("507").contains("XMinioStorageFull"));
            store.delete(written).get(30, TimeUnit.SECONDS);
            assertThat(store.list("").get(30, TimeUnit.SECONDS)).isEmpty();
        }
    }
}
