package io.s3stream.kafka.shell;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.s3stream.InvalidConfigException;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.internals.BrokerSecurityConfigs;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

import java.math.BigInteger;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Signature;
import java.security.interfaces.RSAPublicKey;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * SASL/OAUTHBEARER with tokens from an identity provider, as Kafka configures it: this test is the provider (a JWKS
 * endpoint with an RSA key, and an OAuth client-credentials token endpoint issuing RS256-signed JWTs), the shell
 * validates tokens against the JWKS ({@code sasl.oauthbearer.jwks.endpoint.url}, expected audience and issuer), and
 * Java clients log in with Kafka's own {@code OAuthBearerLoginCallbackHandler}. The token's subject is the principal
 * ACLs see; a token signed by another key or for another audience is refused; unsigned tokens are never accepted.
 */
@Timeout(120)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class) // the refusal log line is rate-limited per JVM: its check first
class OAuthBearerTest {
    private static final String ISSUER = "https://idp.example.com";
    private static final String AUDIENCE = "kafka-shell";

    private final KeyPair key = rsa();
    private final KeyPair otherKey = rsa();
    private final AtomicInteger jwksRequests = new AtomicInteger();
    private final java.util.Set<String> issued = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private HttpServer idp;
    private String jwksUrl;
    private String tokenUrl;
    private String allowedBefore;

    private static KeyPair rsa() {
        try {
            KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
            g.initialize(2048);
            return g.generateKeyPair();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    private static String b64(byte[] bytes) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    private static String b64(BigInteger n) {
        byte[] bytes = n.toByteArray();
        return b64(bytes[0] == 0 ? java.util.Arrays.copyOfRange(bytes, 1, bytes.length) : bytes);
    }

    /** An RS256 JWT for {@code subject}, signed with {@code signer}, valid for an hour. */
    private static String jwt(KeyPair signer, String subject, String audience) throws Exception {
        long now = System.currentTimeMillis() / 1000;
        String header = b64("{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"k1\"}".getBytes(StandardCharsets.UTF_8));
        String payload = b64(("{\"sub\":\"" + subject + "\",\"iss\":\"" + ISSUER + "\",\"aud\":\"" + audience
                + "\",\"iat\":" + now + ",\"exp\":" + (now + 3600) + ",\"scope\":\"kafka\"}")
                .getBytes(StandardCharsets.UTF_8));
        Signature rs256 = Signature.getInstance("SHA256withRSA");
        rs256.initSign(signer.getPrivate());
        rs256.update((header + "." + payload).getBytes(StandardCharsets.US_ASCII));
        return header + "." + payload + "." + b64(rs256.sign());
    }

    @BeforeEach
    void startIdentityProvider() throws Exception {
        idp = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        RSAPublicKey pub = (RSAPublicKey) key.getPublic();
        byte[] jwks = ("{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"k1\",\"use\":\"sig\",\"alg\":\"RS256\",\"n\":\""
                + b64(pub.getModulus()) + "\",\"e\":\"" + b64(pub.getPublicExponent()) + "\"}]}")
                .getBytes(StandardCharsets.UTF_8);
        idp.createContext("/jwks", ex -> {
            jwksRequests.incrementAndGet();
            respond(ex, 200, jwks);
        });
        // Client credentials (RFC 6749 4.4): the client id chooses the token, as an identity provider's client
        // registrations would. "forged" gets a token signed with a key the JWKS does not hold, "elsewhere" one for
        // another audience.
        idp.createContext("/token", ex -> {
            String basic = ex.getRequestHeaders().getFirst("Authorization");
            String clientId = new String(Base64.getDecoder().decode(basic.substring("Basic ".length())),
                    StandardCharsets.UTF_8).split(":", 2)[0];
            try {
                String token = switch (clientId) {
                    case "forged" -> jwt(otherKey, "alice", AUDIENCE);
                    case "elsewhere" -> jwt(key, "alice", "another-service");
                    default -> jwt(key, clientId, AUDIENCE);
                };
                issued.add(token);
                respond(ex, 200, ("{\"access_token\":\"" + token + "\",\"token_type\":\"Bearer\",\"expires_in\":3600}")
                        .getBytes(StandardCharsets.UTF_8));
            } catch (Exception e) {
                respond(ex, 500, e.toString().getBytes(StandardCharsets.UTF_8));
            }
        });
        idp.start();
        String base = "http://127.0.0.1:" + idp.getAddress().getPort();
        jwksUrl = base + "/jwks";
        tokenUrl = base + "/token";
        // Kafka 4 fetches tokens and keys only from URLs this JVM allows (clients and shell share the JVM here).
        allowedBefore = System.getProperty(BrokerSecurityConfigs.ALLOWED_SASL_OAUTHBEARER_URLS_CONFIG);
        System.setProperty(BrokerSecurityConfigs.ALLOWED_SASL_OAUTHBEARER_URLS_CONFIG, jwksUrl + "," + tokenUrl);
    }

    @AfterEach
    void stopIdentityProvider() {
        idp.stop(0);
        if (allowedBefore == null) {
            System.clearProperty(BrokerSecurityConfigs.ALLOWED_SASL_OAUTHBEARER_URLS_CONFIG);
        } else {
            System.setProperty(BrokerSecurityConfigs.ALLOWED_SASL_OAUTHBEARER_URLS_CONFIG, allowedBefore);
        }
    }

    private static void respond(HttpExchange ex, int status, byte[] body) throws java.io.IOException {
        ex.getResponseHeaders().add("Content-Type", "application/json");
        ex.sendResponseHeaders(status, body.length);
        try (var out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    private Map<String, String> listener() {
        Map<String, String> m = new HashMap<>();
        m.put("listeners", "SASL_PLAINTEXT://127.0.0.1:0");
        m.put("sasl.enabled.mechanisms", "OAUTHBEARER");
        m.put("listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url", jwksUrl);
        m.put("sasl.oauthbearer.expected.audience", AUDIENCE);
        m.put("sasl.oauthbearer.expected.issuer", ISSUER);
        m.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
        m.put("super.users", "User:admin");
        return m;
    }

    /** A Java client logging in with Kafka's OAuth client-credentials handler against this test's token endpoint. */
    private Map<String, Object> client(String clientId) {
        return Map.of(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT",
                SaslConfigs.SASL_MECHANISM, "OAUTHBEARER",
                SaslConfigs.SASL_LOGIN_CALLBACK_HANDLER_CLASS,
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
                SaslConfigs.SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL, tokenUrl,
                SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                        + "required clientId=\"" + clientId + "\" clientSecret=\"" + clientId + "-secret\";");
    }

    private static Admin admin(ShellFixture fx, Map<String, Object> client) {
        Map<String, Object> m = new HashMap<>(client);
        m.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, fx.bootstrap());
        m.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
        m.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        return Admin.create(m);
    }

    private static Map<String, Object> quick(Map<String, Object> client) {
        Map<String, Object> m = new HashMap<>(client);
        m.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 15_000);
        m.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 15_000);
        m.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        return m;
    }

    @Test
    @Order(1)
    void theTokenSubjectIsThePrincipalAndForgedOrMisdirectedTokensAreRefused() throws Exception {
        List<java.util.logging.LogRecord> logged = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord record) {
                logged.add(record);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
        root.addHandler(capture);
        try (ShellFixture fx = new ShellFixture(listener())) {
            assertThat(jwksRequests.get()).as("the shell read the JWKS at start").isPositive();
            try (Admin admin = admin(fx, client("admin"))) {
                admin.createTopics(List.of(new NewTopic("oauth", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
                ResourcePattern topic = new ResourcePattern(ResourceType.TOPIC, "oauth", PatternType.LITERAL);
                admin.createAcls(List.of(new AclBinding(topic, new AccessControlEntry("User:alice", "*",
                        AclOperation.WRITE, AclPermissionType.ALLOW)))).all().get(30, TimeUnit.SECONDS);
            }
            try (KafkaProducer<String, String> p = fx.producer(quick(client("alice")))) {
                for (int i = 0; i < 5; i++) {
                    p.send(new ProducerRecord<>("oauth", 0, null, "v" + i)).get(30, TimeUnit.SECONDS);
                }
            }
            // A valid token of another subject authenticates, and is that subject: no ACL lets it write.
            try (KafkaProducer<String, String> p = fx.producer(quick(client("mallory")))) {
                assertThatThrownBy(() -> p.send(new ProducerRecord<>("oauth", 0, null, "x")).get(30, TimeUnit.SECONDS))
                        .isInstanceOf(ExecutionException.class).cause().isInstanceOf(TopicAuthorizationException.class);
            }
            for (String refused : List.of("forged", "elsewhere")) {
                try (KafkaProducer<String, String> p = fx.producer(quick(client(refused)))) {
                    assertThatThrownBy(() -> p.send(new ProducerRecord<>("oauth", 0, null, "x")).get(30,
                            TimeUnit.SECONDS)).as(refused).isInstanceOf(ExecutionException.class).cause()
                            .isInstanceOf(SaslAuthenticationException.class);
                }
            }
            List<String> read = new java.util.ArrayList<>();
            try (var c = fx.consumer(null, client("admin"))) {
                var tp = new org.apache.kafka.common.TopicPartition("oauth", 0);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                long deadline = System.currentTimeMillis() + 20_000;
                while (read.size() < 5 && System.currentTimeMillis() < deadline) {
                    c.poll(java.time.Duration.ofMillis(200)).forEach(r -> read.add(r.value()));
                }
            }
            assertThat(read).containsExactly("v0", "v1", "v2", "v3", "v4");
        } finally {
            root.removeHandler(capture);
        }
        // The refusals are logged in one line each (rate-limited), without a stack trace and without the token.
        java.util.logging.SimpleFormatter format = new java.util.logging.SimpleFormatter();
        List<String> lines = logged.stream().map(format::format).toList();
        assertThat(lines).anyMatch(l -> l.contains("OAUTHBEARER token refused") && l.contains("invalid signature"));
        assertThat(issued).hasSizeGreaterThanOrEqualTo(4);
        for (String token : issued) {
            assertThat(lines).noneMatch(l -> l.contains(token) || l.contains(token.substring(token.lastIndexOf('.'))));
        }
        assertThat(logged).noneMatch(r -> r.getLoggerName() != null
                && r.getLoggerName().startsWith("org.apache.kafka.common.security.oauthbearer")
                && r.getThrown() != null);
    }

    /**
     * librdkafka (confluent-kafka) fetching its own tokens from the provider's token endpoint
     * ({@code sasl.oauthbearer.method=oidc}): its token's subject gets the ACLs granted to it, and a client whose token
     * is signed by a key the JWKS does not hold is refused with an authentication error.
     */
    @Test
    @Order(2)
    void librdkafkaLogsInWithATokenItFetchesItselfAndAForgedOneIsRefused() throws Exception {
        ExternalClients.require("confluent-kafka (" + ExternalClients.PYTHON + ")", ExternalClients.PYTHON, "-c",
                "import confluent_kafka");
        try (ShellFixture fx = new ShellFixture(listener())) {
            try (Admin admin = admin(fx, client("admin"))) {
                admin.createTopics(List.of(new NewTopic("oauth-py", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
                ResourcePattern topic = new ResourcePattern(ResourceType.TOPIC, "oauth-py", PatternType.LITERAL);
                ResourcePattern group = new ResourcePattern(ResourceType.GROUP, "oauth-oauth-py", PatternType.LITERAL);
                List<AclBinding> acls = new java.util.ArrayList<>();
                for (AclOperation op : List.of(AclOperation.WRITE, AclOperation.READ)) {
                    acls.add(new AclBinding(topic, new AccessControlEntry("User:carol", "*", op, AclPermissionType.ALLOW)));
                }
                acls.add(new AclBinding(group, new AccessControlEntry("User:carol", "*", AclOperation.READ,
                        AclPermissionType.ALLOW)));
                admin.createAcls(acls).all().get(30, TimeUnit.SECONDS);
            }
            java.nio.file.Path script = java.nio.file.Path.of("src/test/python/confluent_oauthbearer.py").toAbsolutePath();
            var ok = ExternalClients.run(new byte[0], List.of(ExternalClients.PYTHON, script.toString(), fx.bootstrap(),
                    tokenUrl, "carol", "oauth-py"));
            assertThat(ok.exit()).as(ok.output()).isZero();
            assertThat(ok.output()).contains("oauthbearer OK 20 records");
            var forged = ExternalClients.run(new byte[0], List.of(ExternalClients.PYTHON, script.toString(),
                    fx.bootstrap(), tokenUrl, "forged", "oauth-py"));
            assertThat(forged.exit()).as(forged.output()).isEqualTo(3);
            assertThat(forged.output()).contains("oauthbearer AUTH FAILED");
        }
    }

    @Test
    void oauthBearerWithoutAJwksEndpointOrWithAPlugInDoesNotStart() {
        Map<String, String> noJwks = listener();
        noJwks.remove("listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url");
        assertThatThrownBy(() -> new ShellFixture(noJwks).close()).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("sasl.oauthbearer.jwks.endpoint.url is not set")
                .hasMessageContaining("never accepts unsigned tokens");
        Map<String, String> plugIn = listener();
        plugIn.put("sasl.server.callback.handler.class",
                "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler");
        assertThatThrownBy(() -> new ShellFixture(plugIn).close()).isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("sasl.server.callback.handler.class")
                .hasMessageContaining("is not supported");
    }
}
