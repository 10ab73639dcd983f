package io.s3stream.internal.manifest;

import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.S3Server;

import java.time.InstantSource;
import java.util.List;
import java.util.UUID;

/**
 * A {@link ManifestMetadataStore} on the S3 object store of a test server, under a fresh prefix, for the contract
 * ITs; {@link #close} closes the store and removes everything under the prefix.
 */
final class ManifestOnS3 {
    /**
     * Commits per writer in the contract's concurrency case (8 writers and a trimmer). On the local stores it is 200;
     * here every commit is several round trips to a real server, plus a re-read per lost race: 8 × 40 took 9 s on
     * MinIO and 17 s on S3Proxy (2 cores), so 8 × 200 would take 45-85 s on its own. At 40 every writer still loses
     * races to the others and to the trimmer; the assertions are unchanged.
     */
    static final int CONCURRENCY_UPLOADS_PER_WRITER = 40;

    private final S3Server server;
    private ObjectStore objects;

    ManifestOnS3(S3Server server) {
        this.server = server;
    }

    MetadataStore open(InstantSource clock) {
        objects = ObjectStores.open(server.uri("manifest-it-" + UUID.randomUUID()));
        return ManifestMetadataStore.open(objects, clock, ManifestConfig.DEFAULTS.withPollMs(0));
    }

    /** Closes {@code store} (idempotent) before the object store under it, then empties the prefix. */
    void close(MetadataStore store) {
        if (store != null) {
            store.close();
        }
        if (objects != null) {
            try (ObjectStore o = objects) {
                List<String> keys = o.list("").join().stream().map(ObjectInfo::key).toList();
                if (!keys.isEmpty()) {
                    o.delete(keys).join();
                }
            }
            objects = null;
        }
    }
}
