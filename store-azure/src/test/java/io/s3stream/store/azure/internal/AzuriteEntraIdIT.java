package io.s3stream.store.azure.internal;

import com.sun.net.httpserver.HttpServer;
import io.s3stream.testing.AzuriteServer;
import io.s3stream.testing.StorePrefixes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Entra ID: a store URI without a key or connection string authenticates with {@code DefaultAzureCredential}, here
 * through a managed identity. Azurite runs on HTTPS and checks bearer tokens ({@code --oauth basic}: lifetime, issuer,
 * audience); the identity endpoint is this test's own, speaking App Service's managed-identity protocol (the
 * {@code IDENTITY_ENDPOINT} and {@code IDENTITY_HEADER} an App Service or Azure Functions host sets). The application
 * is a child JVM ({@link EntraIdProbe}) with those variables in its environment and Azurite's certificate in its trust
 * store, as an operator would run it: a right token reads and writes; a token for another audience is refused with a
 * message that names the identity's role and never the token; without an identity, the open says none was found.
 */
@Timeout(180)
class AzuriteEntraIdIT {
    private static final String PASSWORD = "entra-" + Long.toHexString(new Random().nextLong());
    private static final String IDENTITY_HEADER = "identity-" + Long.toHexString(new Random().nextLong());

    @TempDir
    static Path dir;
    private static AzuriteServer.Running azurite;
    private static HttpServer identity;
    private static volatile String audience = "https://storage.azure.com";
    private static final List<String> tokenRequests = new CopyOnWriteArrayList<>();
    private static final List<String> issuedTokens = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        run(keytool, "-genkeypair", "-alias", "azurite", "-keyalg", "RSA", "-keysize", "2048", "-dname",
                "CN=127.0.0.1", "-ext", "SAN=IP:127.0.0.1,DNS:localhost", "-validity", "2", "-storetype", "PKCS12",
                "-keystore", "azurite.p12", "-storepass", PASSWORD);
        run(keytool, "-exportcert", "-rfc", "-alias", "azurite", "-keystore", "azurite.p12", "-storepass", PASSWORD,
                "-file", "azurite.crt");
        run(keytool, "-importcert", "-noprompt", "-alias", "azurite", "-file", "azurite.crt", "-storetype", "PKCS12",
                "-keystore", "trust.p12", "-storepass", PASSWORD);
        azurite = AzuriteServer.startHttpsWithOAuth(dir.resolve("azurite.p12"), PASSWORD);
        identity = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        identity.createContext("/msi/token", exchange -> {
            String header = exchange.getRequestHeaders().getFirst("X-IDENTITY-HEADER");
            tokenRequests.add(exchange.getRequestURI().getRawQuery() + " header=" + IDENTITY_HEADER.equals(header));
            long now = System.currentTimeMillis() / 1000;
            String token = jwt(Map.of("aud", audience, "iss", "https://sts.windows.net/72f988bf-0000-0000-0000-"
                    + "2d7cd011db47/", "iat", now - 60, "nbf", now - 60, "exp", now + 3600, "oid",
                    "5c1b9b36-0000-0000-0000-000000000001"));
            issuedTokens.add(token);
            byte[] body = ("{\"access_token\":\"" + token + "\",\"expires_on\":\"" + (now + 3600)
                    + "\",\"resource\":\"https://storage.azure.com\",\"token_type\":\"Bearer\","
                    + "\"client_id\":\"00000000-0000-0000-0000-000000000001\"}").getBytes(StandardCharsets.UTF_8);
            int status = IDENTITY_HEADER.equals(header) ? 200 : 401;
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(status, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        identity.start();
    }

    @AfterAll
    static void stop() {
        if (identity != null) {
            identity.stop(0);
        }
        if (azurite != null) {
            azurite.close();
        }
    }

    @Test
    void aManagedIdentityIsAllTheStoreNeeds() throws Exception {
        audience = "https://storage.azure.com";
        tokenRequests.clear();
        Result r = probe(true);
        assertThat(r.exit()).as(r.output()).isZero();
        assertThat(r.output()).contains("entra OK");
        // Tokens came from the identity endpoint, asked with the host's secret header for Azure Storage.
        assertThat(tokenRequests).isNotEmpty().allSatisfy(q -> assertThat(q)
                .contains("resource=" + URLEncoder.encode("https://storage.azure.com", StandardCharsets.UTF_8))
                .endsWith("header=true"));
    }

    @Test
    void aTokenForAnotherAudienceIsRefusedNamingTheRoleNotTheToken() throws Exception {
        audience = "https://vault.azure.net";
        issuedTokens.clear();
        try {
            Result r = probe(true);
            assertThat(r.exit()).as(r.output()).isEqualTo(3);
            assertThat(r.output()).contains("access denied: check that the Entra ID token is for this account's "
                    + "storage and that the identity holds a data role");
            assertThat(issuedTokens).isNotEmpty().allSatisfy(t -> assertThat(r.output()).doesNotContain(t));
        } finally {
            audience = "https://storage.azure.com";
        }
    }

    @Test
    void withoutAnIdentityTheOpenSaysNoneWasFound() throws Exception {
        Result r = probe(false);
        assertThat(r.exit()).as(r.output()).isEqualTo(3);
        assertThat(r.output()).contains("no Entra ID token: DefaultAzureCredential found no usable identity");
    }

    private record Result(int exit, String output) {
    }

    /** Runs {@link EntraIdProbe} in a JVM whose environment holds the managed identity or, without, no identity. */
    private static Result probe(boolean withIdentity) throws Exception {
        String uri = "azblob://" + AzuriteServer.ACCOUNT + "/" + AzuriteServer.CONTAINER + "/"
                + StorePrefixes.freshPrefix("entra") + "?endpoint=" + URLEncoder.encode(azurite.endpoint(),
                StandardCharsets.UTF_8);
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> command = new ArrayList<>(List.of(java, "-Xmx256m", "--enable-native-access=ALL-UNNAMED",
                "-Djavax.net.ssl.trustStore=" + dir.resolve("trust.p12"),
                "-Djavax.net.ssl.trustStorePassword=" + PASSWORD, "-Djavax.net.ssl.trustStoreType=PKCS12",
                "-cp", System.getProperty("java.class.path"), EntraIdProbe.class.getName(), azurite.endpoint(), uri));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        // Only the identity this test gives: nothing from the machine's environment or an Azure CLI login.
        pb.environment().keySet().removeIf(k -> k.startsWith("AZURE_") || k.startsWith("IDENTITY_")
                || k.startsWith("MSI_") || k.startsWith("IMDS_"));
        pb.environment().put("AZURE_CONFIG_DIR", dir.resolve("no-azure-cli").toString());
        if (withIdentity) {
            pb.environment().put("IDENTITY_ENDPOINT", "http://127.0.0.1:" + identity.getAddress().getPort()
                    + "/msi/token");
            pb.environment().put("IDENTITY_HEADER", IDENTITY_HEADER);
        }
        Process p = pb.start();
        byte[] out = p.getInputStream().readAllBytes();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        String output = new String(out, StandardCharsets.UTF_8);
        System.out.println("EntraIdProbe (identity " + withIdentity + ", audience " + audience + "), exit "
                + p.exitValue() + ":\n" + output);
        return new Result(p.exitValue(), output);
    }

    /** An unsigned-looking JWT with {@code claims}: Azurite's basic check reads the claims, not the signature. */
    private static String jwt(Map<String, Object> claims) {
        Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
        StringBuilder json = new StringBuilder("{");
        claims.forEach((k, v) -> json.append(json.length() > 1 ? "," : "").append('"').append(k).append("\":")
                .append(v instanceof String s ? "\"" + s + "\"" : v));
        json.append('}');
        return b64.encodeToString("{\"alg\":\"RS256\",\"typ\":\"JWT\"}".getBytes(StandardCharsets.UTF_8)) + "."
                + b64.encodeToString(json.toString().getBytes(StandardCharsets.UTF_8)) + "."
                + b64.encodeToString("not-signed".getBytes(StandardCharsets.UTF_8));
    }

    private static void run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(String.join(" ", command) + ": " + out).isZero();
    }
}
