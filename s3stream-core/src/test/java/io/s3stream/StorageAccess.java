package io.s3stream;

import io.s3stream.internal.engine.StorageEngine;

/** Test-only access to the engine behind a {@link StreamStorage}, through its package-private seam. */
@SuppressWarnings("exports") // tests run on the class path, where the engine package is reachable
public final class StorageAccess {
    private StorageAccess() {
    }

    public static StorageEngine engine(StreamStorage storage) {
        return storage.engine();
    }

    public static StreamStorage wrap(StorageEngine engine) {
        return new StreamStorage(engine);
    }
}
