/**
 * s3stream's write-ahead log on a raw block device or a preallocated file ({@code blockdev://}), written with
 * direct, synchronous IO through the FFM API. The exported package holds only the offline {@code WalTool}; the WAL
 * itself is reached through {@link io.s3stream.spi.WriteAheadLogProvider}. Native access must be enabled for this
 * module ({@code --enable-native-access=io.s3stream.wal.blockdev}, or {@code ALL-UNNAMED} on the class path).
 */
@SuppressWarnings("module") // the qualified export names a module that is built after this one
module io.s3stream.wal.blockdev {
    requires io.s3stream.core;

    exports io.s3stream.wal.blockdev;
    // The ring, its scanner and the native IO are shared with wal-fsx, which runs this WAL on a shared file system.
    exports io.s3stream.wal.blockdev.internal to io.s3stream.wal.fsx;

    provides io.s3stream.spi.WriteAheadLogProvider with io.s3stream.wal.blockdev.internal.BlockDeviceWalProvider;
}
