package io.s3stream.testing;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.S3Exception;

import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.function.BooleanSupplier;

/**
 * A JUnit 5 extension that provides an S3 endpoint with an empty bucket, for integration tests of the S3 object store:
 *
 * <pre>{@code
 * @RegisterExtension static final S3Server S3 = S3Server.minio();   // or S3Server.s3proxy()
 * ... ObjectStores.open(S3.uri("test-" + UUID.randomUUID()))
 * }</pre>
 *
 * <p>Where the endpoint comes from, in order:
 * <ol>
 *   <li>{@code S3STREAM_TEST_S3_ENDPOINT} (with {@code S3STREAM_TEST_S3_ACCESS_KEY}, {@code _SECRET_KEY},
 *       {@code _BUCKET}, {@code _REGION}; defaults minioadmin/minioadmin, s3stream-test, us-east-1): a server of the
 *       user's, used for both kinds;</li>
 *   <li>for MinIO, where a Docker engine exists and Testcontainers is on the test class path: a container of
 *       Testcontainers' MinIO module ({@link MinioContainer}; image {@code S3STREAM_TEST_MINIO_IMAGE});
 *       {@code S3STREAM_TEST_DOCKER=never} turns this off, {@code =always} makes a missing engine an error;</li>
 *   <li>otherwise the server is started as a child process on a free 127.0.0.1 port: S3Proxy 4.1.0 in a child JVM
 *       (its jar is copied to {@code target/test-servers} by the build, or found in {@code ~/.m2}), or the
 *       {@code minio} binary from {@code S3STREAM_MINIO_BIN}, {@code PATH} or {@code /opt/s3stream-tools/bin}.</li>
 * </ol>
 * {@link #choose} makes that decision; {@code S3ServerSelectionTest} covers it with Docker reported present and
 * absent. A MinIO on a given address ({@link #minioOn}, for network-namespace tests) is always a process.
 * One server of each kind is started per test JVM, on first use, and stopped when the JVM's tests end. Tests isolate
 * themselves with a unique key prefix in the shared bucket.
 *
 * <p>A server that cannot be found or started makes the test class FAIL, with a message saying how to install it:
 * these tests are never skipped, in CI or elsewhere.
 */
public final class S3Server implements BeforeAllCallback {
    /** The S3 servers this extension can start. */
    public enum Kind { S3PROXY, MINIO }

    /** Where a server comes from. */
    public enum Source { EXTERNAL, CONTAINER, PROCESS }

    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(S3Server.class);
    /**
     * The KMS key the MinIO started here has (a static key, {@code MINIO_KMS_SECRET_KEY}), so SSE-S3 and SSE-KMS
     * with this key id work against it.
     */
    public static final String KMS_KEY_ID = "s3stream-test-key";
    /** 32 fixed bytes, base64: a test key, protecting nothing. */
    private static final String KMS_KEY = "s3stream-test-key:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    private static final String MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c";
    private static final String S3PROXY_JAR = "s3proxy-4.1.0-jar-with-dependencies.jar";

    private final Kind kind;
    private volatile Running running;

    private S3Server(Kind kind) {
        this.kind = kind;
    }

    public static S3Server s3proxy() {
        return new S3Server(Kind.S3PROXY);
    }

    public static S3Server minio() {
        return new S3Server(Kind.MINIO);
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        running = context.getRoot().getStore(NAMESPACE).getOrComputeIfAbsent(kind, k -> start(kind), Running.class);
    }

    /** The running server; valid from {@code beforeAll}. */
    public Running server() {
        if (running == null) {
            throw new IllegalStateException("S3Server is used before beforeAll: register it with @RegisterExtension "
                    + "on a static field");
        }
        return running;
    }

    /** An {@code s3://} URI of the test bucket under {@code prefix}, with endpoint and keys. */
    public String uri(String prefix) {
        return server().uri(prefix);
    }

    /**
     * Starts (or, with {@code S3STREAM_TEST_S3_ENDPOINT}, connects to) a server outside JUnit, for benchmarks. The
     * caller closes it.
     */
    public static Running start(Kind kind) {
        Source source = choose(kind, System.getenv(), S3Server::dockerAvailable);
        if (source == Source.EXTERNAL) {
            String external = System.getenv("S3STREAM_TEST_S3_ENDPOINT");
            Running r = new Running("external " + external, null, external,
                    System.getenv().getOrDefault("S3STREAM_TEST_S3_ACCESS_KEY", "minioadmin"),
                    System.getenv().getOrDefault("S3STREAM_TEST_S3_SECRET_KEY", "minioadmin"),
                    System.getenv().getOrDefault("S3STREAM_TEST_S3_BUCKET", "s3stream-test"),
                    System.getenv().getOrDefault("S3STREAM_TEST_S3_REGION", "us-east-1"));
            r.createBucket();
            return r;
        }
        if (source == Source.CONTAINER) {
            return withBucket(MinioContainer.start(
                    System.getenv().getOrDefault("S3STREAM_TEST_MINIO_IMAGE", MinioContainer.DEFAULT_IMAGE), KMS_KEY));
        }
        return withBucket(switch (kind) {
            case MINIO -> startMinio();
            case S3PROXY -> startS3Proxy();
        });
    }

    /**
     * Where a server of {@code kind} comes from, given the environment and whether a Docker engine answers (asked
     * only when it matters): {@code S3STREAM_TEST_S3_ENDPOINT} wins; then {@code S3STREAM_TEST_DOCKER} ({@code auto},
     * the default: a container for MinIO when Docker is available; {@code never}; {@code always}: a container for
     * MinIO, an error without Docker). S3Proxy is a Java process everywhere.
     */
    public static Source choose(Kind kind, Map<String, String> env, BooleanSupplier dockerAvailable) {
        String external = env.get("S3STREAM_TEST_S3_ENDPOINT");
        if (external != null && !external.isBlank()) {
            return Source.EXTERNAL;
        }
        String docker = env.getOrDefault("S3STREAM_TEST_DOCKER", "auto").trim();
        return switch (docker) {
            case "never" -> Source.PROCESS;
            case "auto" -> kind == Kind.MINIO && dockerAvailable.getAsBoolean() ? Source.CONTAINER : Source.PROCESS;
            case "always" -> {
                if (kind != Kind.MINIO) {
                    yield Source.PROCESS;
                }
                if (!dockerAvailable.getAsBoolean()) {
                    throw new AssertionError("S3STREAM_TEST_DOCKER=always, but no Docker engine answers (or "
                            + "org.testcontainers:minio is not on this module's test class path)");
                }
                yield Source.CONTAINER;
            }
            default -> throw new AssertionError("S3STREAM_TEST_DOCKER must be auto, never or always, was '"
                    + docker + "'");
        };
    }

    /** Whether Testcontainers is on this test class path and finds a Docker engine. */
    private static boolean dockerAvailable() {
        try {
            Class.forName("org.testcontainers.DockerClientFactory", false, S3Server.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            return false; // MinioContainer, which needs it, is never loaded
        }
        // Testcontainers reports a missing engine at ERROR, with a page of strategies tried; where its slf4j output
        // reaches java.util.logging (kafka-shell's tests), that would print on every start. The answer is enough.
        java.util.logging.Logger quiet = java.util.logging.Logger.getLogger("org.testcontainers");
        java.util.logging.Level level = quiet.getLevel();
        quiet.setLevel(java.util.logging.Level.OFF);
        try {
            return MinioContainer.dockerAvailable();
        } finally {
            quiet.setLevel(level);
        }
    }

    /** Creates the test bucket on a server just started, stopping the server if that fails. */
    private static Running withBucket(Running r) {
        try {
            r.createBucket();
        } catch (RuntimeException e) {
            r.close();
            throw e;
        }
        return r;
    }

    /**
     * Starts a MinIO of its own, listening on {@code host} (an address of this machine, such as the host end of a veth
     * pair whose other end is in a network namespace), with the test bucket created; the caller closes it.
     */
    public static Running minioOn(String host) {
        return withBucket(startMinio(host));
    }

    /**
     * Starts a MinIO of its own on 127.0.0.1 whose drive is {@code drive} (for example a small file system the test
     * fills, to see what a full bucket does), with the test bucket created; the caller closes it. Always a process,
     * whatever {@code S3STREAM_TEST_S3_ENDPOINT} says: the test needs the drive.
     */
    public static Running minioOnDrive(Path drive) {
        return withBucket(startMinio("127.0.0.1", drive));
    }

    private static Running startMinio() {
        return startMinio("127.0.0.1");
    }

    private static Running startMinio(String host) {
        return startMinio(host, null);
    }

    private static Running startMinio(String host, Path drive) {
        String hint = "MinIO is needed for this test and was not found. Install the pinned build with\n"
                + "  GOBIN=/opt/s3stream-tools/bin go install github.com/minio/minio@" + MINIO_VERSION + "\n"
                + "(about 9 minutes on 2 cores; bin/test does it when no binary is cached), put a minio binary on PATH, "
                + "set S3STREAM_MINIO_BIN, or point S3STREAM_TEST_S3_ENDPOINT at a running S3 server.";
        String fromEnv = System.getenv("S3STREAM_MINIO_BIN");
        List<Path> candidates = new java.util.ArrayList<>();
        if (fromEnv != null && !fromEnv.isBlank()) {
            candidates.add(Path.of(fromEnv));
        }
        candidates.addAll(TestServerProcess.onPath("minio"));
        candidates.add(Path.of("/opt/s3stream-tools/bin/minio"));
        Path binary = TestServerProcess.findExecutable(candidates)
                .orElseThrow(() -> new AssertionError(hint + " Looked in: " + candidates));
        int port = TestServerProcess.freePort();
        int consolePort = TestServerProcess.freePort();
        Path dir = TestServerProcess.tempDir("minio");
        String endpoint = "http://" + host + ":" + port;
        TestServerProcess process;
        try {
            Path data = drive != null ? drive : dir.resolve("data");
            process = TestServerProcess.start("minio", List.of(binary.toString(), "server", data.toString(),
                            "--address", host + ":" + port, "--console-address", "127.0.0.1:" + consolePort, "--quiet"),
                    Map.of("MINIO_ROOT_USER", "minioadmin", "MINIO_ROOT_PASSWORD", "minioadmin", "MINIO_UPDATE", "off",
                            "MINIO_BROWSER", "off", "MINIO_CI_CD", "1", "MINIO_KMS_SECRET_KEY", KMS_KEY),
                    dir, endpoint + "/minio/health/ready", status -> status == 200, Duration.ofSeconds(60));
        } catch (IllegalStateException e) {
            throw new AssertionError("MinIO (" + binary + ") did not start: " + e.getMessage(), e);
        }
        return new Running("minio " + endpoint, process, endpoint, "minioadmin", "minioadmin", "s3stream-test",
                "us-east-1");
    }

    private static Running startS3Proxy() {
        String hint = "S3Proxy is needed for this test and was not found. Run the tests through Maven (it copies "
                + "org.gaul:s3proxy:4.1.0:jar-with-dependencies to store-s3/target/test-servers/s3proxy.jar), or "
                + "fetch it with ./mvnw dependency:get -Dartifact=org.gaul:s3proxy:4.1.0:jar:jar-with-dependencies, or "
                + "point S3STREAM_TEST_S3_ENDPOINT at a running S3 server.";
        List<Path> candidates = List.of(
                Path.of("target", "test-servers", "s3proxy.jar"),
                Path.of("store-s3", "target", "test-servers", "s3proxy.jar"),
                Path.of(System.getProperty("user.home"), ".m2", "repository", "org", "gaul", "s3proxy", "4.1.0",
                        S3PROXY_JAR));
        Path jar = candidates.stream().filter(Files::isRegularFile).findFirst()
                .orElseThrow(() -> new AssertionError(hint + " Looked in: " + candidates));
        int port = TestServerProcess.freePort();
        Path dir = TestServerProcess.tempDir("s3proxy");
        String endpoint = "http://127.0.0.1:" + port;
        try {
            Files.createDirectories(dir.resolve("blobs"));
            Files.writeString(dir.resolve("s3proxy.conf"), String.join("\n",
                    "s3proxy.endpoint=" + endpoint,
                    "s3proxy.authorization=aws-v2-or-v4",
                    "s3proxy.identity=s3proxy",
                    "s3proxy.credential=s3proxy-secret",
                    "jclouds.provider=filesystem",
                    "jclouds.filesystem.basedir=" + dir.resolve("blobs"),
                    ""));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        String java = ProcessHandle.current().info().command().orElse("java");
        TestServerProcess process;
        try {
            process = TestServerProcess.start("s3proxy", List.of(java, "-Xmx512m", "-jar", jar.toAbsolutePath().toString(),
                            "--properties", dir.resolve("s3proxy.conf").toString()),
                    Map.of(), dir, endpoint + "/", status -> status > 0, Duration.ofSeconds(60));
        } catch (IllegalStateException e) {
            throw new AssertionError("S3Proxy (" + jar + ") did not start: " + e.getMessage(), e);
        }
        return new Running("s3proxy " + endpoint, process, endpoint, "s3proxy", "s3proxy-secret", "s3stream-test",
                "us-east-1");
    }

    /**
     * A server with its endpoint, keys and test bucket; closing it stops the process (if this JVM started it).
     *
     * @param name     for messages
     * @param process  what closing stops: the child process or the container; null for an external server
     * @param endpoint {@code http://127.0.0.1:port}
     */
    public record Running(String name, AutoCloseable process, String endpoint, String accessKey, String secretKey,
                          String bucket, String region) implements AutoCloseable {

        /** An {@code s3://} URI of the test bucket under {@code prefix}. */
        public String uri(String prefix) {
            return "s3://" + bucket + "/" + prefix + "?endpoint=" + enc(endpoint) + "&region=" + region
                    + "&pathStyle=true&accessKey=" + enc(accessKey) + "&secretKey=" + enc(secretKey);
        }

        private static String enc(String s) {
            return URLEncoder.encode(s, StandardCharsets.UTF_8);
        }

        /** A raw SDK client for this server (benchmarks and test set-up); the caller closes it. */
        public S3AsyncClient client() {
            return S3AsyncClient.builder()
                    .endpointOverride(URI.create(endpoint))
                    .region(Region.of(region))
                    .forcePathStyle(true)
                    // As S3ObjectStore does: checksums only where S3 requires them (benchmarks compare like with like).
                    .requestChecksumCalculation(software.amazon.awssdk.core.checksums.RequestChecksumCalculation.WHEN_REQUIRED)
                    .responseChecksumValidation(software.amazon.awssdk.core.checksums.ResponseChecksumValidation.WHEN_REQUIRED)
                    .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey, secretKey)))
                    .build();
        }

        void createBucket() {
            try (S3AsyncClient client = client()) {
                client.createBucket(b -> b.bucket(bucket)).join();
            } catch (CompletionException e) {
                if (e.getCause() instanceof S3Exception se && se.statusCode() == 409) {
                    return; // BucketAlreadyOwnedByYou / BucketAlreadyExists: reuse it
                }
                throw new AssertionError(name + ": cannot create bucket " + bucket + ": " + e.getCause(), e);
            }
        }

        @Override
        public void close() {
            if (process != null) {
                try {
                    process.close();
                } catch (Exception e) {
                    throw new IllegalStateException(name + " did not stop: " + e.getMessage(), e);
                }
            }
        }
    }
}
