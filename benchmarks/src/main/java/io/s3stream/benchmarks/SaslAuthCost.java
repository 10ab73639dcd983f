package io.s3stream.benchmarks;

import io.s3stream.kafka.shell.KafkaShell;
import io.s3stream.kafka.shell.config.ShellConfig;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.config.SaslConfigs;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What authentication costs per connection on kafka-shell: an in-process shell with a SASL_PLAINTEXT listener
 * (PLAIN and SCRAM) and one with a PLAINTEXT listener; for each way in, {@code connections} times in a row a fresh
 * Admin client connects, authenticates and answers one DescribeCluster, and is closed. Prints the median and p90 of
 * that round trip per mechanism (the client's SCRAM key derivation included: it is what a connecting client pays).
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar io.s3stream.benchmarks.SaslAuthCost [connections=300]</pre>
 */
public final class SaslAuthCost {
    private SaslAuthCost() {
    }

    private static KafkaShell shell(Path dir, boolean sasl) {
        Map<String, String> m = new HashMap<>();
        m.put("listeners", (sasl ? "SASL_PLAINTEXT" : "PLAINTEXT") + "://127.0.0.1:0");
        m.put("s3stream.data.dir", dir.toString());
        m.put("s3stream.wal", "mem://auth-cost-" + sasl + "?capacity=64MiB");
        m.put("s3stream.object.store", "mem://auth-cost-" + sasl);
        m.put("s3stream.metadata", "mem://auth-cost-" + sasl);
        if (sasl) {
            m.put("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512");
            m.put("listener.name.sasl_plaintext.plain.sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";");
        }
        return KafkaShell.start(ShellConfig.of(m));
    }

    private static Map<String, Object> sasl(String mechanism, String module, String password) {
        return Map.of(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT", SaslConfigs.SASL_MECHANISM,
                mechanism, SaslConfigs.SASL_JAAS_CONFIG, module + " required username=\"alice\" password=\""
                        + password + "\";");
    }

    /** Milliseconds of each connect-authenticate-DescribeCluster-close. */
    private static double[] measure(String bootstrap, Map<String, Object> client, int connections) throws Exception {
        double[] ms = new double[connections];
        for (int i = -connections / 10; i < connections; i++) { // the first tenth warms up
            Map<String, Object> config = new HashMap<>(client);
            config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            long start = System.nanoTime();
            try (Admin admin = Admin.create(config)) {
                admin.describeCluster().clusterId().get();
            }
            if (i >= 0) {
                ms[i] = (System.nanoTime() - start) / 1e6;
            }
        }
        Arrays.sort(ms);
        return ms;
    }

    public static void main(String[] args) throws Exception {
        int connections = args.length > 0 ? Integer.parseInt(args[0]) : 300;
        Path dir = Files.createTempDirectory("sasl-auth-cost");
        try (KafkaShell plain = shell(dir.resolve("plain"), false); KafkaShell sasl = shell(dir.resolve("sasl"), true)) {
            String plainModule = "org.apache.kafka.common.security.plain.PlainLoginModule";
            String scramModule = "org.apache.kafka.common.security.scram.ScramLoginModule";
            try (Admin admin = Admin.create(withBootstrap(sasl("PLAIN", plainModule, "alice-secret"),
                    sasl.bootstrapServers()))) {
                admin.alterUserScramCredentials(List.of(
                        new UserScramCredentialUpsertion("alice", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256,
                                4096), "scram-256"),
                        new UserScramCredentialUpsertion("alice", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512,
                                4096), "scram-512"))).all().get();
            }
            Thread.sleep(1_000);
            Map<String, double[]> results = new java.util.LinkedHashMap<>();
            results.put("PLAINTEXT (no authentication)", measure(plain.bootstrapServers(), Map.of(), connections));
            results.put("SASL PLAIN", measure(sasl.bootstrapServers(), sasl("PLAIN", plainModule, "alice-secret"),
                    connections));
            results.put("SASL SCRAM-SHA-256 (4096 iterations)", measure(sasl.bootstrapServers(),
                    sasl("SCRAM-SHA-256", scramModule, "scram-256"), connections));
            results.put("SASL SCRAM-SHA-512 (4096 iterations)", measure(sasl.bootstrapServers(),
                    sasl("SCRAM-SHA-512", scramModule, "scram-512"), connections));
            double base = results.values().iterator().next()[connections / 2];
            System.out.printf("%-40s %10s %10s %12s%n", "connect + authenticate + DescribeCluster", "p50 ms", "p90 ms",
                    "p50 - plain");
            results.forEach((name, ms) -> System.out.printf("%-40s %10.2f %10.2f %12.2f%n", name, ms[connections / 2],
                    ms[connections * 9 / 10], ms[connections / 2] - base));
        }
    }

    private static Map<String, Object> withBootstrap(Map<String, Object> client, String bootstrap) {
        Map<String, Object> m = new HashMap<>(client);
        m.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return m;
    }
}
