package io.s3stream.internal.engine;

import io.s3stream.AppendResult;
import io.s3stream.FetchResult;
import io.s3stream.InvalidConfigException;
import io.s3stream.NodeFencedException;
import io.s3stream.RecordBatch;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamFencedException;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.TakeoverResult;
import io.s3stream.internal.util.Futures;
import io.s3stream.spi.StreamState;
import io.s3stream.testing.EngineFixture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link StreamStorage#takeOverNode}: two engines on one object store, manifest and (shared, in-memory) WAL target, as
 * two nodes on a shared WAL would be. Every node uses the same WAL URI; the WAL keeps one log per node under it.
 */
class StorageEngineTakeoverTest {
    private final EngineFixture fixture = new EngineFixture();
    private final long seed = System.nanoTime();
    private final Random random = new Random(seed);

    @AfterEach
    void close() {
        fixture.close();
    }

    private StreamStorage node(long nodeId) {
        return fixture.open(nodeId, b -> b.wal("mem://" + fixture.walName(0) + "?capacity=64MiB"));
    }

    /** Appends {@code batches} random batches to each stream, waiting for each; returns what each stream holds. */
    private List<TreeMap<Long, byte[]>> fill(List<Stream> streams, int batches) throws Exception {
        List<TreeMap<Long, byte[]>> model = new ArrayList<>();
        for (Stream s : streams) {
            TreeMap<Long, byte[]> m = new TreeMap<>();
            for (int i = 0; i < batches; i++) {
                byte[] payload = new byte[1 + random.nextInt(4000)];
                random.nextBytes(payload);
                AppendResult r = s.append(RecordBatch.of(1 + random.nextInt(3), ByteBuffer.wrap(payload)))
                        .get(10, TimeUnit.SECONDS);
                m.put(r.baseOffset(), payload);
            }
            model.add(m);
        }
        return model;
    }

    private static void assertHolds(Stream stream, TreeMap<Long, byte[]> expected, String seedInfo) throws Exception {
        long offset = expected.firstKey();
        for (var e : expected.entrySet()) {
            assertThat(offset).as("offsets are contiguous" + seedInfo).isEqualTo(e.getKey());
            try (FetchResult result = stream.fetch(offset, Long.MAX_VALUE, 1).get(10, TimeUnit.SECONDS)) {
                StoredBatch batch = result.batches().getFirst();
                assertThat(batch.baseOffset()).isEqualTo(offset);
                byte[] bytes = new byte[batch.payload().remaining()];
                batch.payload().get(bytes);
                assertThat(bytes).as("stream " + stream.streamId() + " offset " + offset + seedInfo)
                        .isEqualTo(e.getValue());
                offset += batch.count();
            }
        }
    }

    @Test
    void aSurvivorRecoversACrashedNodesAcknowledgedAppendsAndReleasesItsStreams() throws Exception {
        StreamStorage one = node(1);
        List<Stream> streams = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            streams.add(one.createStream(StreamOptions.defaults()).get());
        }
        List<TreeMap<Long, byte[]>> model = fill(streams, 60);
        List<Long> ends = streams.stream().map(Stream::confirmedOffset).toList();
        fixture.crash(one); // nothing uploaded: everything is in node 1's WAL only

        StreamStorage two = node(2);
        TakeoverResult result = two.takeOverNode(1).get(30, TimeUnit.SECONDS);
        assertThat(result.nodeId()).isEqualTo(1);
        assertThat(result.committedRecords()).isEqualTo(4 * 60);
        assertThat(result.streamsReleased()).isEqualTo(4);

        for (int i = 0; i < streams.size(); i++) {
            Stream moved = two.openStream(streams.get(i).streamId(), streams.get(i).epoch() + 1).get(10, TimeUnit.SECONDS);
            assertThat(moved.confirmedOffset()).isEqualTo(ends.get(i));
            assertHolds(moved, model.get(i), " (seed " + seed + ")");
            moved.append(RecordBatch.of(1, ByteBuffer.wrap(new byte[]{1}))).get(10, TimeUnit.SECONDS);
        }
        assertThat(EngineHooks.metadata(two).getNode(1).join().orElseThrow().nodeEpoch())
                .isEqualTo(result.fencingNodeEpoch());
    }

    @Test
    void aLiveOwnerIsFencedAndLosesNothingItAcknowledged() throws Exception {
        StreamStorage one = node(1);
        Stream stream = one.createStream(StreamOptions.defaults()).get();
        Stream other = one.createStream(StreamOptions.defaults()).get();
        List<CompletableFuture<AppendResult>> appends = new ArrayList<>();
        List<byte[]> payloads = new ArrayList<>();
        StreamStorage two = node(2);
        CompletableFuture<TakeoverResult> takeover = null;
        int takeoverAt = 200 + random.nextInt(800);
        for (int i = 0; i < 2_000; i++) {
            byte[] payload = new byte[100 + random.nextInt(500)];
            random.nextBytes(payload);
            payloads.add(payload);
            appends.add(stream.append(RecordBatch.of(1, ByteBuffer.wrap(payload))));
            if (i == takeoverAt) {
                takeover = two.takeOverNode(1);
            }
        }
        takeover.get(30, TimeUnit.SECONDS);
        assertThatThrownBy(() -> stream.append(RecordBatch.of(1, ByteBuffer.wrap(new byte[]{1}))).get(10, TimeUnit.SECONDS))
                .as("the owner acknowledges nothing once taken over (seed " + seed + ")")
                .hasRootCauseInstanceOf(NodeFencedException.class);
        TreeMap<Long, byte[]> acknowledged = new TreeMap<>();
        boolean failed = false;
        // Appends in flight at the takeover either were acknowledged (then the taker recovered them) or failed.
        for (int i = 0; i < appends.size(); i++) {
            try {
                acknowledged.put(appends.get(i).get(30, TimeUnit.SECONDS).baseOffset(), payloads.get(i));
                assertThat(failed).as("acknowledgements are a prefix (seed " + seed + ")").isFalse();
            } catch (ExecutionException e) {
                failed = true;
                assertThat(Futures.unwrap(e)).isInstanceOfAny(NodeFencedException.class, StreamFencedException.class);
            }
        }
        assertThatThrownBy(() -> other.append(RecordBatch.of(1, ByteBuffer.wrap(new byte[]{1}))).get(10, TimeUnit.SECONDS))
                .hasRootCauseInstanceOf(NodeFencedException.class);
        // Its key-value changes are fenced too: a paused owner that resumes cannot overwrite what the taker wrote.
        two.keyValues().put("offsets/g/0", new byte[] {2}).get(10, TimeUnit.SECONDS);
        assertThatThrownBy(() -> one.keyValues().put("offsets/g/0", new byte[] {1}).get(10, TimeUnit.SECONDS))
                .hasRootCauseInstanceOf(NodeFencedException.class);
        assertThatThrownBy(() -> one.keyValues().compareAndSet("offsets/g/0", new byte[] {2}, null)
                .get(10, TimeUnit.SECONDS)).hasRootCauseInstanceOf(NodeFencedException.class);
        assertThat(two.keyValues().get("offsets/g/0").get(10, TimeUnit.SECONDS)).hasValueSatisfying(
                v -> assertThat(v).containsExactly(2));

        Stream moved = two.openStream(stream.streamId(), stream.epoch() + 1).get(10, TimeUnit.SECONDS);
        assertThat(moved.confirmedOffset()).as("(seed " + seed + ")").isGreaterThanOrEqualTo(
                acknowledged.isEmpty() ? 0 : acknowledged.lastKey() + 1);
        if (!acknowledged.isEmpty()) {
            assertHolds(moved, acknowledged, " (seed " + seed + ")");
        }
    }

    @Test
    void theTakenOverNodeRestartsWithANewEpochAndReopensItsStreams() throws Exception {
        StreamStorage one = node(1);
        Stream stream = one.createStream(StreamOptions.defaults()).get();
        TreeMap<Long, byte[]> model = fill(List.of(stream), 20).getFirst();
        fixture.crash(one);
        StreamStorage two = node(2);
        two.takeOverNode(1).get(30, TimeUnit.SECONDS);

        StreamStorage again = node(1);
        Stream reopened = again.openStream(stream.streamId(), stream.epoch() + 1).get(10, TimeUnit.SECONDS);
        assertHolds(reopened, model, " (seed " + seed + ")");
        assertThat(EngineHooks.metadata(again).getStream(stream.streamId()).join().orElseThrow().state())
                .isEqualTo(StreamState.OPENED);
    }

    @Test
    void aTakeoverOfAnInstanceThatRestartedMeanwhileIsRefusedAndFencesNothing() throws Exception {
        StreamStorage one = node(1);
        long judgedDead = one.nodeEpoch();
        Stream stream = one.createStream(StreamOptions.defaults()).get();
        TreeMap<Long, byte[]> model = fill(List.of(stream), 20).getFirst();
        fixture.crash(one);
        StreamStorage again = node(1); // restarts before the survivor acts on the old lease
        assertThat(again.nodeEpoch()).isGreaterThan(judgedDead);
        Stream reopened = again.openStream(stream.streamId(), stream.epoch() + 1).get(10, TimeUnit.SECONDS);

        StreamStorage two = node(2);
        assertThatThrownBy(() -> two.takeOverNode(1, judgedDead).get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(io.s3stream.spi.MetadataConflictException.class)
                .hasMessageContaining("registered again");
        // The restarted instance was not fenced: it appends and reads what the crashed one acknowledged.
        reopened.append(io.s3stream.RecordBatch.of(1, java.nio.ByteBuffer.wrap(new byte[] {42}))).get(10, TimeUnit.SECONDS);
        assertHolds(reopened, model, " (seed " + seed + ")");
        assertThat(EngineHooks.metadata(again).getNode(1).join().orElseThrow().nodeEpoch()).isEqualTo(again.nodeEpoch());
        assertThatThrownBy(() -> two.takeOverNode(1, 0).get(10, TimeUnit.SECONDS))
                .hasCauseInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aNodeThatNeverWroteIsTakenOverWithNothingToDo() throws Exception {
        StreamStorage two = node(2);
        node(3).close();
        TakeoverResult result = two.takeOverNode(3).get(30, TimeUnit.SECONDS);
        assertThat(result.walRecords()).isZero();
        assertThat(result.streamsReleased()).isZero();
    }

    @Test
    void aNodeCannotTakeItselfOver() {
        StreamStorage two = node(2);
        assertThatThrownBy(() -> two.takeOverNode(2).get(10, TimeUnit.SECONDS))
                .hasRootCauseInstanceOf(IllegalArgumentException.class).hasMessageContaining("its own WAL");
    }

    @Test
    void aWalOnItsNodesOwnDiskCannotBeTakenOver() {
        StreamStorage two = fixture.open(2, b -> b.wal("slowrecovery://" + fixture.walName(2) + "?recordDelayMs=0"));
        assertThatThrownBy(() -> two.takeOverNode(1).get(10, TimeUnit.SECONDS))
                .hasRootCauseInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("cannot be taken over").hasMessageContaining("wait");
    }
}
