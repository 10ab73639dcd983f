package io.s3stream.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Temporary directories of fixtures that are not JUnit {@code @TempDir}s (a fixture made in a field or a
 * try-with-resources), removed when the fixture closes so that a test run leaves nothing in {@code /tmp}.
 */
public final class TempDirs {
    private TempDirs() {
    }

    /** A new directory in the default temporary-file directory, named from {@code prefix}. */
    public static Path create(String prefix) {
        try {
            return Files.createTempDirectory(prefix);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Deletes {@code dir} and everything under it; a missing directory is not an error. Files that vanish meanwhile (a
     * server's process still exiting) are skipped.
     */
    public static void deleteTree(Path dir) throws IOException {
        for (int attempt = 1; ; attempt++) {
            List<Path> paths;
            try (Stream<Path> files = Files.walk(dir)) {
                paths = files.sorted(Comparator.reverseOrder()).toList();
            } catch (NoSuchFileException e) {
                return;
            } catch (UncheckedIOException e) {
                if (e.getCause() instanceof NoSuchFileException && attempt < 3) {
                    continue; // a file vanished during the walk: walk again
                }
                throw e.getCause();
            }
            for (Path p : paths) {
                Files.deleteIfExists(p);
            }
            return;
        }
    }

    /** {@link #deleteTree} that reports a failure as an unchecked exception (for {@code close()} methods). */
    public static void deleteTreeUnchecked(Path dir) {
        try {
            deleteTree(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete the test directory " + dir, e);
        }
    }
}
