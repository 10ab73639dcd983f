/**
 * s3stream's write-ahead log on a shared file system ({@code fsx://}: FSx for NetApp ONTAP, NFS, EFS): the ring of
 * {@code wal-blockdev} over preallocated segment files per node, with an owner file that fences a node whose WAL
 * another node took over. Reached through {@link io.s3stream.spi.WriteAheadLogProvider}. Native access must be enabled
 * ({@code --enable-native-access=io.s3stream.wal.blockdev}, or {@code ALL-UNNAMED} on the class path).
 */
module io.s3stream.wal.fsx {
    requires io.s3stream.core;
    requires io.s3stream.wal.blockdev;

    provides io.s3stream.spi.WriteAheadLogProvider with io.s3stream.wal.fsx.internal.FsxWalProvider;
}
