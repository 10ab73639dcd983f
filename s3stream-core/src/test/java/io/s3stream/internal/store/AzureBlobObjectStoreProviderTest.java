package io.s3stream.internal.store;

import org.junit.jupiter.api.Test;

import java.lang.reflect.InvocationTargetException;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code azblob://} without the optional Azure SDK: a clear message naming the artifact, not a NoClassDefFoundError. */
class AzureBlobObjectStoreProviderTest {

    @Test
    void withoutTheAzureSdkOpenNamesTheMissingArtifact() throws Exception {
        // Core's classes alone, without the Azure SDK (nor anything else) behind them.
        URL coreClasses = AzureBlobObjectStoreProvider.class.getProtectionDomain().getCodeSource().getLocation();
        try (URLClassLoader withoutAzure = new URLClassLoader(new URL[] {coreClasses},
                ClassLoader.getPlatformClassLoader())) {
            Class<?> provider = withoutAzure.loadClass(AzureBlobObjectStoreProvider.class.getName());
            Object instance = provider.getConstructor().newInstance();
            assertThat(provider.getMethod("scheme").invoke(instance)).isEqualTo("azblob");
            try {
                provider.getMethod("open", URI.class).invoke(instance, URI.create("azblob://acct/container/p?key=k"));
                throw new AssertionError("open succeeded without the Azure SDK");
            } catch (InvocationTargetException e) {
                assertThat(e.getCause().getClass().getName()).isEqualTo("io.s3stream.spi.ObjectStoreException");
                assertThat(e.getCause()).hasMessageContaining("com.azure:azure-storage-blob:12.37.2")
                        .hasMessageContaining("optional dependency");
            }
        }
    }

    @Test
    void withTheSdkTheProviderSeesIt() {
        assertThat(AzureBlobObjectStoreProvider.sdkPresent()).isTrue();
    }
}
