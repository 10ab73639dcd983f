package io.s3stream.internal.manifest;

import io.s3stream.spi.MetadataStore;
import io.s3stream.testing.MetadataStoreContractTest;
import io.s3stream.testing.S3Server;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.InstantSource;

/**
 * The metadata contract for {@link ManifestMetadataStore} on the S3 object store against an S3Proxy server (filesystem
 * backend): conditional creates ({@code If-None-Match: *}) of a real server decide every race. Each test has its own
 * prefix.
 */
class ManifestMetadataStoreS3ProxyIT extends MetadataStoreContractTest {
    @RegisterExtension
    static final S3Server S3 = S3Server.s3proxy();

    private final ManifestOnS3 manifest = new ManifestOnS3(S3);

    @Override
    protected MetadataStore createStore(InstantSource clock) {
        return manifest.open(clock);
    }

    @Override
    protected int concurrencyUploadsPerWriter() {
        return ManifestOnS3.CONCURRENCY_UPLOADS_PER_WRITER;
    }

    @AfterEach
    void removePrefix() {
        manifest.close(store);
    }
}
