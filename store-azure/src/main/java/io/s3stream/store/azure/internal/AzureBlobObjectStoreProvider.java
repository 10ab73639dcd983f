package io.s3stream.store.azure.internal;

import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreProvider;

import java.net.URI;

/** Serves {@code azblob://account/container/prefix?…} URIs with an {@link AzureBlobObjectStore}. */
public final class AzureBlobObjectStoreProvider implements ObjectStoreProvider {

    @Override
    public String scheme() {
        return "azblob";
    }

    @Override
    public ObjectStore open(URI uri) {
        return AzureBlobObjectStore.open(uri);
    }
}
