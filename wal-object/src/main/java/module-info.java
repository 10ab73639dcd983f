/**
 * s3stream's write-ahead log in object storage ({@code objectwal://}): windows of records become objects created
 * with a conditional create, committed to the manifest as stream set objects as they are. The WAL is reached through
 * {@link io.s3stream.spi.WriteAheadLogProvider}; the exported package holds only the offline {@code WalObjectTool}.
 */
module io.s3stream.wal.object {
    requires io.s3stream.core;

    exports io.s3stream.wal.object;

    provides io.s3stream.spi.WriteAheadLogProvider with io.s3stream.wal.object.internal.ObjectWalProvider;
}
