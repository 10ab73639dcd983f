package io.s3stream.wal.object.internal;

import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.testing.SharedWriteAheadLogContractTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import java.util.UUID;

/**
 * The shared-WAL contract on an object WAL; a subclass supplies the store (a directory, MinIO, S3Proxy, Azurite). Each
 * test uses its own key prefix (a fresh store), small windows so that a test writes many objects, and valid engine
 * records.
 */
abstract class ObjectWalContractSupport extends SharedWriteAheadLogContractTest {
    private final WalRecords records = new WalRecords();
    protected ObjectStore store;

    /** A fresh, empty store for one test. */
    protected abstract ObjectStore newStore(String name) throws Exception;

    @BeforeEach
    void openStore() throws Exception {
        store = newStore("objectwal-contract-" + UUID.randomUUID());
    }

    @AfterEach
    void closeStore() {
        if (store != null) {
            store.close();
        }
    }

    protected ObjectWalConfig config() {
        return ObjectWalConfig.parse(URI.create("objectwal://?batchMs=2&batchBytes=64KiB&maxInFlight=4&capacity="
                + capacityBytes() + "&failAfterMs=20000"));
    }

    @Override
    protected WriteAheadLog openWal(long nodeId, long nodeEpoch, Duration backpressureTimeout) {
        return ObjectWal.open(config(), new WalContext(nodeId, nodeEpoch, Path.of("."), backpressureTimeout), store);
    }

    @Override
    protected WriteAheadLog openWalForTakeover(long nodeId, long nodeEpoch) {
        return ObjectWal.open(config(), new WalContext(nodeId, nodeEpoch, Path.of("."), Duration.ofSeconds(5))
                .forTakeover(), store);
    }

    @Override
    protected long capacityBytes() {
        return 1024 * 1024;
    }

    @Override
    protected byte[] newRecord(Random r, int size) {
        return records.next(r, size);
    }
}
