package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A shell whose new instance registers its node epoch and then fails before it writes a lease (here: its metrics
 * port is taken) must not strand its partitions. Before {@code s3stream.kafka.lease.startup.grace.ms}, the survivors
 * saw "registered again" and left the node to the new instance every round, for ever: the partitions it led stayed
 * unavailable until someone started it again.
 */
@Timeout(180)
class FailedRestartTakeoverTest {

    @TempDir
    Path dir;

    @Test
    void aNewInstanceThatNeverComesUpIsTakenOverAfterTheStartupGrace() throws Exception {
        String[] common = {"s3stream.object.store=file://" + dir.resolve("objects"),
            "s3stream.wal=objectwal://?batchMs=5&batchBytes=1MiB&capacity=256MiB", "s3stream.kafka.reconcile.ms=200",
            "s3stream.kafka.lease.startup.grace.ms=3000"};
        List<ProcessBrokerTest.Broker> shells = new ArrayList<>();
        try {
            for (int id = 1; id <= 3; id++) {
                List<String> props = new ArrayList<>(List.of(common));
                props.add("node.id=" + id);
                shells.add(new ProcessBrokerTest.Broker(dir.resolve("shell-" + id), ProcessBrokerTest.freePort(),
                        props.toArray(String[]::new)));
            }
            String all = String.join(",", shells.stream().map(ProcessBrokerTest.Broker::bootstrap).toList());
            String survivors = shells.get(0).bootstrap() + "," + shells.get(1).bootstrap();
            Set<String> acked = new HashSet<>();
            try (Admin admin = FailoverProcessTest.admin(all)) {
                FailoverProcessTest.createSpread(admin, "fr", 6); // shell 3 leads partitions 4 and 5
                try (KafkaProducer<String, String> p = ProcessBrokerTest.producer(all,
                        Map.of(ProducerConfig.ACKS_CONFIG, "all"))) {
                    for (int i = 0; i < 60; i++) {
                        p.send(new ProducerRecord<>("fr", i % 6, null, "v" + i)).get(30, TimeUnit.SECONDS);
                        acked.add("v" + i);
                    }
                }

                // A second instance of node 3 registers (fencing the first, which exits) and fails before its lease.
                ProcessBrokerTest.Broker first = shells.get(2);
                try (ServerSocket taken = new ServerSocket(0)) {
                    List<String> props = new ArrayList<>(List.of(common));
                    props.addAll(List.of("node.id=3", "metrics.port=" + taken.getLocalPort()));
                    assertThatThrownBy(() -> new ProcessBrokerTest.Broker(dir.resolve("shell-3-again"),
                            ProcessBrokerTest.freePort(), props.toArray(String[]::new)))
                            .isInstanceOf(ProcessBrokerTest.Broker.Exited.class);
                }
                assertThat(first.process.waitFor(60, TimeUnit.SECONDS)).as("the first instance, fenced, exits")
                        .isTrue();
                assertThat(first.process.exitValue()).isEqualTo(3);

                FailoverProcessTest.awaitLeaders(admin, "fr", leaders -> !leaders.containsValue(3)
                        && !leaders.containsValue(-1), "all on shells 1 and 2");
                FailoverProcessTest.awaitAllWritable(survivors, "fr", 6);
            }
            String logs = Files.readString(shells.get(0).log) + Files.readString(shells.get(1).log);
            assertThat(logs).contains("registered again").contains("has written no lease since");
            List<String> values = new ArrayList<>();
            ProcessBrokerTest.readAll(survivors, "fr", acked.size() + 6).forEach(r -> values.add(r.value()));
            assertThat(values).as("every acknowledged record, and one probe per partition").containsAll(acked);
        } finally {
            for (ProcessBrokerTest.Broker b : shells) {
                b.process.destroyForcibly();
                b.process.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }
}
