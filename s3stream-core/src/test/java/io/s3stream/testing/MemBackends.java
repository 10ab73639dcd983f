package io.s3stream.testing;

import io.s3stream.internal.metadata.InMemoryMetadataStoreProvider;
import io.s3stream.internal.store.MemObjectStore;
import io.s3stream.internal.wal.InMemoryWal;

/**
 * The in-memory backends ({@code mem://name} as WAL, object store and metadata) for tests of other modules, which
 * compile against core's exported packages only: they live in static registries by name, and a test that is done with
 * a name releases them here.
 */
public final class MemBackends {
    private MemBackends() {
    }

    /** Drops the in-memory WAL {@code mem://name}. */
    public static void clearWal(String name) {
        InMemoryWal.clear(name);
    }

    /** Drops the in-memory object store {@code mem://name}. */
    public static void clearObjectStore(String name) {
        MemObjectStore.clear(name);
    }

    /** Drops the in-memory metadata store {@code mem://name}. */
    public static void clearMetadata(String name) {
        InMemoryMetadataStoreProvider.clear(name);
    }
}
