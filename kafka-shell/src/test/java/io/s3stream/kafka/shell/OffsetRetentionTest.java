package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Offset retention (KIP-211) with the Java client: the offsets of a group whose members left, and of a group that only
 * ever committed (assign and commit, no membership), expire once no commit and no member has been seen for the
 * retention, and the groups are gone, key-value entries included; a group with a live member keeps offsets it
 * committed as long ago.
 */
class OffsetRetentionTest {
    private static final long RETENTION_MS = 3_000;
    private static final TopicPartition TP = new TopicPartition("events", 0);

    private static Map<TopicPartition, OffsetAndMetadata> offsets(Admin admin, String group) throws Exception {
        return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
    }

    private static Set<String> groups(Admin admin) throws Exception {
        return admin.listGroups().all().get(30, TimeUnit.SECONDS).stream().map(GroupListing::groupId)
                .collect(Collectors.toSet());
    }

    @Test
    void offsetsOfGroupsWithoutMembersExpireAndGroupsWithAMemberKeepTheirs() throws Exception {
        try (ShellFixture fx = new ShellFixture(Map.of("s3stream.kafka.offsets.retention.ms", "" + RETENTION_MS,
                "offsets.retention.check.interval.ms", "200"));
             Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic(TP.topic(), 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
                for (int i = 0; i < 10; i++) {
                    p.send(new ProducerRecord<>(TP.topic(), "k" + i, "v" + i));
                }
                p.flush();
            }
            Map<String, Object> manual = Map.of(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            long committedAt = System.currentTimeMillis();

            // A live member: subscribes, commits once, then keeps polling without committing again.
            AtomicBoolean stop = new AtomicBoolean();
            KafkaConsumer<String, String> member = fx.consumer("alive", manual);
            member.subscribe(List.of(TP.topic()));
            int seen = 0;
            while (seen < 10) {
                seen += member.poll(Duration.ofMillis(200)).count();
            }
            member.commitSync();
            Thread polling = Thread.ofPlatform().name("alive-member").start(() -> {
                while (!stop.get()) {
                    member.poll(Duration.ofMillis(100));
                }
            });
            try {
                try (KafkaConsumer<String, String> c = fx.consumer("left", manual)) {
                    c.subscribe(List.of(TP.topic()));
                    int read = 0;
                    while (read < 10) {
                        read += c.poll(Duration.ofMillis(200)).count();
                    }
                    c.commitSync();
                }
                try (KafkaConsumer<String, String> c = fx.consumer("standalone", manual)) {
                    c.assign(List.of(TP));
                    c.commitSync(Map.of(TP, new OffsetAndMetadata(5)));
                }
                assertThat(offsets(admin, "left").get(TP).offset()).isEqualTo(10);
                assertThat(offsets(admin, "standalone").get(TP).offset()).isEqualTo(5);
                assertThat(groups(admin)).contains("alive", "left", "standalone");

                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!offsets(admin, "left").isEmpty() || !offsets(admin, "standalone").isEmpty()) {
                    assertThat(System.nanoTime()).as("offsets still there after 60 s").isLessThan(deadline);
                    Thread.sleep(100);
                }
                // Observed no earlier than the expiry, which must not come before the retention.
                assertThat(System.currentTimeMillis() - committedAt).isGreaterThanOrEqualTo(RETENTION_MS);
                assertThat(groups(admin)).contains("alive").doesNotContain("left", "standalone");
                assertThat(fx.shell.keyValuesForTest().list("kafka/offset").join().keySet())
                        .as("nothing of the expired groups is left in the key-value space")
                        .allMatch(k -> k.contains("alive"));

                // The member's offsets are as old as the others', and stay while it is there.
                Thread.sleep(2 * 200 + 100);
                assertThat(offsets(admin, "alive").get(TP).offset()).isEqualTo(10);
            } finally {
                stop.set(true);
                polling.join();
                member.close();
            }

            // A group that comes back after its offsets expired starts over, from auto.offset.reset.
            try (KafkaConsumer<String, String> c = fx.consumer("left", manual)) {
                c.subscribe(List.of(TP.topic()));
                int read = 0;
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (read < 10 && System.nanoTime() < until) {
                    read += c.poll(Duration.ofMillis(200)).count();
                }
                assertThat(read).as("records read again from the start").isEqualTo(10);
            }
        }
    }
}
