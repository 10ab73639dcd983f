package io.s3stream.internal.wal;

import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.testing.SharedWriteAheadLogContractTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;

class InMemoryWalTest extends SharedWriteAheadLogContractTest {
    private String name;

    @BeforeEach
    void newName() {
        name = "wal-contract-" + UUID.randomUUID();
    }

    @AfterEach
    void forget() {
        InMemoryWal.clear(name);
    }

    @Override
    protected WriteAheadLog openWal(long nodeId, long nodeEpoch, Duration backpressureTimeout) {
        return InMemoryWal.open(name, capacityBytes(), new WalContext(nodeId, nodeEpoch, Path.of("."), backpressureTimeout));
    }

    @Override
    protected WriteAheadLog openWalForTakeover(long nodeId, long nodeEpoch) {
        return InMemoryWal.open(name, capacityBytes(),
                new WalContext(nodeId, nodeEpoch, Path.of("."), Duration.ofSeconds(5)).forTakeover());
    }

    @Override
    protected long capacityBytes() {
        return 1024 * 1024;
    }
}
