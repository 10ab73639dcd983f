package io.s3stream.internal.engine;

import io.s3stream.StorageMetrics;
import io.s3stream.StreamStorage;
import io.s3stream.testing.CatchUpScenario;
import io.s3stream.testing.EngineFixture;
import io.s3stream.testing.S3Server;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link CatchUpReadTest}'s scenario ({@link CatchUpScenario}) on MinIO: a catch-up reader replays a 25 MiB backlog from objects (three times the
 * log cache) with read-ahead while another stream is appended to and tail-read for as long as the replay lasts. The
 * tail is served from the log cache throughout, the backlog comes back byte for byte, and read-ahead serves the
 * replay. Compaction is off so that every object request in the test is the catch-up reader's.
 */
class CatchUpReadMinioIT {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    private final EngineFixture fixture = new EngineFixture();
    private final String prefix = "catchup-" + UUID.randomUUID();
    private final long seed = System.nanoTime();

    @AfterEach
    void close() {
        fixture.close();
    }

    @Test
    void aCatchUpReaderReadsTheBacklogWhileTheTailStaysInTheLogCache() throws Exception {
        StreamStorage storage = fixture.open(1, b -> b.objectStore(S3.uri(prefix)).compactionEnabled(false)
                .uploadInterval(Duration.ofSeconds(1)).backpressureTimeout(Duration.ofSeconds(30)));
        CatchUpScenario scenario = CatchUpScenario.prepare(storage); // 25 MiB through an 8 MiB log cache
        StorageMetrics before = storage.metrics();
        assertThat(before.uploads().objects()).isPositive();

        CatchUpScenario.Result run = scenario.replay(seed);
        assertThat(run.tailFetchesDuringCatchUp()).as("the tail was read while the replay ran").isPositive();

        StorageMetrics after = storage.metrics();
        // Every tail fetch came from the log cache; every object read was the catch-up reader's.
        assertThat(after.reads().fromLogCache() - before.reads().fromLogCache()).isGreaterThanOrEqualTo(run.tailFetches());
        assertThat(after.reads().fromObjects() - before.reads().fromObjects()).isLessThanOrEqualTo(run.catchUpFetches());
        assertThat(after.reads().fromObjects() - before.reads().fromObjects()).isPositive();
        assertThat(after.readAhead().hits()).as("read-ahead served the catch-up reader").isPositive();
        assertThat(after.readAhead().bytes())
                .isLessThanOrEqualTo(MemoryBudgets.resolve(fixture.config(1).build(), Long.MAX_VALUE).readAheadBytes());
        assertThat(after.blockCache().bytes()).isLessThanOrEqualTo(after.blockCache().capacityBytes());
        assertThat(after.logCache().bytes()).isLessThanOrEqualTo(after.logCache().capacityBytes());

        // With the replay over, the tail alone makes no GET at all (uploads are PUTs).
        long getsBefore = after.objectStore().requests().get("GET");
        long objectFetchesBefore = after.reads().fromObjects();
        for (int i = 0; i < 100; i++) {
            scenario.tailRound();
        }
        StorageMetrics tailOnly = storage.metrics();
        assertThat(tailOnly.objectStore().requests().get("GET")).as("GETs while only the tail reads").isEqualTo(getsBefore);
        assertThat(tailOnly.reads().fromObjects()).isEqualTo(objectFetchesBefore);

        System.out.printf("catch-up on MinIO: %d fetches in %d ms, %d tail fetches meanwhile, GETs %d, read-ahead hits %d,"
                        + " blocks %d, evicted unread %d, merged %d%n",
                run.catchUpFetches(), run.catchUpMillis(), run.tailFetchesDuringCatchUp(),
                after.objectStore().requests().get("GET") - before.objectStore().requests().get("GET"),
                after.readAhead().hits(), after.readAhead().blocks(), after.readAhead().evictedUnread(),
                after.blockCache().mergedLoads());
    }
}
