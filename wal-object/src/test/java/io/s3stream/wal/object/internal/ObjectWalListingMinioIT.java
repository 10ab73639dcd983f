package io.s3stream.wal.object.internal;

import io.netty.buffer.Unpooled;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.testing.S3Server;
import io.s3stream.testing.TestStores;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Recovery lists a log of more objects than one S3 list page holds (1,000), on MinIO. */
class ObjectWalListingMinioIT {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    @Test
    void recoveryReadsEveryPageOfTheListing() throws Exception {
        Random random = new Random();
        WalRecords records = new WalRecords();
        ObjectWalConfig config = ObjectWalConfig.parse(URI.create("objectwal://?batchMs=1&batchBytes=1&maxInFlight=32"));
        try (ObjectStore store = TestStores.asEngineWould(TestStores.open(S3.uri("listing-" + UUID.randomUUID())))) {
            WriteAheadLog wal = ObjectWal.open(config, new WalContext(1, 1, Path.of("."), Duration.ofSeconds(30)), store);
            wal.recover((p, n, r) -> r.release());
            List<byte[]> data = new ArrayList<>();
            List<CompletableFuture<WalAppendResult>> futures = new ArrayList<>();
            for (int i = 0; i < 1_150; i++) {
                byte[] d = records.next(random, 64);
                data.add(d);
                futures.add(wal.append(Unpooled.wrappedBuffer(d)));
            }
            for (CompletableFuture<WalAppendResult> f : futures) {
                f.get(120, TimeUnit.SECONDS);
            }
            assertThat(wal.segments(0, Long.MAX_VALUE)).as("one object per record").hasSizeGreaterThan(1_000);
            wal.close();
            WriteAheadLog again = ObjectWal.open(config, new WalContext(1, 2, Path.of("."), Duration.ofSeconds(30)), store);
            List<byte[]> recovered = new ArrayList<>();
            again.recover((p, n, r) -> {
                byte[] b = new byte[r.readableBytes()];
                r.getBytes(r.readerIndex(), b);
                r.release();
                recovered.add(b);
            });
            again.close();
            assertThat(recovered).hasSize(data.size());
            for (int i = 0; i < data.size(); i++) {
                assertThat(recovered.get(i)).as("record " + i).isEqualTo(data.get(i));
            }
        }
    }
}
