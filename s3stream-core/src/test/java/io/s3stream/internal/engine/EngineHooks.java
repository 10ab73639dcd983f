package io.s3stream.internal.engine;

import io.s3stream.StorageAccess;
import io.s3stream.StorageConfig;
import io.s3stream.StreamStorage;
import io.s3stream.internal.compaction.Compactor;
import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.spi.MetadataStore;

import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;

/** Test-only hooks into a running engine, through its package-private seams. */
public final class EngineHooks {
    private EngineHooks() {
    }

    /** Starts an engine whose compactor times its deletion grace period with {@code nanoClock}. */
    public static StreamStorage open(StorageConfig config, LongSupplier nanoClock) {
        return StorageAccess.wrap(StorageEngine.start(config, nanoClock));
    }

    public static StorageEngine engine(StreamStorage storage) {
        return StorageAccess.engine(storage);
    }

    /** Stops the engine the way a crash would: nothing uploaded, the WAL untouched. */
    public static void halt(StreamStorage storage) {
        engine(storage).halt();
    }

    public static Compactor compactor(StreamStorage storage) {
        return engine(storage).compactor();
    }

    public static MetadataStore metadata(StreamStorage storage) {
        return engine(storage).metadataStore();
    }

    public static ObjectStorage objects(StreamStorage storage) {
        return engine(storage).objectStorage();
    }

    /** Completes once everything appended so far is acknowledged and uploaded. */
    public static CompletableFuture<Void> flush(StreamStorage storage) {
        return engine(storage).flush();
    }
}
