package io.s3stream.internal.store;

import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import io.s3stream.spi.ObjectStoreProvider;

import java.net.URI;

/**
 * Serves {@code azblob://account/container/prefix} URIs with an {@link AzureBlobObjectStore}.
 *
 * <p>Design note: the Azure SDK is an optional dependency of core. This class refers to no Azure type, so the provider
 * loads without it; {@link #open} checks that the SDK is visible first and otherwise names the artifact to add.
 */
public final class AzureBlobObjectStoreProvider implements ObjectStoreProvider {
    static final String ARTIFACT = "com.azure:azure-storage-blob:12.37.2";

    @Override
    public String scheme() {
        return "azblob";
    }

    @Override
    public ObjectStore open(URI uri) {
        if (!sdkPresent()) {
            throw new ObjectStoreException("azblob:// needs the Azure Storage Blob SDK, an optional dependency of "
                    + "s3stream-core: add " + ARTIFACT + " to the application (on the module path also "
                    + "--add-modules com.azure.storage.blob)", false);
        }
        return AzureBlobObjectStore.open(uri);
    }

    static boolean sdkPresent() {
        try {
            Class.forName("com.azure.storage.blob.BlobServiceClientBuilder", false,
                    AzureBlobObjectStoreProvider.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
