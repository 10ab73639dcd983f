package io.s3stream.kafka.shell;

import io.s3stream.testing.S3Server;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A network partition between one shell and everything else. Shell 3 runs in a network namespace joined to the host by
 * a veth pair; MinIO listens on the host end, so shells 1 and 2 (on the host) and shell 3 reach the same bucket, and
 * the clients reach shell 3 through the veth. With an idempotent producer writing to all six partitions, the veth is
 * taken down: shell 3 can no longer renew its lease, write its WAL or answer anyone. The survivors take it over; every
 * partition is writable again. When the link comes back, shell 3's next renewal finds its lease gone: it reports
 * FENCED and exits with status 3, and nothing it may have done while cut off is visible. Every acknowledged record is
 * read back exactly once. Needs root (namespaces, veth), as the wal-blockdev loop-device tests do.
 */
@Timeout(300)
class NetworkPartitionIT {
    private static final int PARTITIONS = 6;
    private static final int RECORDS = 1500;

    @Test
    void aShellCutOffFromTheStoreIsTakenOverAndFencesItselfWhenTheLinkReturns() throws Exception {
        assertThat(ProcessHandle.current().info().user().orElse("")).as("this test creates a network namespace and a "
                + "veth pair: run it as root (CI does)").isEqualTo("root");
        int n = (int) (ProcessHandle.current().pid() % 200) + 20;
        String ns = "ks-np-" + n;
        String hostVeth = "knph" + n;
        String nsVeth = "knpn" + n;
        String hostIp = "10.213." + n + ".1";
        String nsIp = "10.213." + n + ".2";
        Path run = Files.createTempDirectory("kafka-netpart-");
        List<ProcessBrokerTest.Broker> shells = new ArrayList<>();
        S3Server.Running minio = null;
        try {
            sh("ip", "netns", "add", ns);
            sh("ip", "link", "add", hostVeth, "type", "veth", "peer", "name", nsVeth);
            sh("ip", "link", "set", nsVeth, "netns", ns);
            sh("ip", "addr", "add", hostIp + "/30", "dev", hostVeth);
            sh("ip", "link", "set", hostVeth, "up");
            sh("ip", "netns", "exec", ns, "ip", "addr", "add", nsIp + "/30", "dev", nsVeth);
            sh("ip", "netns", "exec", ns, "ip", "link", "set", nsVeth, "up");
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up");

            minio = S3Server.minioOn(hostIp);
            String store = minio.uri("netpart-" + System.nanoTime());
            for (int id = 1; id <= 3; id++) {
                String[] settings = {"node.id=" + id, "s3stream.object.store=" + store,
                        "s3stream.wal=objectwal://?batchMs=5&batchBytes=1MiB&capacity=256MiB",
                        "s3stream.kafka.reconcile.ms=200"};
                shells.add(id < 3
                        ? new ProcessBrokerTest.Broker(run.resolve("shell-" + id), ProcessBrokerTest.freePort(), settings)
                        : new ProcessBrokerTest.Broker(run.resolve("shell-" + id), nsIp, ProcessBrokerTest.freePort(),
                                List.of("ip", "netns", "exec", ns), settings));
            }
            String bootstrap = shells.get(0).bootstrap() + "," + shells.get(1).bootstrap();
            try (Admin admin = FailoverProcessTest.admin(bootstrap)) {
                FailoverProcessTest.createSpread(admin, "np", PARTITIONS); // shells 1, 2 and 3 lead two each

                FailoverProcessTest.Writes writes = new FailoverProcessTest.Writes();
                Set<String> acked = writes.acked();
                ConcurrentLinkedQueue<Exception> failures = writes.failures();
                AtomicInteger sent = writes.sent();
                try (KafkaProducer<String, String> producer = ProcessBrokerTest.producer(bootstrap, Map.of(
                        ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                        ProducerConfig.LINGER_MS_CONFIG, 2, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000,
                        ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000, ProducerConfig.METADATA_MAX_AGE_CONFIG, 1_000))) {
                    Thread writer = FailoverProcessTest.startWriter(producer, "np", PARTITIONS, "v", RECORDS, 4, writes);
                    while (sent.get() < RECORDS / 3) {
                        Thread.sleep(10);
                    }
                    long cut = System.nanoTime();
                    sh("ip", "link", "set", hostVeth, "down");
                    long writable = FailoverProcessTest.awaitAllWritable(bootstrap, "np", PARTITIONS);
                    System.out.printf("network partition: every partition writable again %d ms after shell 3 was "
                            + "cut off%n", TimeUnit.NANOSECONDS.toMillis(writable - cut));
                    FailoverProcessTest.awaitLeaders(admin, "np", l -> !l.containsValue(3), "no partition on shell 3");
                    ProcessBrokerTest.Broker three = shells.get(2);
                    assertThat(three.process.isAlive()).as("shell 3 runs on, cut off").isTrue();
                    sh("ip", "link", "set", hostVeth, "up");
                    assertThat(three.process.waitFor(60, TimeUnit.SECONDS))
                            .as("once the link is back, shell 3 finds itself fenced and exits").isTrue();
                    assertThat(three.process.exitValue()).isEqualTo(3);
                    assertThat(Files.readString(three.log)).contains("FENCED");
                    writer.join();
                    producer.flush();
                }
                assertThat(failures).as("no send failed").isEmpty();
                assertThat(acked).hasSize(RECORDS);
                List<String> values = new ArrayList<>();
                ProcessBrokerTest.readAll(bootstrap, "np", RECORDS).forEach(r -> {
                    if (!r.value().equals("probe")) {
                        values.add(r.value());
                    }
                });
                assertThat(values).as("every acknowledged record exactly once").hasSize(RECORDS)
                        .containsExactlyInAnyOrderElementsOf(acked);
            }
        } finally {
            Path keep = Files.createDirectories(Path.of("target", "failover-logs", "network-partition"));
            for (int i = 0; i < shells.size(); i++) {
                shells.get(i).process.destroyForcibly();
                shells.get(i).process.waitFor(30, TimeUnit.SECONDS);
                Files.copy(shells.get(i).log, keep.resolve("shell-" + (i + 1) + ".log"),
                        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
            if (minio != null) {
                minio.close();
            }
            quietly("ip", "link", "del", hostVeth);
            quietly("ip", "netns", "del", ns);
            try (var walk = Files.walk(run)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static void sh(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed: " + out);
        }
    }

    private static void quietly(String... cmd) {
        try {
            new ProcessBuilder(cmd).redirectErrorStream(true).start().waitFor();
        } catch (IOException | InterruptedException e) {
            // cleanup: nothing more to do
        }
    }
}
