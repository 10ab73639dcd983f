package io.s3stream.store.s3.internal;

import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.ObjectStoreContractTest;
import io.s3stream.testing.S3Server;
import io.s3stream.testing.StorePrefixes;
import io.s3stream.testing.TestStores;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The {@link ObjectStore} contract against {@link S3ObjectStore} on a Minio server started by {@link S3Server}. */
class MinioObjectStoreIT extends ObjectStoreContractTest {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    private String uri;

    @Override
    protected ObjectStore createStore() {
        uri = S3.uri(StorePrefixes.freshPrefix("contract"));
        return TestStores.open(uri);
    }

    @Override
    protected void cleanUpStore() {
        try (ObjectStore s = TestStores.open(uri)) {
            StorePrefixes.empty(s);
        }
    }
}
