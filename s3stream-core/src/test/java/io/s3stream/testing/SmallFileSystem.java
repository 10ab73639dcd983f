package io.s3stream.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A real file system of a given size (a tmpfs mount) for tests of a full disk: writes beyond its size fail with
 * ENOSPC, as on a full volume. Mounting needs root, as in CI; a test that cannot mount fails with the reason, it is
 * never skipped.
 */
public final class SmallFileSystem implements AutoCloseable {
    private final Path mountPoint;

    private SmallFileSystem(Path mountPoint) {
        this.mountPoint = mountPoint;
    }

    /** Mounts a tmpfs of {@code mib} MiB at {@code mountPoint} (created if missing). */
    public static SmallFileSystem mount(Path mountPoint, int mib) {
        try {
            Files.createDirectories(mountPoint);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        run(List.of("mount", "-t", "tmpfs", "-o", "size=" + mib + "m", "tmpfs", mountPoint.toString()));
        return new SmallFileSystem(mountPoint);
    }

    public Path path() {
        return mountPoint;
    }

    /** Bytes that can still be written. */
    public long usableBytes() {
        try {
            return Files.getFileStore(mountPoint).getUsableSpace();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Keeps the file system full but for {@code leaveBytes}, with files named {@code other-files-*} at its root, until
     * the returned handle is closed: space the code under test frees meanwhile (compaction deleting its inputs) is
     * taken at once. The files stay after the handle is closed.
     */
    public Filler keepFull(long leaveBytes) {
        return new Filler(leaveBytes);
    }

    /** The thread of {@link #keepFull}; closing it stops the thread. */
    public final class Filler implements AutoCloseable {
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final Thread thread;

        private Filler(long leaveBytes) {
            thread = Thread.ofPlatform().daemon().name("small-fs-filler").start(() -> {
                for (int n = 0; running.get(); n++) {
                    long extra = usableBytes() - leaveBytes;
                    Path file = mountPoint.resolve("other-files-" + n);
                    try {
                        if (extra > 64 * 1024) {
                            Files.write(file, new byte[(int) extra]);
                        }
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        return;
                    } catch (IOException e) {
                        // The code under test wrote between the measure and this write, which ran out of space
                        // partway: the partial file would leave the file system with nothing usable at all, not
                        // leaveBytes. Remove it and measure again.
                        try {
                            Files.deleteIfExists(file);
                        } catch (IOException ignored) {
                            // measured again on the next turn
                        }
                    }
                }
            });
        }

        @Override
        public void close() {
            running.set(false);
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void close() {
        run(List.of("umount", "-l", mountPoint.toString()));
    }

    private static void run(List<String> command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new AssertionError(String.join(" ", command) + " failed (a full-disk test needs root to mount "
                        + "a tmpfs): " + out);
            }
        } catch (IOException e) {
            throw new AssertionError(String.join(" ", command) + " could not run: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
