package io.s3stream.kafka.shell;

import io.s3stream.NodeFencedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A shell that cannot start must stop, say why in one line and exit non-zero, so that a supervisor sees it: run as a
 * real process with the class path of this test.
 */
class StartupFailureTest {

    /** What a failed start left behind: its exit status (null: still running after the timeout) and its output. */
    private record Exit(Integer status, String output) {
    }

    private static Exit run(Path dir, String... overrides) throws IOException, InterruptedException {
        Path log = dir.resolve("shell-" + System.nanoTime() + ".log");
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-XX:MaxDirectMemorySize=256m",
                "-cp", System.getProperty("java.class.path"), KafkaShell.class.getName(),
                "--override", "s3stream.data.dir=" + dir.resolve("data"),
                "--override", "s3stream.wal=blockdev://" + dir.toAbsolutePath() + "/data/wal.img?capacity=64MiB"));
        for (String o : overrides) {
            cmd.add("--override");
            cmd.add(o);
        }
        Process process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        boolean exited = process.waitFor(60, TimeUnit.SECONDS);
        if (!exited) {
            process.destroyForcibly().waitFor();
        }
        return new Exit(exited ? process.exitValue() : null, Files.readString(log));
    }

    @Test
    void aPortInUseFailsBeforeTheEngineOpensNamesTheAddressAndExits(@TempDir Path dir) throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            int port = taken.getLocalPort();
            Exit exit = run(dir, "listeners=PLAINTEXT://127.0.0.1:" + port);
            assertThat(exit.status()).as("exit status; output:%n%s", exit.output()).isEqualTo(2);
            assertThat(exit.output()).contains("cannot listen on 127.0.0.1:" + port)
                    .contains("listeners=PLAINTEXT://127.0.0.1:" + port).doesNotContain("\tat ");
            assertThat(dir.resolve("data").resolve("wal.img")).as("the engine was never opened").doesNotExist();
        }
    }

    @Test
    void aNegativeSizeSettingIsRefusedNotReplacedByTheDefault(@TempDir Path dir) throws Exception {
        Exit exit = run(dir, "listeners=PLAINTEXT://127.0.0.1:0", "s3stream.log.cache.bytes=-5");
        assertThat(exit.status()).as("exit status; output:%n%s", exit.output()).isEqualTo(2);
        assertThat(exit.output()).contains("invalid configuration").contains("log.cache.bytes").contains("-5");
    }

    @Test
    void anObjectStoreThatIsDownAtStartIsOneLineAndANonZeroExit(@TempDir Path dir) throws Exception {
        int closed;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closed = s.getLocalPort(); // nothing listens there once this is closed
        }
        Exit exit = run(dir, "listeners=PLAINTEXT://127.0.0.1:0",
                "s3stream.object.store=s3://bucket/prefix?endpoint=http://127.0.0.1:" + closed
                        + "&region=us-east-1&accessKey=a&secretKey=hunter2&connectTimeoutMs=500");
        assertThat(exit.status()).as("exit status; output:%n%s", exit.output()).isNotNull().isNotZero();
        assertThat(exit.output()).contains("kafka-shell: cannot start: ").contains("127.0.0.1:" + closed)
                .doesNotContain("\tat ").doesNotContain("hunter2");
    }

    /**
     * Two instances with one node id on one store: the newer registration fences the older, which exits with status
     * 3 whether it was still starting (fenced before it joined) or already serving (its next lease renewal fails), so
     * a supervisor restarts it the same way in both cases.
     */
    @Test
    void anInstanceFencedByANewerOneWithItsNodeIdExitsWithStatusThree(@TempDir Path dir) throws Exception {
        String[] settings = {"listeners=PLAINTEXT://127.0.0.1:0", "node.id=1",
                "s3stream.object.store=file://" + dir.toAbsolutePath().resolve("store"),
                "s3stream.wal=objectwal://?batchMs=5"};
        try (Started first = start(dir.resolve("a"), settings); Started second = start(dir.resolve("b"), settings)) {
            Process older = null;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (older == null && System.nanoTime() < deadline) {
                older = !first.process.isAlive() ? first.process : !second.process.isAlive() ? second.process : null;
                Thread.sleep(100);
            }
            assertThat(older).as("one of the two instances exited").isNotNull();
            Started fenced = older == first.process ? first : second;
            Started survivor = older == first.process ? second : first;
            String output = Files.readString(fenced.log);
            assertThat(older.exitValue()).as("exit status; output:%n%s", output).isEqualTo(3);
            assertThat(output).contains("fenced").doesNotContain("\tat ");
            assertThat(survivor.process.isAlive()).as("the newer instance serves on").isTrue();
        }
    }

    /**
     * Which component notices a newer instance first is a race (the node registry, or the WAL's open finding an
     * object of a newer node epoch); the line says "fenced" either way. The WAL's own message does not.
     */
    @Test
    void aStartFencedByTheWalOrTheRegistryReadsFencedEitherWay() {
        Exception byWal = new CompletionException(new UncheckedIOException(
                "opening WAL objectwal://", new IOException(new NodeFencedException(
                        "WAL wal/1/ is owned by node epoch 2 (object wal/1/0000000000000000 is of node epoch 2), "
                                + "newer than 1"))));
        assertThat(KafkaShell.startFailure(byWal)).startsWith("kafka-shell: cannot start: fenced by a newer instance: ")
                .contains("is owned by node epoch 2");
        assertThat(KafkaShell.fencedCause(byWal)).isTrue();
        Exception byRegistry = new NodeFencedException(
                "node 1 at node epoch 1 is fenced: a newer instance registered with node epoch 2");
        assertThat(KafkaShell.startFailure(byRegistry))
                .isEqualTo("kafka-shell: cannot start: fenced by a newer instance: node 1 at node epoch 1 is fenced: "
                        + "a newer instance registered with node epoch 2");
        Exception down = new IOException("connection refused: 127.0.0.1:9");
        assertThat(KafkaShell.startFailure(down))
                .isEqualTo("kafka-shell: cannot start: connection refused: 127.0.0.1:9");
        assertThat(KafkaShell.fencedCause(down)).isFalse();
    }

    /** A shell process started in the background, destroyed on close. */
    private record Started(Process process, Path log) implements AutoCloseable {
        @Override
        public void close() {
            process.destroyForcibly();
        }
    }

    private static Started start(Path dir, String... overrides) throws IOException {
        Files.createDirectories(dir);
        Path log = dir.resolve("shell.log");
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-XX:MaxDirectMemorySize=256m",
                "-cp", System.getProperty("java.class.path"), KafkaShell.class.getName(),
                "--override", "s3stream.data.dir=" + dir.resolve("data")));
        for (String o : overrides) {
            cmd.add("--override");
            cmd.add(o);
        }
        return new Started(new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start(), log);
    }
}
