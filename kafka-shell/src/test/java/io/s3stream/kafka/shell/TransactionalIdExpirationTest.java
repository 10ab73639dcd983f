package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code transactional.id.expiration.ms} with the Java client: a transactional id with no transaction in progress is
 * forgotten once it has not changed for that long (an application run that never comes back leaves nothing behind),
 * and a producer that comes back with it starts afresh.
 */
class TransactionalIdExpirationTest {
    private static final long EXPIRATION_MS = 2_000;

    private static Set<String> ids(Admin admin) throws Exception {
        return admin.listTransactions().all().get(30, TimeUnit.SECONDS).stream()
                .map(TransactionListing::transactionalId).collect(Collectors.toSet());
    }

    private static void commitOne(ShellFixture fx, String value) {
        try (KafkaProducer<String, String> p = fx.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "run-1"))) {
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>("out", value));
            p.commitTransaction();
        }
    }

    @Test
    void anIdleTransactionalIdIsForgottenAndCanBeUsedAgain() throws Exception {
        try (ShellFixture fx = new ShellFixture(Map.of("transactional.id.expiration.ms", "" + EXPIRATION_MS,
                "s3stream.kafka.transaction.sweep.ms", "100"));
             Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("out", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            commitOne(fx, "first");
            long committedAt = System.currentTimeMillis();
            assertThat(ids(admin)).contains("run-1");

            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (ids(admin).contains("run-1")) {
                assertThat(System.nanoTime()).as("still listed after 60 s").isLessThan(deadline);
                Thread.sleep(100);
            }
            // Observed no earlier than the expiry, which must not come before the id was idle that long.
            assertThat(System.currentTimeMillis() - committedAt).isGreaterThanOrEqualTo(EXPIRATION_MS);
            assertThatThrownBy(() -> admin.describeTransactions(List.of("run-1")).all().get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(TransactionalIdNotFoundException.class);

            commitOne(fx, "second");
            List<String> read = new ArrayList<>();
            try (KafkaConsumer<String, String> c = fx.consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                    "read_committed"))) {
                c.assign(List.of(new org.apache.kafka.common.TopicPartition("out", 0)));
                c.seekToBeginning(c.assignment());
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (read.size() < 2 && System.nanoTime() < until) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        read.add(r.value());
                    }
                }
            }
            assertThat(read).containsExactly("first", "second");
        }
    }
}
