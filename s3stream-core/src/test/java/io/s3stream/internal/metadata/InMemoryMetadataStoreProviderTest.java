package io.s3stream.internal.metadata;

import io.s3stream.InvalidConfigException;
import io.s3stream.StreamOptions;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.MetadataStoreProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.util.List;
import java.util.ServiceLoader;
import java.util.concurrent.ExecutionException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The {@code mem://name} provider: discovery, sharing by name, handle lifetime and isolation. */
class InMemoryMetadataStoreProviderTest {

    private static final String NAME = "provider-test";
    private static final String OTHER = "provider-test-other";

    @AfterEach
    void clear() {
        InMemoryMetadataStoreProvider.clear(NAME);
        InMemoryMetadataStoreProvider.clear(OTHER);
    }

    private static MetadataStoreProvider provider() {
        return ServiceLoader.load(MetadataStoreProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(p -> p.scheme().equals("mem"))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no provider for mem:// found by ServiceLoader"));
    }

    @Test
    void serviceLoaderFindsTheMemScheme() {
        assertInstanceOf(InMemoryMetadataStoreProvider.class, provider());
    }

    @Test
    void handlesOnOneNameShareStateThatOutlivesThem() throws Exception {
        MetadataStoreProvider provider = provider();
        long streamId;
        try (MetadataStore first = provider.open(URI.create("mem://" + NAME), null)) {
            long epoch = first.registerNode(1).get();
            streamId = first.createStream(1, epoch, StreamOptions.defaults()).get().streamId();
        }
        try (MetadataStore restarted = provider.open(URI.create("mem://" + NAME), null);
             MetadataStore other = provider.open(URI.create("mem://" + OTHER), null)) {
            assertEquals(List.of(streamId), restarted.listStreams().get().stream().map(s -> s.streamId()).toList());
            assertEquals(2L, restarted.registerNode(1).get(), "the node registration survived too");
            assertTrue(other.listStreams().get().isEmpty(), "names are isolated");
        }
    }

    @Test
    void clearForgetsTheState() throws Exception {
        MetadataStoreProvider provider = provider();
        try (MetadataStore store = provider.open(URI.create("mem://" + NAME), null)) {
            store.registerNode(1).get();
            store.createStream(1, 1, StreamOptions.defaults()).get();
        }
        InMemoryMetadataStoreProvider.clear(NAME);
        try (MetadataStore store = provider.open(URI.create("mem://" + NAME), null)) {
            assertTrue(store.listStreams().get().isEmpty());
            assertEquals(1L, store.registerNode(1).get());
        }
    }

    @Test
    void aClosedHandleFailsItsCallsButNotOtherHandles() throws Exception {
        MetadataStoreProvider provider = provider();
        MetadataStore a = provider.open(URI.create("mem://" + NAME), null);
        try (MetadataStore b = provider.open(URI.create("mem://" + NAME), null)) {
            a.close();
            a.close(); // idempotent
            ExecutionException e = assertThrows(ExecutionException.class, () -> a.listStreams().get());
            assertInstanceOf(IllegalStateException.class, e.getCause());
            assertTrue(b.listStreams().get().isEmpty());
        }
    }

    @Test
    void malformedUrisAreRejected() {
        MetadataStoreProvider provider = provider();
        assertThrows(InvalidConfigException.class, () -> provider.open(URI.create("mem:///path-only"), null));
        assertThrows(InvalidConfigException.class, () -> provider.open(URI.create("s3://bucket"), null));
    }
}
