/**
 * s3stream's write-ahead log in object storage ({@code objectwal://}): windows of records become objects created
 * with a conditional create, committed to the manifest as stream set objects as they are. Reached only through
 * {@link io.s3stream.spi.WriteAheadLogProvider}; it exports nothing.
 */
module io.s3stream.wal.object {
    requires io.s3stream.core;

    provides io.s3stream.spi.WriteAheadLogProvider with io.s3stream.wal.object.internal.ObjectWalProvider;
}
