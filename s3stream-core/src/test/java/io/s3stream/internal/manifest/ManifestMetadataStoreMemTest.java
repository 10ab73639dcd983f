package io.s3stream.internal.manifest;

import io.s3stream.internal.store.MemObjectStore;
import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.MetadataStoreContractTest;
import org.junit.jupiter.api.AfterEach;

import java.time.InstantSource;
import java.util.UUID;

/** The metadata contract for {@link ManifestMetadataStore} on a {@code mem://} object store. */
class ManifestMetadataStoreMemTest extends MetadataStoreContractTest {

    private final String name = "manifest-" + UUID.randomUUID();
    private ObjectStore objects;

    @Override
    protected MetadataStore createStore(InstantSource clock) {
        objects = ObjectStores.open("mem://" + name);
        return ManifestMetadataStore.open(objects, clock, ManifestConfig.DEFAULTS.withPollMs(0));
    }

    @AfterEach
    void closeObjects() {
        if (objects != null) {
            objects.close();
        }
        MemObjectStore.clear(name);
    }
}
