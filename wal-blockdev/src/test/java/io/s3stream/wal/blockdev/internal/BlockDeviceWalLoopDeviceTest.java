package io.s3stream.wal.blockdev.internal;

import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.testing.WriteAheadLogContractTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;

/**
 * The WAL contract on a real block device: a loop device with direct IO over a file on the working disk. Needs root;
 * fails (never skips) in CI when it cannot run.
 */
class BlockDeviceWalLoopDeviceTest extends WriteAheadLogContractTest {
    private static final long CAPACITY = 4L * 1024 * 1024;
    private LoopDevice loop;

    @BeforeEach
    void attach() throws Exception {
        loop = LoopDevice.create(Path.of("target").toAbsolutePath().resolve("loop-" + UUID.randomUUID() + ".img"),
                CAPACITY);
    }

    @AfterEach
    void detach() throws Exception {
        if (loop != null) {
            loop.close();
        }
    }

    @Override
    protected WriteAheadLog openWal(long nodeId, long nodeEpoch, Duration backpressureTimeout) {
        return new BlockDeviceWalProvider().open(URI.create("blockdev://" + loop.device),
                new WalContext(nodeId, nodeEpoch, Path.of("target"), backpressureTimeout));
    }

    @Override
    protected long capacityBytes() {
        return CAPACITY;
    }

    @Override
    protected void crash(WriteAheadLog wal) throws Exception {
        ((BlockDeviceWal) wal).halt();
        super.crash(wal);
    }
}
