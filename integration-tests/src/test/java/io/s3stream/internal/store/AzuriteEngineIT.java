package io.s3stream.internal.store;

import io.s3stream.internal.engine.EngineOnObjectStoreContract;
import io.s3stream.testing.AzuriteServer;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The engine end to end on Azurite (azblob://). */
class AzuriteEngineIT extends EngineOnObjectStoreContract {
    @RegisterExtension
    static final AzuriteServer AZURITE = new AzuriteServer();

    @Override
    protected String objectStoreUri(String prefix) {
        return AZURITE.uri(prefix);
    }
}
