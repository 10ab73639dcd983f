package io.s3stream.kafka.shell.group;

import io.s3stream.KeyValues;
import io.s3stream.StreamStorage;
import io.s3stream.kafka.shell.config.ShellConfig;
import io.s3stream.testing.EngineFixture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Group configs altered from two shells at once: both changes survive, as they would in Kafka's controller. */
@Timeout(60)
class GroupConfigsTest {
    private final EngineFixture fixture = new EngineFixture();

    @AfterEach
    void close() {
        fixture.close();
    }

    @Test
    void concurrentAltersOfOneGroupFromTwoShellsBothTakeEffect(@TempDir Path dataDir) throws Exception {
        ShellConfig config = ShellConfig.of(Map.of("s3stream.data.dir",
                dataDir.toString(), "s3stream.wal",
                "mem://group-configs-test?capacity=64MiB", "s3stream.object.store", "mem://group-configs-test"));
        // The durable manifest: each engine reads its own view of the log, as two shells do.
        StreamStorage one = fixture.open(1, b -> b.metadata("manifest:group-configs"));
        StreamStorage two = fixture.open(2, b -> b.metadata("manifest:group-configs"));
        KeyValues kv1 = one.keyValues();
        KeyValues kv2 = two.keyValues();
        for (int i = 0; i < 30; i++) {
            // Each shell reads the group's overrides, then replaces them: without compare-and-set one change is lost
            // whenever both read before either wrote.
            kv1.sync().get(10, TimeUnit.SECONDS);
            kv2.sync().get(10, TimeUnit.SECONDS);
            CompletableFuture<Void> session = GroupConfigs.alter(config, kv1, "g",
                    Map.of(GroupConfigs.SESSION_TIMEOUT, Integer.toString(10_000 + i)), false);
            CompletableFuture<Void> heartbeat = GroupConfigs.alter(config, kv2, "g",
                    Map.of(GroupConfigs.HEARTBEAT_INTERVAL, Integer.toString(100 + i)), false);
            CompletableFuture.allOf(session, heartbeat).get(30, TimeUnit.SECONDS);
            kv1.sync().get(10, TimeUnit.SECONDS);
            assertThat(GroupConfigs.overrides(kv1, "g").get(10, TimeUnit.SECONDS)).as("round %d", i)
                    .containsExactlyInAnyOrderEntriesOf(Map.of(GroupConfigs.SESSION_TIMEOUT,
                            Integer.toString(10_000 + i), GroupConfigs.HEARTBEAT_INTERVAL, Integer.toString(100 + i)));
        }
        // Removing every override removes the key.
        Map<String, String> deletes = new HashMap<>();
        deletes.put(GroupConfigs.SESSION_TIMEOUT, null);
        deletes.put(GroupConfigs.HEARTBEAT_INTERVAL, null);
        GroupConfigs.alter(config, kv1, "g", deletes, false).get(10, TimeUnit.SECONDS);
        assertThat(kv1.list("kafka/group-config/").get(10, TimeUnit.SECONDS)).isEmpty();
    }
}
