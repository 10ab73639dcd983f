package io.s3stream.internal.manifest;

import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.ObjectStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.SortedMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SIGKILL in the middle of commits: the reopened manifest holds exactly a prefix of the child's commits, containing
 * every one it acknowledged and at most the one in flight beyond.
 */
class ManifestCrashTest {

    @TempDir
    Path dir;

    @Test
    void killedWriterLeavesExactlyACommittedPrefix() throws Exception {
        String uri = dir.toUri().toString();
        for (int round = 0; round < 3; round++) {
            Process child = ManifestMultiProcessTest.fork(uri, "loop", round, 0);
            long acked = -1;
            int target = 30 + 17 * round;
            try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = out.readLine()) != null) {
                    if (line.startsWith("ACK ")) {
                        acked = Long.parseLong(line.substring(4));
                        if (acked >= target) {
                            child.destroyForcibly(); // SIGKILL, mid-commit
                            break;
                        }
                    }
                }
            }
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(acked).as("child made progress").isGreaterThanOrEqualTo(target);

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
}
