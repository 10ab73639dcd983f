package io.s3stream.store.s3.internal;

import io.s3stream.testing.S3Server;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The object-store contract on S3Proxy (filesystem backend). */
class S3ProxyObjectStoreIT extends S3ObjectStoreContract {
    @RegisterExtension
    static final S3Server S3 = S3Server.s3proxy();

    @Override
    protected S3Server server() {
        return S3;
    }
}
