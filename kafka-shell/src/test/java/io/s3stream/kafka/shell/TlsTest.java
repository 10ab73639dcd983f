package io.s3stream.kafka.shell;

import io.s3stream.InvalidConfigException;
import io.s3stream.kafka.shell.network.TlsContexts;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * SSL listeners with Kafka's {@code ssl.*} keys: the Java clients over TLS with a PKCS12 key store, mutual TLS
 * ({@code ssl.client.auth=required}: a client without a trusted certificate gets Kafka's authentication error), a PEM
 * key store with kcat and confluent-kafka, garbage instead of a handshake closing only that connection, both TLS
 * engines (the JDK's, the default, and OpenSSL), and a wrong key store password stopping the start with one line that
 * names the setting and not the password. Certificates are
 * made for each test with the JDK's keytool and with openssl.
 */
@Timeout(120)
class TlsTest {
    static final String PASSWORD = "changeit-" + Long.toHexString(new Random().nextLong());

    private static void run(Path dir, String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(String.join(" ", command) + "\n" + out).isZero();
    }

    private static String keytool() {
        return Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
    }

    /** A PKCS12 key store {@code <name>.p12} with an EC key and a self-signed certificate for 127.0.0.1 and localhost. */
    static Path keyStore(Path dir, String name) throws Exception {
        run(dir, keytool(), "-genkeypair", "-alias", name, "-keyalg", "EC", "-groupname", "secp256r1", "-dname",
                "CN=" + name, "-ext", "SAN=IP:127.0.0.1,DNS:localhost", "-validity", "2", "-storetype", "PKCS12",
                "-keystore", name + ".p12", "-storepass", PASSWORD);
        run(dir, keytool(), "-exportcert", "-rfc", "-alias", name, "-keystore", name + ".p12", "-storepass", PASSWORD,
                "-file", name + ".crt");
        return dir.resolve(name + ".p12");
    }

    /** A PKCS12 trust store {@code trust-<name>.p12} holding {@code <name>.crt}. */
    static Path trustStore(Path dir, String name) throws Exception {
        run(dir, keytool(), "-importcert", "-noprompt", "-alias", name, "-file", name + ".crt", "-storetype", "PKCS12",
                "-keystore", "trust-" + name + ".p12", "-storepass", PASSWORD);
        return dir.resolve("trust-" + name + ".p12");
    }

    private static Map<String, String> sslListener(Path keyStore) {
        return Map.of("listeners", "SSL://127.0.0.1:0", "ssl.keystore.location", keyStore.toString(),
                "ssl.keystore.password", PASSWORD);
    }

    static Map<String, Object> sslClient(Path trustStore) {
        return Map.of(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL",
                SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, trustStore.toString(),
                SslConfigs.SSL_TRUSTSTORE_PASSWORD_CONFIG, PASSWORD, SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PKCS12");
    }

    private static void roundTrip(ShellFixture fx, Map<String, Object> client, String topic) throws Exception {
        Map<String, Object> admin = new HashMap<>(client);
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, fx.bootstrap());
        try (Admin a = Admin.create(admin)) {
            a.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        try (KafkaProducer<String, String> p = fx.producer(client)) {
            for (int i = 0; i < 20; i++) {
                p.send(new ProducerRecord<>(topic, 0, null, "tls-" + i)).get();
            }
        }
        try (KafkaConsumer<String, String> c = fx.consumer(null, client)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            List<String> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 20_000;
            while (got.size() < 20 && System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(100)).forEach(r -> got.add(r.value()));
            }
            assertThat(got).hasSize(20).first().isEqualTo("tls-0");
        }
    }

    /** The subject of the certificate the listener at {@code port} presents now (trusting anything). */
    private static String servedSubject(int port) throws Exception {
        javax.net.ssl.SSLContext trustAll = javax.net.ssl.SSLContext.getInstance("TLS");
        trustAll.init(null, new javax.net.ssl.TrustManager[] {new javax.net.ssl.X509TrustManager() {
            @Override
            public void checkClientTrusted(java.security.cert.X509Certificate[] chain, String authType) {
            }

            @Override
            public void checkServerTrusted(java.security.cert.X509Certificate[] chain, String authType) {
            }

            @Override
            public java.security.cert.X509Certificate[] getAcceptedIssuers() {
                return new java.security.cert.X509Certificate[0];
            }
        }}, null);
        try (javax.net.ssl.SSLSocket s = (javax.net.ssl.SSLSocket) trustAll.getSocketFactory()
                .createSocket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            s.startHandshake();
            return ((java.security.cert.X509Certificate) s.getSession().getPeerCertificates()[0])
                    .getSubjectX500Principal().getName();
        }
    }

    @Test
    void aCertificateRenewedInPlaceIsServedWithoutARestart(@TempDir Path dir) throws Exception {
        Path old = keyStore(dir, "old");
        Path renewed = keyStore(dir, "renewed");
        Path served = dir.resolve("server.p12");
        Files.copy(old, served);
        Map<String, String> settings = new HashMap<>(sslListener(served));
        settings.put("s3stream.kafka.ssl.reload.check.ms", "100");
        try (ShellFixture fx = new ShellFixture(settings)) {
            int port = fx.shell.port();
            assertThat(servedSubject(port)).isEqualTo("CN=old");
            // A file that changed but is not a key store (half written): the old certificate keeps serving.
            Files.write(dir.resolve("partial.p12"), java.util.Arrays.copyOf(Files.readAllBytes(renewed), 100));
            Files.move(dir.resolve("partial.p12"), served, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                    java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            Thread.sleep(500);
            assertThat(servedSubject(port)).isEqualTo("CN=old");
            // The renewed store moved into place, as a certificate manager writes it.
            Files.copy(renewed, dir.resolve("next.p12"));
            Files.move(dir.resolve("next.p12"), served, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                    java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            long deadline = System.currentTimeMillis() + 10_000;
            String subject = servedSubject(port);
            while (!subject.equals("CN=renewed") && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
                subject = servedSubject(port);
            }
            assertThat(subject).isEqualTo("CN=renewed");
            // Clients that trust the renewed certificate work end to end.
            roundTrip(fx, sslClient(trustStore(dir, "renewed")), "after-renewal");
        }
    }

    @Test
    void javaClientsOverTlsAndGarbageInsteadOfAHandshake(@TempDir Path dir) throws Exception {
        Path broker = keyStore(dir, "broker");
        Path trust = trustStore(dir, "broker");
        try (ShellFixture fx = new ShellFixture(sslListener(broker))) {
            // Garbage where a ClientHello should be: that connection is closed, the listener keeps serving.
            try (Socket s = new Socket("127.0.0.1", fx.shell.port())) {
                s.setSoTimeout(10_000);
                byte[] junk = new byte[4096];
                new Random(7).nextBytes(junk);
                OutputStream out = s.getOutputStream();
                out.write(junk);
                out.flush();
                InputStream in = s.getInputStream();
                byte[] buf = new byte[1024];
                int n;
                while ((n = in.read(buf)) >= 0) {
                    assertThat(n).isLessThanOrEqualTo(buf.length); // a TLS alert at most, then the close
                }
            } catch (java.net.SocketException closedHard) {
                // a reset is a close too
            }
            roundTrip(fx, sslClient(trust), "over-tls");
        }
    }

    @Test
    void saslPlainOverTls(@TempDir Path dir) throws Exception {
        Path broker = keyStore(dir, "broker");
        Path trust = trustStore(dir, "broker");
        Map<String, String> listener = new HashMap<>(sslListener(broker));
        listener.put("listeners", "SASL_SSL://127.0.0.1:0");
        listener.put("listener.name.sasl_ssl.plain.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";");
        try (ShellFixture fx = new ShellFixture(listener)) {
            Map<String, Object> client = new HashMap<>(sslClient(trust));
            client.putAll(SaslTest.client("alice", "alice-secret"));
            client.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_SSL");
            roundTrip(fx, client, "sasl-ssl");
        }
    }

    @Test
    void mutualTlsRefusesAClientWithoutATrustedCertificate(@TempDir Path dir) throws Exception {
        Path broker = keyStore(dir, "broker");
        Path brokerTrust = trustStore(dir, "broker");
        Path client = keyStore(dir, "client");
        Path clientTrust = trustStore(dir, "client");
        Map<String, String> listener = new HashMap<>(sslListener(broker));
        listener.put("ssl.client.auth", "required");
        listener.put("ssl.truststore.location", clientTrust.toString());
        listener.put("ssl.truststore.password", PASSWORD);
        try (ShellFixture fx = new ShellFixture(listener)) {
            Map<String, Object> withCertificate = new HashMap<>(sslClient(brokerTrust));
            withCertificate.put(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG, client.toString());
            withCertificate.put(SslConfigs.SSL_KEYSTORE_PASSWORD_CONFIG, PASSWORD);
            withCertificate.put(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PKCS12");
            roundTrip(fx, withCertificate, "mtls");

            // The certificate's subject is the principal (ssl.principal.mapping.rules=DEFAULT: User:CN=client): a quota
            // for that user throttles this client.
            Map<String, Object> adminConfig = new HashMap<>(withCertificate);
            adminConfig.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, fx.bootstrap());
            try (Admin a = Admin.create(adminConfig)) {
                a.alterClientQuotas(List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration(
                        new org.apache.kafka.common.quota.ClientQuotaEntity(Map.of(
                                org.apache.kafka.common.quota.ClientQuotaEntity.USER, "CN=client")),
                        List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration.Op("producer_byte_rate",
                                100_000.0))))).all().get();
            }
            Map<String, Object> producerConfig = new HashMap<>(withCertificate);
            producerConfig.put(org.apache.kafka.clients.producer.ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                    "org.apache.kafka.common.serialization.StringSerializer");
            try (KafkaProducer<String, String> p = fx.producer(producerConfig)) {
                String value = "x".repeat(10_000);
                for (int i = 0; i < 150; i++) {
                    p.send(new ProducerRecord<>("mtls", 0, null, value));
                }
                p.flush();
                assertThat(ClientQuotasTest.metric(p.metrics(), "produce-throttle-time-max"))
                        .as("throttled as User:CN=client").isGreaterThan(0);
            }

            Map<String, Object> without = new HashMap<>(sslClient(brokerTrust));
            without.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, fx.bootstrap());
            try (Admin a = Admin.create(without)) {
                assertThatThrownBy(() -> a.describeCluster().nodes().get(60, TimeUnit.SECONDS))
                        .hasCauseInstanceOf(SslAuthenticationException.class);
            }
        }
    }

    @Test
    void anExpiredClientCertificateIsRefusedWithoutAStackTrace(@TempDir Path dir) throws Exception {
        Path broker = keyStore(dir, "broker");
        Path brokerTrust = trustStore(dir, "broker");
        // A client certificate signed by a trusted CA, valid from ten days ago for two days: expired a week ago. (A
        // self-signed certificate in the trust store itself is a trust anchor, whose dates PKIX does not check, in
        // Kafka as here: expiry is a CA-issued certificate's property.)
        run(dir, keytool(), "-genkeypair", "-alias", "ca", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=ca",
                "-ext", "bc:c", "-validity", "30", "-storetype", "PKCS12", "-keystore", "ca.p12", "-storepass", PASSWORD);
        run(dir, keytool(), "-exportcert", "-rfc", "-alias", "ca", "-keystore", "ca.p12", "-storepass", PASSWORD,
                "-file", "ca.crt");
        run(dir, keytool(), "-genkeypair", "-alias", "client", "-keyalg", "EC", "-groupname", "secp256r1", "-dname",
                "CN=expired", "-storetype", "PKCS12", "-keystore", "expired.p12", "-storepass", PASSWORD);
        run(dir, keytool(), "-certreq", "-alias", "client", "-keystore", "expired.p12", "-storepass", PASSWORD,
                "-file", "client.csr");
        run(dir, keytool(), "-gencert", "-alias", "ca", "-keystore", "ca.p12", "-storepass", PASSWORD, "-infile",
                "client.csr", "-outfile", "client.crt", "-rfc", "-startdate", "-10d", "-validity", "2");
        run(dir, keytool(), "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.crt", "-keystore", "expired.p12",
                "-storepass", PASSWORD);
        run(dir, keytool(), "-importcert", "-noprompt", "-alias", "client", "-file", "client.crt", "-keystore",
                "expired.p12", "-storepass", PASSWORD);
        Path expiredTrust = trustStore(dir, "ca");
        Map<String, String> listener = new HashMap<>(sslListener(broker));
        listener.put("ssl.client.auth", "required");
        listener.put("ssl.truststore.location", expiredTrust.toString());
        listener.put("ssl.truststore.password", PASSWORD);
        java.util.logging.Logger handlerLog = java.util.logging.Logger.getLogger(
                "io.s3stream.kafka.shell.network.KafkaConnectionHandler");
        List<java.util.logging.LogRecord> records = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                records.add(r);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        handlerLog.addHandler(capture);
        try (ShellFixture fx = new ShellFixture(listener)) {
            Map<String, Object> client = new HashMap<>(sslClient(brokerTrust));
            client.put(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG, dir.resolve("expired.p12").toString());
            client.put(SslConfigs.SSL_KEYSTORE_PASSWORD_CONFIG, PASSWORD);
            client.put(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PKCS12");
            client.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, fx.bootstrap());
            try (Admin a = Admin.create(client)) {
                assertThatThrownBy(() -> a.describeCluster().nodes().get(60, TimeUnit.SECONDS))
                        .hasCauseInstanceOf(SslAuthenticationException.class);
            }
        } finally {
            handlerLog.removeHandler(capture);
        }
        // At most one line (the line is rate-limited per process, so an earlier test may have used it), never a trace.
        assertThat(records.stream().filter(r -> r.getMessage() != null && r.getMessage().startsWith("TLS with")))
                .hasSizeLessThanOrEqualTo(1);
        assertThat(records).allSatisfy(r -> assertThat(r.getThrown()).isNull());
    }

    @Test
    void aPemKeyStoreWithKcatAndConfluentKafka(@TempDir Path dir) throws Exception {
        run(dir, "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", "key.pem", "-out", "cert.pem", "-days", "2", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost");
        Path pem = dir.resolve("broker.pem");
        Files.writeString(pem, Files.readString(dir.resolve("key.pem")) + Files.readString(dir.resolve("cert.pem")));
        try (ShellFixture fx = new ShellFixture(Map.of("listeners", "SSL://127.0.0.1:0", "ssl.keystore.type", "PEM",
                "ssl.keystore.location", pem.toString()))) {
            // The Java client with a PEM trust store.
            roundTrip(fx, Map.of(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL",
                    SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM",
                    SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, dir.resolve("cert.pem").toString()), "pem");

            ExternalClients.require("kcat", "kcat", "-V");
            String ca = dir.resolve("cert.pem").toString();
            var produced = ExternalClients.run("k1\nk2\nk3\n".getBytes(StandardCharsets.UTF_8), List.of("kcat", "-b",
                    fx.bootstrap(), "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + ca, "-P", "-t", "pem", "-p", "0"));
            assertThat(produced.exit()).as(produced.output()).isZero();
            var consumed = ExternalClients.run(new byte[0], List.of("kcat", "-b", fx.bootstrap(), "-X",
                    "security.protocol=ssl", "-X", "ssl.ca.location=" + ca, "-C", "-t", "pem", "-e", "-q"));
            assertThat(consumed.exit()).as(consumed.output()).isZero();
            assertThat(consumed.output().lines().toList()).hasSize(23).endsWith("k1", "k2", "k3");

            ExternalClients.require("confluent-kafka (" + ExternalClients.PYTHON + ")", ExternalClients.PYTHON, "-c",
                    "import confluent_kafka");
            String script = String.join("\n",
                    "import sys",
                    "from confluent_kafka import Producer, Consumer, TopicPartition",
                    "conf = {'bootstrap.servers': sys.argv[1], 'security.protocol': 'ssl', 'ssl.ca.location': sys.argv[2]}",
                    "p = Producer(conf)",
                    "for i in range(5): p.produce('pem', value=b'py-%d' % i, partition=0)",
                    "assert p.flush(30) == 0",
                    "c = Consumer(dict(conf, **{'group.id': 'py-tls', 'auto.offset.reset': 'earliest'}))",
                    "c.assign([TopicPartition('pem', 0, 0)])",
                    "got = []",
                    "while len(got) < 28:",
                    "    m = c.poll(10)",
                    "    assert m is not None and not m.error(), m and m.error()",
                    "    got.append(m.value())",
                    "assert got[-5:] == [b'py-%d' % i for i in range(5)], got",
                    "print('confluent tls OK')");
            var py = ExternalClients.run(new byte[0], List.of(ExternalClients.PYTHON, "-c", script, fx.bootstrap(), ca));
            assertThat(py.exit()).as(py.output()).isZero();
            assertThat(py.output()).contains("confluent tls OK");
        }
    }

    /**
     * The same listener settings on both TLS engines: the JDK's when nothing is set, OpenSSL (netty-tcnative's
     * BoringSSL, which ships for this platform) by name; a name that is neither stops the start naming the setting.
     */
    @Test
    void bothTlsEnginesServeTheSameSettings(@TempDir Path dir) throws Exception {
        Path broker = keyStore(dir, "broker");
        Path trust = trustStore(dir, "broker");
        assertThat(TlsContexts.server(sslListener(broker)::get)).isInstanceOf(io.netty.handler.ssl.JdkSslContext.class);
        assertThat(io.netty.handler.ssl.OpenSsl.isAvailable()).as("netty-tcnative loads on this platform").isTrue();
        Map<String, String> openssl = new HashMap<>(sslListener(broker));
        openssl.put(TlsContexts.ENGINE, "openssl");
        assertThat(TlsContexts.server(openssl::get)).isInstanceOf(io.netty.handler.ssl.OpenSslContext.class);
        try (ShellFixture fx = new ShellFixture(openssl)) {
            roundTrip(fx, sslClient(trust), "over-openssl");
        }
        Map<String, String> unknown = new HashMap<>(sslListener(broker));
        unknown.put(TlsContexts.ENGINE, "gnutls");
        assertThatThrownBy(() -> new ShellFixture(unknown).close()).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("s3stream.kafka.ssl.engine must be jdk or openssl");
    }

    @Test
    void aWrongKeyStorePasswordStopsTheStartWithOneClearLine(@TempDir Path dir) throws Exception {
        Path broker = keyStore(dir, "broker");
        String wrong = "not-the-password-" + System.nanoTime();
        assertThatThrownBy(() -> new ShellFixture(Map.of("listeners", "SSL://127.0.0.1:0", "ssl.keystore.location",
                broker.toString(), "ssl.keystore.password", wrong)).close())
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("ssl.keystore.location=" + broker)
                .hasMessageNotContaining(wrong);
    }
}
