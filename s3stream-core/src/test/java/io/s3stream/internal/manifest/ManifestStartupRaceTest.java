package io.s3stream.internal.manifest;

import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.ObjectStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Start-up while another node commits as fast as it can: a listing of the log taken while entries are created may
 * show a later entry without an earlier one (a directory walk, or a LIST page, that passed the earlier key before it
 * was created). That is not a gap in the log, and a node must start.
 */
class ManifestStartupRaceTest {

    @TempDir
    Path root;

    @Test
    void aNodeStartsWhileAnotherCommitsWithoutStop() throws Exception {
        ManifestConfig config = ManifestConfig.DEFAULTS.withPollMs(0);
        try (ObjectStore shared = ObjectStores.open(root.toUri().toString());
             ManifestMetadataStore writer = ManifestMetadataStore.open(shared, InstantSource.system(), config)) {
            long node = writer.registerNode(1).join();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> writerFailure = new AtomicReference<>();
            Thread committing = Thread.ofPlatform().name("committing").start(() -> {
                try {
                    for (long i = 0; !stop.get(); i++) {
                        writer.putKv(1, node, "offsets/g/t/" + (i % 64), Long.toString(i).getBytes()).join();
                    }
                } catch (Throwable t) {
                    writerFailure.set(t);
                }
            });
            try {
                for (int start = 0; start < 100; start++) {
                    try (ManifestMetadataStore reader = ManifestMetadataStore.open(shared, InstantSource.system(),
                            config)) {
                        assertThat(reader.getNode(1).join()).as("start %d", start).isPresent();
                    }
                }
            } finally {
                stop.set(true);
                committing.join();
            }
            assertThat(writerFailure.get()).isNull();
        }
    }
}
