package io.s3stream.kafka.shell.topic;

import io.s3stream.KeyValues;
import io.s3stream.RecordBatch;
import io.s3stream.Stream;
import io.s3stream.StreamNotFoundException;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.kafka.shell.log.PartitionLog;
import io.s3stream.kafka.shell.log.TimeIndex;
import io.s3stream.testing.EngineFixture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Streams of topic creations that did not finish, on real engines sharing one store: found after the grace, handed to
 * the destroyer and destroyed; recorded, untagged, held-elsewhere and in-creation streams are never touched.
 */
@Timeout(60)
class OrphanStreamsTest {
    private static final long GRACE = TimeUnit.MINUTES.toNanos(10);
    private static final long INTERVAL = TimeUnit.MINUTES.toNanos(1); // a quarter of the grace, at most a minute

    private final EngineFixture fixture = new EngineFixture();
    private final AtomicLong clock = new AtomicLong();

    @AfterEach
    void close() {
        fixture.close();
    }

    private static Stream create(StreamStorage storage, String topic) throws Exception {
        StreamOptions options = topic == null ? StreamOptions.defaults() : OrphanStreams.partitionStream(topic, 0);
        Stream s = storage.createStream(options).get(10, TimeUnit.SECONDS);
        s.append(RecordBatch.of(1, ByteBuffer.wrap(new byte[100]))).get(10, TimeUnit.SECONDS);
        return s;
    }

    private static void record(KeyValues kv, String topic, long streamId) throws Exception {
        Properties p = new Properties();
        p.setProperty("id", "x");
        p.setProperty("partitions", "1");
        p.setProperty("stream.0", Long.toString(streamId));
        kv.put(TopicRegistry.PREFIX + topic, StoredProperties.format(p)).get(10, TimeUnit.SECONDS);
    }

    private static void assertGone(StreamStorage storage, long streamId) {
        assertThatThrownBy(() -> storage.openStream(streamId, StreamDestroyer.SWEEP_EPOCH + 1)
                .get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(StreamNotFoundException.class);
    }

    private List<Long> sweepAt(long nanos, OrphanStreams orphans, StreamStorage... views) throws Exception {
        for (StreamStorage v : views) {
            v.keyValues().sync().get(10, TimeUnit.SECONDS); // every node's commits are in every view
        }
        clock.set(nanos);
        return orphans.sweep(Set.of("busy")::contains);
    }

    @Test
    void streamsNoTopicRecordedForTheGraceAreDestroyedAndNothingElse() throws Exception {
        StreamStorage one = fixture.open(1);
        StreamStorage two = fixture.open(2);
        KeyValues kv = one.keyValues();
        OrphanStreams orphans = new OrphanStreams(one, kv, 1, clock::get, GRACE);
        StreamDestroyer destroyer = new StreamDestroyer(one, kv, clock::get, TimeUnit.SECONDS.toNanos(1));

        Stream openHere = create(one, "gone"); // this shell's creation failed and so did its destroy
        Stream closedElsewhere = create(two, "gone-too");
        closedElsewhere.close().get(10, TimeUnit.SECONDS); // its shell stopped, or a takeover closed it
        Stream heldElsewhere = create(two, "theirs"); // the other shell's own sweep decides about it
        Stream recorded = create(one, "kept");
        record(kv, "kept", recorded.streamId());
        Stream untagged = create(one, null); // an embedding program's own stream
        Stream inCreation = create(one, "busy");
        Stream late = create(one, "late"); // recorded within the grace
        Stream pending = create(one, "deleted"); // a deleted topic's stream, its destroy key already written
        kv.update(StreamDestroyer.keysOf("deleted", List.of(pending.streamId())), List.of()).get(10, TimeUnit.SECONDS);

        assertThat(sweepAt(0, orphans, one, two)).isEmpty();
        assertThat(orphans.suspects())
                .containsExactlyInAnyOrder(openHere.streamId(), closedElsewhere.streamId(), late.streamId());

        record(kv, "late", late.streamId());
        assertThat(sweepAt(GRACE - INTERVAL / 2, orphans, one)).as("within the grace").isEmpty();
        assertThat(orphans.suspects()).containsExactlyInAnyOrder(openHere.streamId(), closedElsewhere.streamId());
        assertThat(sweepAt(GRACE + INTERVAL / 4, orphans, one)).as("sooner than the interval: no sweep").isEmpty();

        assertThat(sweepAt(GRACE + INTERVAL, orphans, one))
                .containsExactlyInAnyOrder(openHere.streamId(), closedElsewhere.streamId());
        assertThat(new String(kv.get(StreamDestroyer.key(openHere.streamId())).join().orElseThrow(),
                StandardCharsets.UTF_8)).isEqualTo("gone-0, in no topic's record");
        assertThat(new String(kv.get(StreamDestroyer.key(pending.streamId())).join().orElseThrow(),
                StandardCharsets.UTF_8)).as("left as DeleteTopics wrote it").isEqualTo("deleted-0");
        assertThat(orphans.suspects()).isEmpty();

        destroyer.sweep(id -> false).get(30, TimeUnit.SECONDS);
        assertGone(one, openHere.streamId());
        assertGone(one, closedElsewhere.streamId());
        assertGone(one, pending.streamId());
        for (Stream alive : List.of(heldElsewhere, recorded, untagged, inCreation, late)) {
            assertThat(alive.append(RecordBatch.of(1, ByteBuffer.wrap(new byte[10]))).get(10, TimeUnit.SECONDS)
                    .baseOffset()).as("stream %d is untouched", alive.streamId()).isEqualTo(1);
        }
        assertThat(sweepAt(3 * GRACE, orphans, one, two)).isEmpty();
    }

    @Test
    void checkpointsOfStreamsThatNoLongerExistAreDeleted() throws Exception {
        StreamStorage one = fixture.open(1);
        StreamStorage two = fixture.open(2);
        KeyValues kv = one.keyValues();
        OrphanStreams orphans = new OrphanStreams(one, kv, 1, clock::get, GRACE);
        Stream live = create(one, "kept");
        record(kv, "kept", live.streamId());
        Stream elsewhere = create(two, "theirs"); // another shell's partition: its checkpoint stays
        Stream deleted = create(one, "gone");
        deleted.destroy().get(10, TimeUnit.SECONDS);
        String foreign = PartitionLog.TRANSACTIONS_PREFIX + "not-a-stream";
        for (String key : List.of(PartitionLog.transactionsKey(live.streamId()),
                PartitionLog.transactionsKey(elsewhere.streamId()), PartitionLog.transactionsKey(deleted.streamId()),
                foreign)) {
            kv.put(key, new byte[] {1}).get(10, TimeUnit.SECONDS); // as a leader that had not noticed would
        }

        for (Stream s : List.of(live, elsewhere, deleted)) {
            kv.put(TimeIndex.key(s.streamId()), new byte[] {1}).get(10, TimeUnit.SECONDS);
        }
        String nested = TimeIndex.PREFIX + "x/" + deleted.streamId(); // under the prefix, but no key this shell writes
        kv.put(nested, new byte[] {1}).get(10, TimeUnit.SECONDS);

        sweepAt(0, orphans, one, two);
        assertThat(kv.list(PartitionLog.TRANSACTIONS_PREFIX).get(10, TimeUnit.SECONDS).keySet())
                .containsExactlyInAnyOrder(PartitionLog.transactionsKey(live.streamId()),
                        PartitionLog.transactionsKey(elsewhere.streamId()), foreign);
        assertThat(kv.list(TimeIndex.PREFIX).get(10, TimeUnit.SECONDS).keySet()).as("time indexes too")
                .containsExactlyInAnyOrder(TimeIndex.key(live.streamId()), TimeIndex.key(elsewhere.streamId()), nested);
    }
}
