package io.s3stream.store.s3.internal;

import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.ObjectStoreContractTest;
import io.s3stream.testing.S3Server;
import io.s3stream.testing.StorePrefixes;
import io.s3stream.testing.TestStores;

/**
 * The {@link ObjectStore} contract against {@link S3ObjectStore} on the S3 server a subclass starts; each test runs
 * under a fresh prefix, emptied afterwards.
 */
abstract class S3ObjectStoreContract extends ObjectStoreContractTest {
    private String uri;

    /** The server under test, registered by the subclass as a static extension. */
    protected abstract S3Server server();

    @Override
    protected ObjectStore createStore() {
        uri = server().uri(StorePrefixes.freshPrefix("contract"));
        return TestStores.open(uri);
    }

    @Override
    protected boolean rangedGetInDirectMemory() {
        return true;
    }

    @Override
    protected void cleanUpStore() {
        try (ObjectStore s = TestStores.open(uri)) {
            StorePrefixes.empty(s);
        }
    }
}
