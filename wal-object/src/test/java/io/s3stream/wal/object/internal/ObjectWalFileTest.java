package io.s3stream.wal.object.internal;

import io.s3stream.testing.TestStores;
import io.s3stream.spi.ObjectStore;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

/** The shared-WAL contract on an object WAL in a local directory ({@code file://}). */
class ObjectWalFileTest extends ObjectWalContractSupport {
    @TempDir
    Path dir;

    @Override
    protected ObjectStore newStore(String name) throws Exception {
        Path root = Files.createDirectories(dir.resolve(name));
        return TestStores.asEngineWould(TestStores.open(root.toUri().toString()));
    }
}
