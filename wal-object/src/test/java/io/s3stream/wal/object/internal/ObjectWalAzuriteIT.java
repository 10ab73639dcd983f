package io.s3stream.wal.object.internal;

import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.AzuriteServer;
import io.s3stream.testing.TestStores;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The shared-WAL contract on an object WAL in Azure Blob storage (Azurite, started as a process). */
class ObjectWalAzuriteIT extends ObjectWalContractSupport {
    @RegisterExtension
    static final AzuriteServer AZURE = new AzuriteServer();

    @Override
    protected ObjectStore newStore(String name) {
        return TestStores.asEngineWould(TestStores.open(AZURE.uri(name)));
    }
}
