package io.s3stream.testing;

import io.s3stream.internal.store.MemObjectStore;
import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreProvider;

import java.net.URI;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@code faulty://name}: the {@code mem://name} store behind a {@link FaultInjectingObjectStore}, so engine tests can
 * inject object-store faults through an ordinary {@code StorageConfig}. {@link #faults(String)} returns the wrapper
 * of the most recently opened store of that name. Registered only on the test class path.
 */
public final class FaultyObjectStoreProvider implements ObjectStoreProvider {
    private static final ConcurrentHashMap<String, FaultInjectingObjectStore> OPENED = new ConcurrentHashMap<>();
    private static final ConcurrentHashMap<String, java.util.function.Consumer<FaultInjectingObjectStore>> ON_OPEN =
            new ConcurrentHashMap<>();

    @Override
    public String scheme() {
        return "faulty";
    }

    @Override
    public ObjectStore open(URI uri) {
        String name = uri.getAuthority();
        FaultInjectingObjectStore store = new FaultInjectingObjectStore(ObjectStores.open("mem://" + name), 42);
        java.util.function.Consumer<FaultInjectingObjectStore> setup = ON_OPEN.get(name);
        if (setup != null) {
            setup.accept(store);
        }
        OPENED.put(name, store);
        return store;
    }

    /** The fault controls of the store last opened as {@code faulty://name}. */
    public static FaultInjectingObjectStore faults(String name) {
        FaultInjectingObjectStore store = OPENED.get(name);
        if (store == null) {
            throw new IllegalStateException("no faulty://" + name + " store was opened");
        }
        return store;
    }

    /**
     * Installs faults on every store opened as {@code faulty://name} from now on, before the engine uses it (for
     * faults that must already act while {@code StreamStorage.open} recovers).
     */
    public static void onOpen(String name, java.util.function.Consumer<FaultInjectingObjectStore> setup) {
        ON_OPEN.put(name, setup);
    }

    public static void forget(String name) {
        ON_OPEN.remove(name);
        OPENED.remove(name);
        MemObjectStore.clear(name);
    }
}
