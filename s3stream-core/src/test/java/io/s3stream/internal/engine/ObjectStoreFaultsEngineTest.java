package io.s3stream.internal.engine;

import io.s3stream.AppendResult;
import io.s3stream.FetchResult;
import io.s3stream.OverCapacityException;
import io.s3stream.RecordBatch;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectState;
import io.s3stream.testing.EngineFixture;
import io.s3stream.testing.FaultInjectingObjectStore.Operation;
import io.s3stream.testing.FaultInjectingObjectStore;
import io.s3stream.testing.FaultyObjectStoreProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Random;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The engine over a {@code faulty://} store: what users see when the object store misbehaves. Complements the
 * back-pressure and corruption tests of {@link StorageEngineTest}.
 */
class ObjectStoreFaultsEngineTest {
    private final EngineFixture fixture = new EngineFixture();
    private final String storeName = "faults-" + UUID.randomUUID();
    private final long seed = System.nanoTime();
    private final Random random = new Random(seed);
    private final TreeMap<Long, byte[]> expected = new TreeMap<>();

    @AfterEach
    void close() {
        fixture.close();
        FaultyObjectStoreProvider.forget(storeName);
    }

    private void append(Stream s, int size) throws Exception {
        byte[] data = new byte[size];
        random.nextBytes(data);
        AppendResult r = s.append(RecordBatch.of(1, ByteBuffer.wrap(data))).get(30, TimeUnit.SECONDS);
        expected.put(r.baseOffset(), data);
    }

    private void readAllAndCheck(Stream s) throws Exception {
        long next = 0;
        while (next < s.confirmedOffset()) {
            try (FetchResult result = s.fetch(next, Long.MAX_VALUE, 256 * 1024).get(30, TimeUnit.SECONDS)) {
                assertThat(result.batches()).isNotEmpty();
                for (StoredBatch b : result.batches()) {
                    byte[] got = new byte[b.payload().remaining()];
                    b.payload().duplicate().get(got);
                    assertThat(got).as("offset %d (seed %d)", b.baseOffset(), seed).isEqualTo(expected.get(b.baseOffset()));
                    next = b.endOffset();
                }
            }
        }
    }

    @Test
    void truncatedGetsAreRetriedAndNeverReturnedAsData() throws Exception {
        StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + storeName));
        Stream s = storage.createStream(StreamOptions.defaults()).get();
        for (int i = 0; i < 100; i++) {
            append(s, 8 * 1024);
        }
        s.close().get(30, TimeUnit.SECONDS);
        storage.close();
        FaultInjectingObjectStore faults = FaultyObjectStoreProvider.faults(storeName);
        // A fresh node reads from objects; one GET in three comes back torn.
        StreamStorage other = fixture.open(2, b -> b.objectStore("faulty://" + storeName));
        FaultyObjectStoreProvider.faults(storeName).on(Operation.GET).withProbability(0.33).truncateTo(1000);
        Stream reopened = other.openStream(s.streamId(), 1).get();
        readAllAndCheck(reopened);
        assertThat(FaultyObjectStoreProvider.faults(storeName).faultsInjected(Operation.GET))
                .as("torn reads happened (seed %d)", seed).isPositive();
        assertThat(other.metrics().objectStore().retries()).isPositive();
        assertThat(faults).isNotNull();
    }

    @Test
    void aPermanentlyFailingStoreIsNamedWithItsLastStatusWhereAppendsAreRefused() throws Exception {
        StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + storeName)
                .backpressureTimeout(Duration.ofMillis(500)));
        FaultyObjectStoreProvider.faults(storeName).on(Operation.PUT).always().failFatal("403 AccessDenied");
        Stream s = storage.createStream(StreamOptions.defaults()).get();
        OverCapacityException refused = null;
        for (int i = 0; i < 2000 && refused == null; i++) {
            try {
                append(s, 16 * 1024);
            } catch (ExecutionException e) {
                refused = (OverCapacityException) e.getCause();
            }
        }
        assertThat(refused).isNotNull();
        assertThat(refused).hasMessageContaining("uploads are failing")
                .hasMessageContaining(storeName)
                .hasMessageContaining("403 AccessDenied");
        readAllAndCheck(s); // everything acknowledged is still readable
        FaultyObjectStoreProvider.faults(storeName).clearFaults();
        append(s, 100); // the store recovered: uploads drain the cache
        s.close().get(30, TimeUnit.SECONDS);
    }

    @Test
    void theRetryBudgetKeepsADeadStoreFromBeingFloodedWithRetries() throws Exception {
        StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + storeName)
                .backpressureTimeout(Duration.ofMillis(200)));
        FaultInjectingObjectStore faults = FaultyObjectStoreProvider.faults(storeName);
        faults.on(Operation.PUT).always().failRetriable("503 SlowDown");
        Stream s = storage.createStream(StreamOptions.defaults()).get();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
        while (System.nanoTime() < deadline) {
            try {
                append(s, 16 * 1024);
            } catch (ExecutionException e) {
                assertThat(e.getCause()).isInstanceOf(OverCapacityException.class);
                Thread.sleep(50);
            }
        }
        long putsWhileDead = faults.calls(Operation.PUT);
        // The budget (100 retries) is spent once; after that each upload round makes one request, and rounds back
        // off up to 5 s: a few hundred requests at most, not a storm of thousands.
        assertThat(putsWhileDead).as("PUTs to a dead store in 4 s (seed %d)", seed).isLessThan(300);
        assertThat(storage.metrics().objectStore().requests().get("PUT")).isEqualTo(putsWhileDead);
        faults.clearFaults();
        append(s, 100);
        s.close().get(30, TimeUnit.SECONDS);
        readAllAndCheck(s);
    }

    @Test
    void retriesOfAFailingUploadAddNoManifestEntryPerAttempt() throws Exception {
        StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + storeName)
                .uploadInterval(Duration.ofMillis(100)));
        FaultInjectingObjectStore faults = FaultyObjectStoreProvider.faults(storeName);
        Stream s = storage.createStream(StreamOptions.defaults()).get();
        faults.on(Operation.PUT).always().failFatal("403 AccessDenied");
        for (int i = 0; i < 10; i++) {
            append(s, 4 * 1024);
        }
        // Upload attempts of the block fail one after another (pauses of 0.2, 0.4, 0.6 … s).
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (faults.faultsInjected(Operation.PUT) < 4 && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertThat(faults.faultsInjected(Operation.PUT)).as("failed upload attempts").isGreaterThanOrEqualTo(4);
        faults.clearFaults();
        s.close().get(30, TimeUnit.SECONDS); // uploads what is left
        MetadataStore metadata = EngineHooks.metadata(storage);
        assertThat(metadata.listObjects(ObjectState.PREPARED).join())
                .as("ids prepared by failed attempts and never committed").isEmpty();
        assertThat(metadata.listObjects(ObjectState.COMMITTED).join()).isNotEmpty();
        readAllAndCheck(s);
    }
}
