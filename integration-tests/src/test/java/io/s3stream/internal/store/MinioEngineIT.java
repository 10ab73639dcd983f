package io.s3stream.internal.store;

import io.s3stream.internal.engine.EngineOnObjectStoreContract;
import io.s3stream.testing.S3Server;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The engine end to end on MinIO. */
class MinioEngineIT extends EngineOnObjectStoreContract {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    @Override
    protected String objectStoreUri(String prefix) {
        return S3.uri(prefix);
    }
}
