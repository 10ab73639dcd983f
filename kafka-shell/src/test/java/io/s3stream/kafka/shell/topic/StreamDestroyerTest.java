package io.s3stream.kafka.shell.topic;

import io.s3stream.KeyValues;
import io.s3stream.RecordBatch;
import io.s3stream.Stream;
import io.s3stream.StreamNotFoundException;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.testing.EngineFixture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The streams of deleted topics, recorded under {@code kafka/destroy/}, on real engines sharing one store: destroyed
 * by the shell that has them open, or by a sweep when nobody did; a stream another node holds open waits for it.
 */
@Timeout(60)
class StreamDestroyerTest {
    private final EngineFixture fixture = new EngineFixture();
    private final AtomicLong clock = new AtomicLong();

    @AfterEach
    void close() {
        fixture.close();
    }

    private static Stream withData(StreamStorage storage) throws Exception {
        Stream s = storage.createStream(StreamOptions.defaults()).get(10, TimeUnit.SECONDS);
        s.append(RecordBatch.of(1, ByteBuffer.wrap(new byte[100]))).get(10, TimeUnit.SECONDS);
        return s;
    }

    private static void assertGone(StreamStorage storage, long streamId) {
        assertThatThrownBy(() -> storage.openStream(streamId, StreamDestroyer.SWEEP_EPOCH + 1).get(10, TimeUnit.SECONDS))
                .hasCauseInstanceOf(StreamNotFoundException.class);
    }

    /** The streams recorded under {@code kafka/destroy/}. */
    private static List<Long> pending(KeyValues kv) {
        return kv.list(StreamDestroyer.PREFIX).join().keySet().stream()
                .map(k -> Long.parseLong(k.substring(StreamDestroyer.PREFIX.length()))).toList();
    }

    private void sweep(StreamDestroyer destroyer, Set<Long> openHere) throws Exception {
        clock.addAndGet(TimeUnit.SECONDS.toNanos(2));
        destroyer.sweep(openHere::contains).get(30, TimeUnit.SECONDS);
    }

    @Test
    void recordedStreamsAreDestroyedByTheirHolderOrBySweepsAndTheirKeysGo() throws Exception {
        StreamStorage one = fixture.open(1);
        StreamStorage two = fixture.open(2);
        KeyValues kv = one.keyValues();
        StreamDestroyer destroyer = new StreamDestroyer(one, kv, clock::get, TimeUnit.SECONDS.toNanos(1));

        Stream ledHere = withData(one);
        Stream leftClosed = withData(one);
        leftClosed.close().get(10, TimeUnit.SECONDS); // its leader stopped: nobody holds it
        Stream heldElsewhere = withData(two);
        Stream stillOpenHere = withData(one);
        Stream alreadyGone = withData(one);
        alreadyGone.destroy().get(10, TimeUnit.SECONDS);
        List<Long> ids = List.of(ledHere.streamId(), leftClosed.streamId(), heldElsewhere.streamId(),
                stillOpenHere.streamId(), alreadyGone.streamId());
        kv.update(StreamDestroyer.keysOf("t", ids), List.of()).get(10, TimeUnit.SECONDS);
        assertThat(pending(kv)).containsExactlyInAnyOrderElementsOf(ids);

        // The shell that has a stream open destroys it; its key goes.
        destroyer.destroy(ledHere).get(10, TimeUnit.SECONDS);
        assertGone(one, ledHere.streamId());

        // A sweep: the closed stream is opened here and destroyed, the destroyed one's key dropped, the one another
        // node holds open is left to it, the one open here is left to its holder.
        sweep(destroyer, Set.of(stillOpenHere.streamId()));
        assertGone(one, leftClosed.streamId());
        assertThat(pending(kv))
                .containsExactlyInAnyOrder(heldElsewhere.streamId(), stillOpenHere.streamId());
        assertThat(stillOpenHere.append(RecordBatch.of(1, ByteBuffer.wrap(new byte[10]))).get(10, TimeUnit.SECONDS)
                .baseOffset()).as("a stream open here is not touched by a sweep").isEqualTo(1);

        // Sweeps are spaced: one asked for within the minimum interval does nothing.
        heldElsewhere.close().get(10, TimeUnit.SECONDS);
        destroyer.sweep(id -> false).get(10, TimeUnit.SECONDS);
        assertThat(pending(kv)).contains(heldElsewhere.streamId());

        // Once the other node let go (it stopped, or a takeover closed its streams), the next sweep destroys it.
        sweep(destroyer, Set.of(stillOpenHere.streamId()));
        assertGone(two, heldElsewhere.streamId());
        assertThat(pending(kv)).containsExactly(stillOpenHere.streamId());
    }

    @Test
    void aDestroyThatFailsKeepsItsKeyForTheNextSweep() throws Exception {
        StreamStorage one = fixture.open(1);
        KeyValues kv = one.keyValues();
        StreamDestroyer destroyer = new StreamDestroyer(one, kv, clock::get, TimeUnit.SECONDS.toNanos(1));
        Stream s = withData(one);
        kv.update(StreamDestroyer.keysOf("t", List.of(s.streamId())), List.of()).get(10, TimeUnit.SECONDS);

        // Another handle at a higher epoch fences this one: its destroy fails, as a destroy refused by the store does.
        Stream newer = one.openStream(s.streamId(), 1).get(10, TimeUnit.SECONDS);
        assertThatThrownBy(() -> destroyer.destroy(s).get(10, TimeUnit.SECONDS)).isNotNull();
        assertThat(pending(kv)).containsExactly(s.streamId());
        newer.close().get(10, TimeUnit.SECONDS);

        sweep(destroyer, Set.of());
        assertGone(one, s.streamId());
        assertThat(pending(kv)).isEmpty();
    }
}
