package io.s3stream.internal.manifest;

import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.ChildOutput;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.InstantSource;
import java.util.SortedMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SIGKILL in the middle of commits: the reopened manifest holds exactly a prefix of the child's commits, containing
 * every one it acknowledged and at most the one in flight beyond.
 *
 * <p>The last acknowledgement is the last one the child wrote before it died, not the one that made the test kill it:
 * the child goes on committing while the kill is on its way. Its output therefore goes to a file that is read whole
 * after its death.
 */
class ManifestCrashTest {

    @TempDir
    Path dir;

    @Test
    void killedWriterLeavesExactlyACommittedPrefix() throws Exception {
        String uri = dir.resolve("store").toUri().toString();
        for (int round = 0; round < 3; round++) {
            Path out = dir.resolve("child-" + round + ".out");
            Process child = ManifestMultiProcessTest.builder(uri, "loop", round, 0)
                    .redirectOutput(out.toFile()).start();
            int target = 30 + 17 * round;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (lastAck(out) < target) {
                assertThat(child.isAlive()).as("child alive, last ack %d", lastAck(out)).isTrue();
                assertThat(System.nanoTime()).as("child reached ack %d in time", target).isLessThan(deadline);
                Thread.sleep(1);
            }
            child.destroyForcibly(); // SIGKILL, mid-commit
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
            long acked = lastAck(out);

            try (ObjectStore objects = ObjectStores.open(uri);
                 ManifestMetadataStore store = ManifestMetadataStore.open(objects, InstantSource.system(),
                         ManifestConfig.DEFAULTS.withPollMs(0))) {
                SortedMap<String, byte[]> keys = store.listKv("ack-" + round + "-").get();
                long n = 0;
                for (String key : keys.keySet()) {
                    assertThat(key).as("a prefix, no hole").isEqualTo(String.format("ack-%d-%06d", round, n));
                    n++;
                }
                assertThat(n - 1).as("every acknowledged commit is there, at most one more")
                        .isBetween(acked, acked + 1);
            }
        }
    }

    private static long lastAck(Path out) throws Exception {
        return ChildOutput.last(out, "ACK ");
    }
}
