/**
 * s3stream's object store on Azure Blob Storage (and Azurite): {@code azblob://account/container/prefix} URIs, through
 * the Azure Storage Blob SDK. The store is reached through {@link io.s3stream.spi.ObjectStoreProvider}; the module
 * exports nothing.
 */
module io.s3stream.store.azure {
    requires io.s3stream.core;
    requires com.azure.storage.blob;
    requires com.azure.storage.common;
    requires com.azure.core;
    requires com.azure.identity;

    provides io.s3stream.spi.ObjectStoreProvider with io.s3stream.store.azure.internal.AzureBlobObjectStoreProvider;
}
