package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Idempotent-producer state survives a broker restart: it is rebuilt from the tail of each partition. */
@Timeout(60)
class ProducerStateTest {

    @Test
    void retriedBatchAfterRestartGetsItsOriginalOffsetAndGapsAreStillRejected() throws Exception {
        try (ShellFixture fx = new ShellFixture()) {
            try (Admin admin = fx.admin()) {
                admin.createTopics(List.of(new NewTopic("idem", 1, (short) 1))).all().get();
            }
            long pid = 4242;
            try (RawClient c = new RawClient(fx.shell.port())) {
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 0, 3)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 0));
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 3, 2)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 3));
                // Another producer in between, so the duplicate's offset is not simply the tail.
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid + 1, (short) 2, 0, 1)).error()).isEqualTo(Errors.NONE);
            }
            fx.restart();
            try (RawClient c = new RawClient(fx.shell.port())) {
                // The retry of the last acknowledged batch: its original offset, nothing stored.
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 3, 2)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 3));
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 0, 3)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 0));
                // A gap is rejected; the next sequence is accepted.
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 9, 1)).error())
                        .isEqualTo(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER);
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid, (short) 0, 5, 1)))
                        .isEqualTo(new RawClient.ProduceResponseData(Errors.NONE, 6));
                // The second producer's epoch was recovered too: an older epoch is fenced.
                assertThat(c.produce("idem", 0, RawClient.idempotent(pid + 1, (short) 1, 1, 1)).error())
                        .isEqualTo(Errors.INVALID_PRODUCER_EPOCH);
            }
            assertThat(fx.shell.port()).isPositive();
        }
    }
}
