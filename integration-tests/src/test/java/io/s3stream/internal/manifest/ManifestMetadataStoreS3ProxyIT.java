package io.s3stream.internal.manifest;

import io.s3stream.testing.S3Server;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The metadata contract for the manifest on S3Proxy (filesystem backend). */
class ManifestMetadataStoreS3ProxyIT extends ManifestOnS3Contract {
    @RegisterExtension
    static final S3Server S3 = S3Server.s3proxy();

    @Override
    protected S3Server server() {
        return S3;
    }
}
