/**
 * s3stream's write-ahead log on a raw block device or a preallocated file ({@code blockdev://}), written with
 * direct, synchronous IO through the FFM API. The exported package holds only the offline {@code WalTool}; the WAL
 * itself is reached through {@link io.s3stream.spi.WriteAheadLogProvider}. Native access must be enabled for this
 * module ({@code --enable-native-access=io.s3stream.wal.blockdev}, or {@code ALL-UNNAMED} on the class path).
 */
module io.s3stream.wal.blockdev {
    requires io.s3stream.core;

    exports io.s3stream.wal.blockdev;

    provides io.s3stream.spi.WriteAheadLogProvider with io.s3stream.wal.blockdev.internal.BlockDeviceWalProvider;
}
