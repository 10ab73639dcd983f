package io.s3stream.internal.store;

import io.s3stream.internal.engine.EngineOnObjectStoreContract;
import io.s3stream.testing.S3Server;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The engine end to end on S3Proxy. */
class S3ProxyEngineIT extends EngineOnObjectStoreContract {
    @RegisterExtension
    static final S3Server S3 = S3Server.s3proxy();

    @Override
    protected String objectStoreUri(String prefix) {
        return S3.uri(prefix);
    }
}
