package io.s3stream.wal.blockdev.internal;

import java.nio.file.Path;

/** The WAL contract on a pre-written file on the working disk (ext4 on virtio: real flushes). */
class BlockDeviceWalFileTest extends BlockDeviceWalContractSupport {
    @Override
    protected Path baseDirectory() {
        return Path.of("target").toAbsolutePath();
    }
}
