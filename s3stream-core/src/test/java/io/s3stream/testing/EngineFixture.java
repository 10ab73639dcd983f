package io.s3stream.testing;

import io.s3stream.StorageConfig;
import io.s3stream.StreamStorage;
import io.s3stream.internal.engine.EngineHooks;
import io.s3stream.internal.metadata.InMemoryMetadataStoreProvider;
import io.s3stream.internal.store.MemObjectStore;
import io.s3stream.internal.wal.InMemoryWal;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;

/**
 * Engines for tests on isolated in-memory backends: a named in-memory WAL per node, one named object store and one named
 * metadata store shared by the nodes of a fixture. {@link #crash} abandons an engine the way SIGKILL would (nothing
 * uploaded, WAL untouched), so a new engine on the same names must recover.
 */
public final class EngineFixture implements AutoCloseable {
    private final String name = "fx-" + UUID.randomUUID();
    private final Path dataDir;
    private final List<StreamStorage> open = new ArrayList<>();

    public EngineFixture() {
        dataDir = TempDirs.create("s3stream-engine-test");
    }

    public String objectStoreUri() {
        return "mem://" + name;
    }

    public String walName(long nodeId) {
        return name + "-wal-" + nodeId;
    }

    /** Small budgets so uploads and evictions happen within a test. */
    public StorageConfig.Builder config(long nodeId) {
        return StorageConfig.builder()
                .nodeId(nodeId)
                .dataDir(dataDir)
                .wal("mem://" + walName(nodeId) + "?capacity=64MiB")
                .objectStore(objectStoreUri())
                .metadata("mem://" + name)
                .logCacheBytes(8L * 1024 * 1024)
                .blockCacheBytes(4L * 1024 * 1024)
                .uploadThresholdBytes(1024 * 1024)
                .uploadInterval(Duration.ofSeconds(30))
                .streamObjectThresholdBytes(512 * 1024)
                .objectBlockSizeBytes(64 * 1024)
                .maxBatchBytes(256 * 1024)
                .backpressureTimeout(Duration.ofSeconds(2));
    }

    public StreamStorage open(long nodeId) {
        return open(nodeId, b -> b);
    }

    public StreamStorage open(long nodeId, UnaryOperator<StorageConfig.Builder> customize) {
        StreamStorage storage = StreamStorage.open(customize.apply(config(nodeId)).build());
        open.add(storage);
        return storage;
    }

    /** {@link #open(long, UnaryOperator)} with the clock that times the compactor's deletion grace period. */
    public StreamStorage open(long nodeId, UnaryOperator<StorageConfig.Builder> customize, LongSupplier nanoClock) {
        StreamStorage storage = EngineHooks.open(customize.apply(config(nodeId)).build(), nanoClock);
        open.add(storage);
        return storage;
    }

    /** Abandons the engine as a crash would. */
    public void crash(StreamStorage storage) {
        open.remove(storage);
        EngineHooks.halt(storage);
    }

    /** Makes node {@code nodeId}'s WAL fail (EIO) after {@code appends} more appends. */
    public void failWalAfter(long nodeId, long appends) {
        InMemoryWal.failAppendsAfter(walName(nodeId), appends);
    }

    @Override
    public void close() {
        for (StreamStorage s : open) {
            s.close();
        }
        open.clear();
        InMemoryWal.clear(walName(0)); // a WAL target shared by the nodes (takeover tests)
        InMemoryWal.clear(walName(1));
        InMemoryWal.clear(walName(2));
        MemObjectStore.clear(name);
        InMemoryMetadataStoreProvider.clear(name);
        TempDirs.deleteTreeUnchecked(dataDir);
    }
}
