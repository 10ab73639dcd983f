package io.s3stream.store.s3.internal;

import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreProvider;

import java.net.URI;

/** Serves {@code s3://bucket/prefix?…} URIs with an {@link S3ObjectStore}. */
public final class S3ObjectStoreProvider implements ObjectStoreProvider {

    @Override
    public String scheme() {
        return "s3";
    }

    @Override
    public ObjectStore open(URI uri) {
        return S3ObjectStore.open(uri);
    }
}
