package io.s3stream.internal.store;

import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.AzuriteServer;
import io.s3stream.testing.ObjectStoreContractTest;
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
        uri = AZURITE.uri(S3ContractSupport.freshPrefix("contract")) + "&minPartSizeBytes=65536";
        return ObjectStores.open(uri);
    }

    @Override
    protected void cleanUpStore() {
        try (ObjectStore s = ObjectStores.open(uri)) {
            S3ContractSupport.empty(s);
        }
    }
}
