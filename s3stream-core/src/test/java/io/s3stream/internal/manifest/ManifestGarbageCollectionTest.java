package io.s3stream.internal.manifest;

import io.s3stream.internal.store.MemObjectStore;
import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.ManualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Garbage collection of the manifest log: entries go once a checkpoint covering them is older than the grace period,
 * however often checkpoints are written. Checkpoints every 10 entries stand for a steady stream of small commits
 * (consumer offsets), under which the earlier rule — anchor on the second-latest checkpoint — never found one old
 * enough and the log grew without bound.
 */
class ManifestGarbageCollectionTest {
    private final String name = "gc-" + UUID.randomUUID();
    private final ObjectStore objects = ObjectStores.open("mem://" + name);
    private final ManualClock clock = new ManualClock();
    private final ManifestConfig config = ManifestConfig.DEFAULTS.withPollMs(0).withCheckpointEvery(10)
            .withGcGraceMs(60_000);

    @AfterEach
    void clear() {
        objects.close();
        MemObjectStore.clear(name);
    }

    private int count(String prefix) throws Exception {
        return objects.list(config.prefix() + prefix).get(10, TimeUnit.SECONDS).size();
    }

    @Test
    void frequentCheckpointsStillLetTheLogBeCollected() throws Exception {
        try (ManifestMetadataStore store = ManifestMetadataStore.open(objects, clock, config)) {
            // 100 s of steady commits: 10 per second, so a checkpoint every second.
            for (int second = 0; second < 100; second++) {
                for (int i = 0; i < 10; i++) {
                    int k = second * 10 + i;
                    store.putKv("k" + k, new byte[] {(byte) k}).get(10, TimeUnit.SECONDS);
                }
                if (second == 50) {
                    Thread.sleep(300); // let the checkpoint thread catch up
                    assertThat(count("log/")).as("nothing is older than the grace period yet")
                            .isGreaterThanOrEqualTo(500);
                }
                clock.advance(Duration.ofSeconds(1));
            }
            // About the last 61 s of entries may remain (grace period + one checkpoint interval); the earlier rule
            // kept all 1,000 because its anchor, the second-latest checkpoint, was always one second old.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (count("log/") > 700 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(count("log/")).as("entries covered by a checkpoint older than the grace period are deleted")
                    .isLessThanOrEqualTo(700);
            assertThat(count("checkpoint/")).as("checkpoints older than the anchor are deleted").isLessThanOrEqualTo(70);
        }
        // What is left holds the whole state.
        try (ManifestMetadataStore reopened = ManifestMetadataStore.open(objects, clock, config)) {
            for (int k = 0; k < 1000; k++) {
                byte expected = (byte) k;
                assertThat(reopened.getKv("k" + k).get(10, TimeUnit.SECONDS)).as("k" + k)
                        .hasValueSatisfying(v -> assertThat(v).containsExactly(expected));
            }
        }
    }
}
