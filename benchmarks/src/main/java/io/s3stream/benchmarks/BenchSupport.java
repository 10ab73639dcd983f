package io.s3stream.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;

/** Helpers shared by the benchmarks: where their files go, and the scale-down of the CI smoke run. */
final class BenchSupport {
    /** Set by the CI smoke run: setups build small data sets, since nothing is measured. */
    static final boolean SMOKE = Boolean.getBoolean("s3stream.bench.smoke");

    private BenchSupport() {
    }

    /**
     * A fresh directory on the working disk (not tmpfs), for files whose device cost is part of the measurement:
     * {@code -Ds3stream.bench.dir=...}, else {@code java.io.tmpdir}.
     */
    static Path diskDir(String prefix) {
        try {
            Path base = Path.of(System.getProperty("s3stream.bench.dir", System.getProperty("java.io.tmpdir")));
            Files.createDirectories(base);
            return Files.createTempDirectory(base, prefix);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A fresh directory in memory (/dev/shm where it exists), for files whose device cost is not measured. */
    static Path memoryDir(String prefix) {
        try {
            Path shm = Path.of("/dev/shm");
            return Files.createTempDirectory(Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")),
                    prefix);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void deleteRecursively(Path dir) {
        if (dir == null) {
            return;
        }
        try (var paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
