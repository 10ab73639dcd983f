package io.s3stream.internal.engine;

import io.s3stream.StorageConfig;
import io.s3stream.StreamStorage;

/** Placeholder until the engine lands. */
public final class StorageEngine {
    private StorageEngine() {
    }

    public static StreamStorage start(StorageConfig config) {
        throw new UnsupportedOperationException("engine not built yet: " + config);
    }
}
