package io.s3stream.internal.manifest;

import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.ObjectStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Separate JVMs commit conflicting and independent changes to one manifest in a {@code file://} store. */
class ManifestMultiProcessTest {

    static final int ITERATIONS = 40;

    @TempDir
    Path dir;

    static Process fork(String uri, String mode, int worker, int iterations) throws Exception {
        return builder(uri, mode, worker, iterations).start();
    }

    static ProcessBuilder builder(String uri, String mode, int worker, int iterations) {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = List.of(java, "-cp", System.getProperty("java.class.path"),
                ManifestWorkerMain.class.getName(), uri, mode, Integer.toString(worker), Integer.toString(iterations));
        return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
    }

    @Test
    void threeProcessesLoseNoCommitAndApplyNoneTwice() throws Exception {
        String uri = dir.toUri().toString();
        List<Process> children = new ArrayList<>();
        for (int w = 0; w < 3; w++) {
            children.add(fork(uri, "count", w, ITERATIONS));
        }
        for (Process p : children) {
            assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("child finished").isTrue();
            assertThat(p.exitValue()).as("child exit code").isZero();
        }
        try (ObjectStore objects = ObjectStores.open(uri);
             ManifestMetadataStore store = ManifestMetadataStore.open(objects, InstantSource.system(),
                     ManifestConfig.DEFAULTS.withPollMs(0))) {
            byte[] counter = store.getKv("counter").get().orElseThrow();
            assertThat(new String(counter, StandardCharsets.UTF_8)).as("every increment once")
                    .isEqualTo(Integer.toString(3 * ITERATIONS));
            assertThat(store.listKv("w").get()).hasSize(3 * ITERATIONS);
        }
        assertThat(new File(dir.toFile(), "manifest/checkpoint").list()).as("checkpoints were written").isNotEmpty();
    }
}
