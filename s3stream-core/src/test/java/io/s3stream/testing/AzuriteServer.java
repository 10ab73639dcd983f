package io.s3stream.testing;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A JUnit 5 extension that runs Azurite's blob service on a free 127.0.0.1 port for the tests of a JVM, like
 * {@link S3Server} does for S3:
 *
 * <pre>{@code
 * @RegisterExtension static final AzuriteServer AZURITE = new AzuriteServer();
 * ... ObjectStores.open(AZURITE.uri("test-" + UUID.randomUUID()))
 * }</pre>
 *
 * <p>{@code azurite-blob} is looked up in {@code S3STREAM_AZURITE_BIN}, {@code PATH},
 * {@code /opt/s3stream-tools/node_modules/.bin} and {@code /opt/s3stream-tools/bin}; it runs with
 * {@code --skipApiVersionCheck} (current SDKs are newer than Azurite knows) and {@code --disableTelemetry} (no
 * internet here). The container is created by the store's own client on first use of {@link #uri}. A missing Azurite
 * makes the test class fail with the install command; it is never skipped.
 */
public final class AzuriteServer implements BeforeAllCallback {
    /** Azurite's well-known development account and key (public, documented by Microsoft). */
    public static final String ACCOUNT = "devstoreaccount1";
    public static final String KEY =
            "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
    public static final String CONTAINER = "s3stream-test";
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(AzuriteServer.class);

    private volatile Running running;

    @Override
    public void beforeAll(ExtensionContext context) {
        running = context.getRoot().getStore(NAMESPACE).getOrComputeIfAbsent("azurite", k -> start(), Running.class);
    }

    /** An {@code azblob://} URI of the test container under {@code prefix}. */
    public String uri(String prefix) {
        if (running == null) {
            throw new IllegalStateException("AzuriteServer is used before beforeAll: register it with "
                    + "@RegisterExtension on a static field");
        }
        return running.uri(prefix);
    }

    /** Starts Azurite outside JUnit (benchmarks); the caller closes it. */
    public static Running start() {
        Running r = start(List.of(), false);
        try {
            r.createContainer();
        } catch (RuntimeException | AssertionError e) {
            r.close();
            throw e;
        }
        return r;
    }

    /**
     * Starts Azurite on HTTPS with the key and certificate of the PKCS12 file {@code pfx}, checking Entra ID bearer
     * tokens ({@code --oauth basic}: lifetime, issuer and audience, not the signature); the caller closes it. The
     * container is not created: a client of this Azurite must trust the certificate, which this JVM does not.
     */
    public static Running startHttpsWithOAuth(Path pfx, String pfxPassword) {
        return start(List.of("--cert", pfx.toString(), "--pwd", pfxPassword, "--oauth", "basic"), true);
    }

    private static Running start(List<String> extraArgs, boolean https) {
        String hint = "Azurite is needed for this test and was not found. Install it with\n"
                + "  npm install --prefix /opt/s3stream-tools azurite@3.35.0\n"
                + "(bin/test does this), put azurite-blob on PATH, or set S3STREAM_AZURITE_BIN.";
        List<Path> candidates = new ArrayList<>();
        String fromEnv = System.getenv("S3STREAM_AZURITE_BIN");
        if (fromEnv != null && !fromEnv.isBlank()) {
            candidates.add(Path.of(fromEnv));
        }
        candidates.addAll(TestServerProcess.onPath("azurite-blob"));
        candidates.add(Path.of("/opt/s3stream-tools/node_modules/.bin/azurite-blob"));
        candidates.add(Path.of("/opt/s3stream-tools/bin/azurite-blob"));
        Path binary = TestServerProcess.findExecutable(candidates)
                .orElseThrow(() -> new AssertionError(hint + " Looked in: " + candidates));
        int port = TestServerProcess.freePort();
        Path dir = TestServerProcess.tempDir("azurite");
        String endpoint = (https ? "https" : "http") + "://127.0.0.1:" + port + "/" + ACCOUNT;
        List<String> command = new ArrayList<>(List.of(binary.toString(), "--blobHost", "127.0.0.1",
                "--blobPort", String.valueOf(port), "--location", dir.resolve("data").toString(),
                "--skipApiVersionCheck", "--disableTelemetry", "--loose"));
        command.addAll(extraArgs);
        try {
            return new Running(TestServerProcess.start("azurite", command, Map.of(), dir,
                    https ? "tcp://127.0.0.1:" + port : endpoint + "?comp=list", status -> status > 0,
                    Duration.ofSeconds(60)), endpoint);
        } catch (IllegalStateException e) {
            throw new AssertionError("Azurite (" + binary + ") did not start: " + e.getMessage(), e);
        }
    }

    /**
     * A running Azurite.
     *
     * @param process  the child process
     * @param endpoint the blob endpoint including the account path
     */
    public record Running(TestServerProcess process, String endpoint) implements AutoCloseable {

        public String uri(String prefix) {
            return "azblob://" + ACCOUNT + "/" + CONTAINER + "/" + prefix + "?endpoint="
                    + URLEncoder.encode(endpoint, StandardCharsets.UTF_8) + "&key="
                    + URLEncoder.encode(KEY, StandardCharsets.UTF_8);
        }

        void createContainer() {
            new com.azure.storage.blob.BlobServiceClientBuilder()
                    .endpoint(endpoint)
                    .credential(new com.azure.storage.common.StorageSharedKeyCredential(ACCOUNT, KEY))
                    .buildClient().getBlobContainerClient(CONTAINER).createIfNotExists();
        }

        @Override
        public void close() {
            process.close();
        }
    }
}
