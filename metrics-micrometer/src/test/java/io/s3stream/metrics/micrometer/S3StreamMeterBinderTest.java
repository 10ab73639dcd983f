package io.s3stream.metrics.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.testing.MemBackends;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** The engine's counters through a Micrometer registry, against a real engine on in-memory backends. */
class S3StreamMeterBinderTest {

    @Test
    void metersFollowTheEngine(@TempDir Path dir) throws Exception {
        String name = "meters-" + UUID.randomUUID();
        StorageConfig config = StorageConfig.builder().nodeId(1).dataDir(dir)
                .wal("mem://" + name + "-wal?capacity=64MiB").objectStore("mem://" + name).metadata("mem://" + name)
                .logCacheBytes(8L << 20).blockCacheBytes(4L << 20).uploadThresholdBytes(1 << 20)
                .maxBatchBytes(256 * 1024).uploadInterval(Duration.ofSeconds(30)).build();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (StreamStorage storage = StreamStorage.open(config)) {
            new S3StreamMeterBinder(storage::metrics, Tags.of("node", "1")).bindTo(registry);
            assertThat(counter(registry, "s3stream.appends.batches")).isZero();

            Stream s = storage.createStream(StreamOptions.defaults()).get();
            for (int i = 0; i < 10; i++) {
                s.append(RecordBatch.of(1, ByteBuffer.wrap(new byte[1000]))).get();
            }
            try (FetchResult r = s.fetch(0, 10, 1 << 20).get()) {
                assertThat(r.batches()).isNotEmpty();
            }
            Thread.sleep(S3StreamMeterBinder.SNAPSHOT_TTL_MS + 50); // past the snapshot's lifetime
            assertThat(counter(registry, "s3stream.appends.batches")).isEqualTo(10);
            assertThat(counter(registry, "s3stream.appends.bytes")).isEqualTo(10_000);
            assertThat(registry.get("s3stream.log.cache.bytes").tag("node", "1").gauge().value()).isPositive();
            assertThat(registry.get("s3stream.log.cache.capacity").gauge().value()).isEqualTo(8 << 20);
            assertThat(registry.get("s3stream.reads").tag("source", "log.cache").functionCounter().count()).isEqualTo(1);
            assertThat(registry.get("s3stream.reads.catch.up.limit").gauge().value()).as("no cap, no cut").isZero();
            assertThat(counter(registry, "s3stream.reads.catch.up.cuts")).isZero();

            s.close().get(); // uploads the stream's data: an object and manifest writes
            System.gc(); // the binder is referenced only by the registry: its meters must survive a collection
            Thread.sleep(S3StreamMeterBinder.SNAPSHOT_TTL_MS + 50);
            assertThat(counter(registry, "s3stream.uploads.objects")).isPositive();
            double puts = registry.find("s3stream.object.store.requests").functionCounters().stream()
                    .mapToDouble(FunctionCounter::count).sum();
            assertThat(puts).isPositive();
            assertThat(registry.get("s3stream.object.store.bytes").tag("direction", "out").functionCounter().count())
                    .isPositive();
            assertThat(registry.find("s3stream.object.store.requests").functionCounters())
                    .hasSize(S3StreamMeterBinder.REQUEST_KINDS.size());
            Gauge perGiB = registry.get("s3stream.object.store.write.requests.per.gib").gauge();
            assertThat(perGiB.value()).isPositive();
        } finally {
            MemBackends.clearWal(name + "-wal");
            MemBackends.clearObjectStore(name);
            MemBackends.clearMetadata(name);
        }
    }

    private static double counter(SimpleMeterRegistry registry, String name) {
        return registry.get(name).tag("node", "1").functionCounter().count();
    }
}
