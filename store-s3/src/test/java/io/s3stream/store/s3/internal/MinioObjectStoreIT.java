package io.s3stream.store.s3.internal;

import io.s3stream.testing.S3Server;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The object-store contract on MinIO. */
class MinioObjectStoreIT extends S3ObjectStoreContract {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    @Override
    protected S3Server server() {
        return S3;
    }
}
