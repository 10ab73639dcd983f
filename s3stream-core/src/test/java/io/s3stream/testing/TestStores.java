package io.s3stream.testing;

import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.ObjectStore;

/**
 * Object stores for tests of other modules, which compile against core's exported packages only: a raw store by URI,
 * or the same wrapped the way the engine hands it to a WAL (retries, scheduling, counters; one attempt for conditional
 * creates).
 */
public final class TestStores {
    private TestStores() {
    }

    /** The backend for {@code uri} ({@code file://}, {@code mem://}; {@code s3://} and {@code azblob://} when their store modules are on the test class path). */
    public static ObjectStore open(String uri) {
        return ObjectStores.open(uri);
    }

    /** {@code store} seen through the engine's storage layer at the WAL priority; closing the view closes it. */
    public static ObjectStore asEngineWould(ObjectStore store) {
        return new ObjectStorage(store, ObjectStorage.RetryPolicy.defaults(),
                ObjectStorage.Settings.defaults().withCostLogInterval(null))
                .asOwnedObjectStore(ObjectStorage.Priority.WAL);
    }
}
