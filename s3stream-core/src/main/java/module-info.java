/**
 * s3stream core: the stream API ({@code io.s3stream}), the SPIs for WAL, object store and metadata backends
 * ({@code io.s3stream.spi}), and the engine behind them.
 */
@SuppressWarnings("module") // qualified exports name modules built after this one
module io.s3stream.core {
    requires transitive io.netty.buffer;
    requires io.netty.common;
    requires io.s3stream.cache;
    requires software.amazon.awssdk.services.s3;
    requires software.amazon.awssdk.core;
    requires software.amazon.awssdk.awscore;
    requires software.amazon.awssdk.auth;
    requires software.amazon.awssdk.regions;
    requires software.amazon.awssdk.http.nio.netty;
    requires software.amazon.awssdk.http;
    requires software.amazon.awssdk.utils;
    requires software.amazon.awssdk.identity.spi;
    // Optional: azblob:// works when the application adds com.azure:azure-storage-blob.
    requires static com.azure.storage.blob;
    requires static com.azure.storage.common;
    requires static com.azure.core;
    requires jdk.management;

    exports io.s3stream;
    exports io.s3stream.spi;
    // wal-object lays its objects out in object format v1 so that the engine can adopt them as stream set objects.
    exports io.s3stream.internal.format to io.s3stream.wal.object;

    uses io.s3stream.spi.WriteAheadLogProvider;
    uses io.s3stream.spi.ObjectStoreProvider;
    uses io.s3stream.spi.MetadataStoreProvider;

    provides io.s3stream.spi.WriteAheadLogProvider with io.s3stream.internal.wal.InMemoryWalProvider;
    provides io.s3stream.spi.MetadataStoreProvider with
            io.s3stream.internal.metadata.InMemoryMetadataStoreProvider,
            io.s3stream.internal.manifest.ManifestMetadataStoreProvider;
    provides io.s3stream.spi.ObjectStoreProvider with
            io.s3stream.internal.store.FileObjectStoreProvider,
            io.s3stream.internal.store.MemObjectStoreProvider,
            io.s3stream.internal.store.S3ObjectStoreProvider,
            io.s3stream.internal.store.AzureBlobObjectStoreProvider;
}
