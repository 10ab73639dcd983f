package io.s3stream.internal.manifest;

import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.MetadataStoreContractTest;
import io.s3stream.testing.S3Server;
import io.s3stream.testing.StorePrefixes;
import io.s3stream.testing.TestStores;
import org.junit.jupiter.api.AfterEach;

import java.time.InstantSource;

/**
 * The metadata contract for {@link ManifestMetadataStore} on the S3 object store of the server a subclass starts:
 * conditional creates ({@code If-None-Match: *}) of a real server decide every race. Each test has its own prefix,
 * emptied afterwards.
 */
abstract class ManifestOnS3Contract extends MetadataStoreContractTest {
    /**
     * Commits per writer in the contract's concurrency case (8 writers and a trimmer). On the local stores it is 200;
     * here every commit is several round trips to a real server, plus a re-read per lost race: 8 × 40 took 9 s on
     * MinIO and 17 s on S3Proxy (2 cores), so 8 × 200 would take 45-85 s on its own. At 40 every writer still loses
     * races to the others and to the trimmer; the assertions are unchanged.
     */
    private static final int CONCURRENCY_UPLOADS_PER_WRITER = 40;

    private ObjectStore objects;

    /** The server under test, registered by the subclass as a static extension. */
    protected abstract S3Server server();

    @Override
    protected MetadataStore createStore(InstantSource clock) {
        objects = TestStores.open(server().uri(StorePrefixes.freshPrefix("manifest-it")));
        return ManifestMetadataStore.open(objects, clock, ManifestConfig.DEFAULTS.withPollMs(0));
    }

    @Override
    protected int concurrencyUploadsPerWriter() {
        return CONCURRENCY_UPLOADS_PER_WRITER;
    }

    /** Closes the manifest (idempotent) before the object store under it, then empties the prefix. */
    @AfterEach
    void removePrefix() {
        if (store != null) {
            store.close();
        }
        if (objects != null) {
            try (ObjectStore o = objects) {
                StorePrefixes.empty(o);
            }
            objects = null;
        }
    }
}
