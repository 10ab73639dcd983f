package io.s3stream.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.HttpURLConnection;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * A test server run as a child process on a free loopback port: started with a command line, waited for until an
 * HTTP probe answers, stopped (and its temporary directory removed) when closed. Output goes to a log file whose
 * tail is quoted in every failure, so a server that dies at start says why.
 */
final class TestServerProcess implements AutoCloseable {
    private final String name;
    private final Process process;
    private final Path workDir;
    private final Path log;

    private TestServerProcess(String name, Process process, Path workDir, Path log) {
        this.name = name;
        this.process = process;
        this.workDir = workDir;
        this.log = log;
    }

    /** A port no one listens on now (a race with other processes is possible but rare on loopback). */
    static int freePort() {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Path tempDir(String name) {
        try {
            return Files.createTempDirectory("s3stream-" + name + "-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Starts {@code command} in {@code workDir} and waits until {@code probeUrl} answers with a status accepted by
     * {@code ready}, or, for a {@code tcp://host:port} probe, until something listens there.
     */
    static TestServerProcess start(String name, List<String> command, Map<String, String> env, Path workDir,
                                   String probeUrl, Predicate<Integer> ready, Duration timeout) {
        Path log = workDir.resolve(name + ".log");
        ProcessBuilder pb = new ProcessBuilder(command).directory(workDir.toFile())
                .redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        Process process;
        try {
            process = pb.start();
        } catch (IOException e) {
            throw new IllegalStateException("cannot start " + name + " (" + String.join(" ", command) + "): "
                    + e.getMessage(), e);
        }
        TestServerProcess server = new TestServerProcess(name, process, workDir, log);
        long deadline = System.nanoTime() + timeout.toNanos();
        String lastProblem = "no answer";
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                String tail = server.logTail();
                server.close();
                throw new IllegalStateException(name + " exited with status " + process.exitValue()
                        + " during start; log:\n" + tail);
            }
            String problem = probe(probeUrl, ready);
            if (problem == null) {
                return server;
            }
            lastProblem = problem;
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                server.close();
                throw new IllegalStateException("interrupted while waiting for " + name, e);
            }
        }
        String tail = server.logTail();
        server.close();
        throw new IllegalStateException(name + " did not become ready at " + probeUrl + " within " + timeout
                + " (last: " + lastProblem + "); log:\n" + tail);
    }

    /** Null when the server at {@code probeUrl} is ready, else what was seen instead. */
    private static String probe(String probeUrl, Predicate<Integer> ready) {
        URI uri = URI.create(probeUrl);
        if (uri.getScheme().equals("tcp")) { // a server whose HTTP answer cannot be read here (TLS)
            return listening(uri.getHost(), uri.getPort()) ? null : "not listening";
        }
        try {
            HttpURLConnection c = (HttpURLConnection) uri.toURL().openConnection();
            c.setConnectTimeout(1000);
            c.setReadTimeout(2000);
            int status = c.getResponseCode();
            c.disconnect();
            return ready.test(status) ? null : "status " + status;
        } catch (IOException e) {
            return e.toString();
        }
    }

    /** Whether something listens on {@code host:port}. */
    static boolean listening(String host, int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The first executable among the candidates. */
    static Optional<Path> findExecutable(List<Path> candidates) {
        return candidates.stream().filter(p -> p != null && Files.isRegularFile(p) && Files.isExecutable(p)).findFirst();
    }

    /** {@code name} in each directory of PATH. */
    static List<Path> onPath(String name) {
        String path = System.getenv().getOrDefault("PATH", "");
        return Stream.of(path.split(java.io.File.pathSeparator)).filter(s -> !s.isEmpty())
                .map(dir -> Path.of(dir, name)).toList();
    }

    String logTail() {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, java.util.concurrent.TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        try {
            TempDirs.deleteTree(workDir);
        } catch (IOException e) {
            // best effort: a temporary directory
        }
    }

    @Override
    public String toString() {
        return name + " (pid " + process.pid() + ")";
    }
}
