package io.s3stream.kafka.shell.quota;

import io.s3stream.StreamStorage;
import io.s3stream.testing.EngineFixture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Quotas of one entity altered from two shells at once: both changes survive, whatever each shell had read before. */
@Timeout(60)
class ClientQuotasAlterTest {
    private final EngineFixture fixture = new EngineFixture();

    @AfterEach
    void close() {
        fixture.close();
    }

    @Test
    void concurrentAltersOfOneEntityFromTwoShellsBothTakeEffect() throws Exception {
        // The durable manifest: each engine reads its own view of the log, as two shells do.
        StreamStorage one = fixture.open(1, b -> b.metadata("manifest:client-quotas"));
        StreamStorage two = fixture.open(2, b -> b.metadata("manifest:client-quotas"));
        ClientQuotas a = new ClientQuotas(one.keyValues());
        ClientQuotas b = new ClientQuotas(two.keyValues());
        ClientQuotas.Entity user = new ClientQuotas.Entity("alice", null);
        for (int i = 1; i <= 30; i++) {
            CompletableFuture<Void> produce = a.alter(user, Map.of(ClientQuotas.PRODUCER_BYTE_RATE, 1000.0 * i), false);
            CompletableFuture<Void> consume = b.alter(user, Map.of(ClientQuotas.CONSUMER_BYTE_RATE, 2000.0 * i), false);
            CompletableFuture.allOf(produce, consume).get(30, TimeUnit.SECONDS);
            one.keyValues().sync().get(10, TimeUnit.SECONDS);
            a.refresh();
            assertThat(a.configured().get(user)).as("round %d", i).containsExactlyInAnyOrderEntriesOf(Map.of(
                    ClientQuotas.PRODUCER_BYTE_RATE, 1000.0 * i, ClientQuotas.CONSUMER_BYTE_RATE, 2000.0 * i));
        }
        Map<String, Double> removeAll = new HashMap<>();
        removeAll.put(ClientQuotas.PRODUCER_BYTE_RATE, null);
        removeAll.put(ClientQuotas.CONSUMER_BYTE_RATE, null);
        b.alter(user, removeAll, false).get(10, TimeUnit.SECONDS);
        assertThat(two.keyValues().list("kafka/quota/").get(10, TimeUnit.SECONDS)).isEmpty();
    }
}
