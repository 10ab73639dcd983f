package io.s3stream.internal.manifest;

import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.MetadataStoreContractTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.InstantSource;

/** The metadata contract for {@link ManifestMetadataStore} on a {@code file://} object store. */
class ManifestMetadataStoreFileTest extends MetadataStoreContractTest {

    @TempDir
    Path root;
    private ObjectStore objects;

    @Override
    protected MetadataStore createStore(InstantSource clock) {
        objects = ObjectStores.open(root.toUri().toString());
        return ManifestMetadataStore.open(objects, clock, ManifestConfig.DEFAULTS.withPollMs(0));
    }

    @org.junit.jupiter.api.Test
    void syncIsAReadBarrierForChangesOtherNodesMade() {
        try (ObjectStore shared = ObjectStores.open(root.resolve("shared").toUri().toString());
             MetadataStore a = ManifestMetadataStore.open(shared, InstantSource.system(), ManifestConfig.DEFAULTS.withPollMs(0));
             MetadataStore b = ManifestMetadataStore.open(shared, InstantSource.system(), ManifestConfig.DEFAULTS.withPollMs(0))) {
            long node = a.registerNode(1).join();
            a.putKv(1, node, "offsets/g/t/0", new byte[] {7}).join();
            // b's view is as of its start (it does not poll here): the read misses a's change until the barrier.
            org.assertj.core.api.Assertions.assertThat(b.getKv("offsets/g/t/0").join()).isEmpty();
            b.sync().join();
            org.assertj.core.api.Assertions.assertThat(b.getKv("offsets/g/t/0").join()).hasValueSatisfying(
                    v -> org.assertj.core.api.Assertions.assertThat(v).containsExactly(7));
        }
    }

    @AfterEach
    void closeObjects() {
        if (objects != null) {
            objects.close();
        }
    }
}
