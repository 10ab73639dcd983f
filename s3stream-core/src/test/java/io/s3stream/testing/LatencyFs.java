package io.s3stream.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * One mount of {@code latencyfs} (test-infra/latencyfs): a passthrough FUSE file system over a backing directory
 * with injected latency and faults, the shared file system of the fsx WAL's tests. Two mounts of one backing
 * directory are two nodes sharing a file system. The binary is taken from {@code S3STREAM_LATENCYFS_BIN}, then
 * {@code /opt/s3stream-tools/bin/latencyfs} (where {@code bin/test} builds it), and is otherwise built with
 * {@code go build} into {@code target/}. Mounting needs root (FUSE through {@code /dev/fuse}, as in CI); a test that
 * cannot mount fails with the reason, it is never skipped.
 */
public final class LatencyFs implements AutoCloseable {
    private final Process process;
    private final Path mountPoint;
    private final String control;
    private final Path log;

    private LatencyFs(Process process, Path mountPoint, String control, Path log) {
        this.process = process;
        this.mountPoint = mountPoint;
        this.control = control;
        this.log = log;
    }

    /**
     * Mounts {@code backing} at {@code mountPoint} (created if missing) with extra command-line options such as
     * {@code -latency 1ms}, {@code -meta-latency 1ms} or {@code -refuse-direct}.
     */
    public static LatencyFs mount(Path backing, Path mountPoint, String... options) {
        try {
            Files.createDirectories(backing);
            Files.createDirectories(mountPoint);
            Path log = Files.createTempFile("latencyfs-", ".log");
            List<String> command = new ArrayList<>(List.of(binary().toString(), "-backing", backing.toString(),
                    "-mount", mountPoint.toString(), "-control", "127.0.0.1:0"));
            command.addAll(List.of(options));
            Process process = new ProcessBuilder(command).redirectError(log.toFile()).start();
            CompletableFuture<String> ready = CompletableFuture.supplyAsync(() -> {
                try {
                    BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(),
                            StandardCharsets.UTF_8));
                    String line;
                    while ((line = out.readLine()) != null) {
                        if (line.startsWith("READY ")) {
                            return line;
                        }
                    }
                    return null;
                } catch (IOException e) {
                    return null;
                }
            });
            String line = ready.get(30, TimeUnit.SECONDS);
            if (line == null) {
                throw new IllegalStateException("latencyfs did not mount " + mountPoint + " (it needs root and "
                        + "/dev/fuse): " + Files.readString(log));
            }
            String control = line.substring(line.indexOf("control=") + "control=".length()).trim();
            return new LatencyFs(process, mountPoint, control, log);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (Exception e) {
            throw new IllegalStateException("cannot mount latencyfs at " + mountPoint + ": " + e, e);
        }
    }

    /** The latencyfs binary, built from test-infra/latencyfs when no prebuilt one is found. */
    public static synchronized Path binary() {
        String fromEnv = System.getenv("S3STREAM_LATENCYFS_BIN");
        if (fromEnv != null && Files.isExecutable(Path.of(fromEnv))) {
            return Path.of(fromEnv);
        }
        Path tools = Path.of("/opt/s3stream-tools/bin/latencyfs");
        if (Files.isExecutable(tools)) {
            return tools;
        }
        Path source = findSource();
        Path built = source.resolve("../../target/latencyfs").normalize();
        if (Files.isExecutable(built)) {
            return built;
        }
        try {
            Process go = new ProcessBuilder("go", "build", "-o", built.toString(), ".").directory(source.toFile())
                    .redirectErrorStream(true).start();
            String output = new String(go.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (go.waitFor() != 0) {
                throw new IllegalStateException("go build of latencyfs failed: " + output);
            }
            return built;
        } catch (IOException e) {
            throw new IllegalStateException("latencyfs is not built and go is not available (" + e.getMessage()
                    + "); run bin/test or: cd test-infra/latencyfs && go build -o /opt/s3stream-tools/bin/latencyfs .", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static Path findSource() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null) {
            Path candidate = dir.resolve("test-infra/latencyfs");
            if (Files.isRegularFile(candidate.resolve("main.go"))) {
                return candidate;
            }
            dir = dir.getParent();
        }
        throw new IllegalStateException("test-infra/latencyfs not found above " + Path.of("").toAbsolutePath());
    }

    public Path mountPoint() {
        return mountPoint;
    }

    /**
     * Changes the behaviour, for example {@code set("latency=2ms")}, {@code set("writeErr=ENOSPC&faultPath=gen-")},
     * {@code set("hangFsync=1")}; see test-infra/latencyfs/main.go.
     */
    public void set(String query) {
        String body = get("/set?" + query);
        if (!body.trim().equals("ok")) {
            throw new IllegalStateException("latencyfs refused " + query + ": " + body);
        }
    }

    /** The operation counters, as JSON. */
    public String stats() {
        return get("/stats");
    }

    private String get(String path) {
        try {
            HttpURLConnection connection = (HttpURLConnection) URI.create("http://" + control + path).toURL()
                    .openConnection();
            connection.setConnectTimeout(5000);
            connection.setReadTimeout(10000);
            try {
                var body = connection.getResponseCode() < 400 ? connection.getInputStream()
                        : connection.getErrorStream();
                return new String(body.readAllBytes(), StandardCharsets.UTF_8);
            } finally {
                connection.disconnect();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Unmounts (SIGTERM; latencyfs releases hung operations first) and waits for the process. */
    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
                new ProcessBuilder("umount", "-l", mountPoint.toString()).start().waitFor(10, TimeUnit.SECONDS);
            }
            Files.deleteIfExists(log);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
