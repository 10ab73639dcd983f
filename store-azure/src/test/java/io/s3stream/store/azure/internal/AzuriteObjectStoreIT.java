package io.s3stream.store.azure.internal;

import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.AzuriteServer;
import io.s3stream.testing.ObjectStoreContractTest;
import io.s3stream.testing.StorePrefixes;
import io.s3stream.testing.TestStores;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The {@link ObjectStore} contract against {@link AzureBlobObjectStore} on Azurite. Parts are 64 KiB (Azure has no
 * part-size floor) to keep the multipart tests quick.
 */
class AzuriteObjectStoreIT extends ObjectStoreContractTest {
    @RegisterExtension
    static final AzuriteServer AZURITE = new AzuriteServer();

    private String uri;

    @Override
    protected ObjectStore createStore() {
        uri = AZURITE.uri(StorePrefixes.freshPrefix("contract")) + "&minPartSizeBytes=65536";
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
