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

    @AfterEach
    void closeObjects() {
        if (objects != null) {
            objects.close();
        }
    }
}
