package io.s3stream.internal.engine;

import io.s3stream.RecordBatch;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.Stream;
import io.s3stream.internal.compaction.Compactor;
import io.s3stream.spi.ObjectState;
import io.s3stream.testing.EngineFixture;
import io.s3stream.testing.FaultInjectingObjectStore;
import io.s3stream.testing.FaultyObjectStoreProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Retired objects are deleted while a compaction round is stuck (a read of its input that never answers): deletion
 * has a thread of its own, so space comes back however long the round takes. Before, deletion ran only at the start of
 * each round, and a round stalled mid-upload in the hour-long soak test kept every trimmed object for the rest of the
 * run.
 */
@Timeout(120)
class DeletionDuringStuckCompactionTest {

    @Test
    void trimmedDataIsDeletedWhileACompactionRoundHangs() throws Exception {
        String name = "stuck-compaction-" + System.nanoTime();
        AtomicLong nanos = new AtomicLong();
        EngineFixture fixture = new EngineFixture();
        try {
            StreamStorage storage = fixture.open(1, b -> b.objectStore("faulty://" + name)
                    .compactionEnabled(true).compactionInterval(Duration.ofMillis(50))
                    .objectDeletionGracePeriod(Duration.ofSeconds(60)), nanos::get);
            FaultInjectingObjectStore faults = FaultyObjectStoreProvider.faults(name);
            Compactor compactor = EngineHooks.compactor(storage);
            StorageEngine engine = EngineHooks.engine(storage);

            // Every read hangs from now on: the next round that reads an input object never finishes.
            faults.on(FaultInjectingObjectStore.Operation.GET).always().hang();
            Stream first = storage.createStream(StreamOptions.defaults()).get();
            for (int upload = 0; upload < 3; upload++) { // three stream set objects: work for a round
                first.append(RecordBatch.of(1, ByteBuffer.wrap(new byte[64 * 1024]))).get(10, TimeUnit.SECONDS);
                engine.flush().get(30, TimeUnit.SECONDS);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (faults.hangingCalls() == 0) {
                assertThat(System.nanoTime()).as("a compaction round reads its input and hangs").isLessThan(deadline);
                Thread.sleep(10);
            }

            // A second stream's data is uploaded, then trimmed away: its object is retired.
            Stream second = storage.createStream(StreamOptions.defaults()).get();
            second.append(RecordBatch.of(1, ByteBuffer.wrap(new byte[64 * 1024]))).get(10, TimeUnit.SECONDS);
            engine.flush().get(30, TimeUnit.SECONDS);
            second.trim(second.nextOffset()).get(10, TimeUnit.SECONDS);
            while (engine.metadataStore().listObjects(ObjectState.MARKED_FOR_DELETION).join().isEmpty()) {
                assertThat(System.nanoTime()).as("the trimmed object is marked for deletion").isLessThan(deadline);
                Thread.sleep(10);
            }
            Thread.sleep(200); // a few deletion passes see it marked (its grace period starts)
            nanos.addAndGet(TimeUnit.SECONDS.toNanos(61));
            while (compactor.stats().objectsDeleted() == 0) {
                assertThat(System.nanoTime()).as("deleted while the round still hangs").isLessThan(deadline);
                Thread.sleep(10);
            }
            assertThat(faults.hangingCalls()).as("the round is still stuck").isPositive();
            assertThat(engine.metadataStore().listObjects(ObjectState.MARKED_FOR_DELETION).join()).isEmpty();
            faults.close(); // fails the hung read, so the round ends and the engine closes promptly
        } finally {
            fixture.close();
            FaultyObjectStoreProvider.forget(name);
        }
    }
}
