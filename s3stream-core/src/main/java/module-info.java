/**
 * s3stream core: the stream API ({@code io.s3stream}), the SPIs for WAL, object store and metadata backends
 * ({@code io.s3stream.spi}), and the engine behind them, with the {@code file://} and {@code mem://} object stores.
 * S3 and Azure Blob Storage are in their own modules, so that an application downloads only the SDK it uses.
 */
@SuppressWarnings("module") // qualified exports name modules built after this one
module io.s3stream.core {
    requires transitive io.netty.buffer;
    requires io.netty.common;
    requires io.s3stream.cache;
    requires jdk.management;
    requires jdk.unsupported; // com.sun.nio.file.ExtendedOpenOption.DIRECT: the file store's object writes

    exports io.s3stream;
    exports io.s3stream.spi;
    // wal-object lays its objects out in object format v1 so that the engine can adopt them as stream set objects.
    exports io.s3stream.internal.format to io.s3stream.wal.object;
    // The object stores outside core (s3://, azblob://) share its range checks, key order and URI settings.
    exports io.s3stream.internal.store.common to io.s3stream.store.s3, io.s3stream.store.azure;
    // Futures (unwrapping a failed future's cause) for the backends outside core.
    exports io.s3stream.internal.util to io.s3stream.store.s3, io.s3stream.store.azure, io.s3stream.wal.object;

    uses io.s3stream.spi.WriteAheadLogProvider;
    uses io.s3stream.spi.ObjectStoreProvider;
    uses io.s3stream.spi.MetadataStoreProvider;

    provides io.s3stream.spi.WriteAheadLogProvider with io.s3stream.internal.wal.InMemoryWalProvider;
    provides io.s3stream.spi.MetadataStoreProvider with
            io.s3stream.internal.metadata.InMemoryMetadataStoreProvider,
            io.s3stream.internal.manifest.ManifestMetadataStoreProvider;
    provides io.s3stream.spi.ObjectStoreProvider with
            io.s3stream.internal.store.FileObjectStoreProvider,
            io.s3stream.internal.store.MemObjectStoreProvider;
}
