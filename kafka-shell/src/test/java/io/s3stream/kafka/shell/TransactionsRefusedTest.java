package io.s3stream.kafka.shell;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Until kafka-shell has transactions (issue 15), a transactional client fails at once with a fatal error instead of
 * retrying a coordinator lookup forever (COORDINATOR_NOT_AVAILABLE, which every client retries): the Java producer's
 * {@code initTransactions()} throws, and so does librdkafka's {@code init_transactions}.
 */
@Timeout(120)
class TransactionsRefusedTest {
    @RegisterExtension
    final ShellFixture fx = new ShellFixture();

    @Test
    void javaInitTransactionsFailsAtOnce() {
        // max.block.ms is long: a client still retrying when it runs out would throw a TimeoutException instead.
        try (KafkaProducer<String, String> producer = fx.producer(Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, "txn-1", ProducerConfig.MAX_BLOCK_MS_CONFIG, 60_000))) {
            long started = System.nanoTime();
            assertThatThrownBy(producer::initTransactions).isInstanceOf(TransactionalIdAuthorizationException.class);
            assertThat((System.nanoTime() - started) / 1_000_000).as("ms until initTransactions failed")
                    .isLessThan(30_000);
        }
    }

    @Test
    void confluentKafkaInitTransactionsFailsAtOnce() throws Exception {
        ExternalClients.require("confluent-kafka (" + ExternalClients.PYTHON + ")", ExternalClients.PYTHON, "-c",
                "import confluent_kafka");
        Path script = Path.of("src/test/python/confluent_transactions_fail_fast.py").toAbsolutePath();
        var r = ExternalClients.run(new byte[0], List.of(ExternalClients.PYTHON, script.toString(), fx.bootstrap()));
        assertThat(r.exit()).as(r.output()).isZero();
        assertThat(r.output()).contains("transactions fail fast OK");
    }
}
