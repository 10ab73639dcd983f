package io.s3stream.wal.blockdev.internal;

import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A loop device over a pre-written backing file, made with {@code losetup --direct-io=on} (needs root). Outside
 * {@code CI=true} a non-root run is skipped with an assumption; in CI it fails, so the case is never silently lost.
 */
final class LoopDevice implements AutoCloseable {
    final Path backingFile;
    final String device;

    private LoopDevice(Path backingFile, String device) {
        this.backingFile = backingFile;
        this.device = device;
    }

    static LoopDevice create(Path backingFile, long sizeBytes) throws Exception {
        boolean ci = "true".equals(System.getenv("CI"));
        String uid = run(List.of("id", "-u")).strip();
        if (!uid.equals("0")) {
            if (ci) {
                throw new AssertionError("the loop-device WAL test needs root (uid 0) in CI, running as uid " + uid);
            }
            Assumptions.abort("loop devices need root; running as uid " + uid);
        }
        Files.write(backingFile, new byte[(int) sizeBytes]);
        String device = run(List.of("losetup", "-f", "--show", "--direct-io=on", backingFile.toString())).strip();
        if (!device.startsWith("/dev/loop")) {
            throw new AssertionError("losetup printed '" + device + "', not a loop device");
        }
        return new LoopDevice(backingFile, device);
    }

    static String run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new AssertionError(String.join(" ", command) + " failed: " + out);
        }
        return out;
    }

    /** Detaches the device (lazily if a WAL still holds it open) and deletes the backing file. */
    @Override
    public void close() throws IOException {
        try {
            run(List.of("losetup", "-d", device));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Files.deleteIfExists(backingFile);
    }
}
