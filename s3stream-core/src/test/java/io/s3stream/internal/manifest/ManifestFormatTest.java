package io.s3stream.internal.manifest;

import io.s3stream.StreamOptions;
import io.s3stream.internal.metadata.ManifestState;
import io.s3stream.internal.metadata.ManifestOp;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamMetadata;
import io.s3stream.spi.StreamState;
import io.s3stream.spi.StreamRange;
import io.s3stream.testing.ManualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Entries and checkpoints round-trip exactly; a restored checkpoint behaves like the state it was taken from. */
class ManifestFormatTest {

    private final ManualClock clock = new ManualClock();

    private static Object apply(ManifestState m, ManifestOp op, Instant at) {
        return m.apply(op, at);
    }

    private ManifestState sample() {
        ManifestState m = new ManifestState(clock);
        Instant t = clock.instant();
        apply(m, new ManifestOp.RegisterNode(1), t);
        apply(m, new ManifestOp.CreateStream(1, 1, 0, Map.of("a", "b")), t);
        apply(m, new ManifestOp.CreateStream(1, 1, 100, Map.of()), t);
        long first = (Long) apply(m, new ManifestOp.PrepareObjects(5, Duration.ofMinutes(1).toNanos()), t);
        for (int i = 0; i < 3; i++) {
            apply(m, new ManifestOp.CommitObjects(new CommitRequest(1, 1, List.of(new CommitRequest.NewObject(first + i,
                    ObjectType.STREAM_SET, 10, List.of(new StreamRange(0, 0, i * 10L, i * 10L + 10),
                    new StreamRange(1, 0, 100 + i * 5L, 105 + i * 5L)))), List.of())), t);
        }
        apply(m, new ManifestOp.TrimStream(0, 0, 15), t);
        apply(m, new ManifestOp.CommitObjects(new CommitRequest(1, 1, List.of(
                CommitRequest.NewObject.adopted("wal/1/0000000000000003", 77, List.of(new StreamRange(0, 0, 30, 40))),
                CommitRequest.NewObject.adopted("wal/1/0000000000000004", 12, List.of())), List.of(), 5L << 24)), t);
        apply(m, new ManifestOp.PutKv("k", new byte[] {1, 2}), t);
        return m;
    }

    private static byte[] encode(ManifestState m) {
        return ManifestFormat.encodeCheckpoint(new ManifestFormat.Checkpoint(7, Instant.EPOCH, m.snapshot()));
    }

    @Test
    void checkpointRoundTripsAndRestoresTheSameState() {
        ManifestState m = sample();
        byte[] bytes = encode(m);
        ManifestFormat.Checkpoint cp = ManifestFormat.decodeCheckpoint(bytes, "k", 7);
        ManifestState restored = ManifestState.restore(cp.snapshot(), clock);
        assertThat(encode(restored)).isEqualTo(bytes);
        assertThat(restored.listStreams()).isEqualTo(m.listStreams());
        assertThat(restored.getObjects(0, 0, 100, 100)).isEqualTo(m.getObjects(0, 0, 100, 100));
        assertThat(restored.getObjects(1, 0, 1000, 100)).isEqualTo(m.getObjects(1, 0, 1000, 100));
        assertThat(restored.listNodes()).isEqualTo(m.listNodes());
        assertThat(restored.getNode(1).orElseThrow().walCommittedPosition()).isEqualTo(5L << 24);
        assertThat(restored.getObjects(0, 30, 40, 1)).extracting(o -> o.key()).containsExactly("wal/1/0000000000000003");
        // Both continue identically, and an adopted key stays adopted.
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> apply(restored, new ManifestOp.CommitObjects(
                new CommitRequest(1, 1, List.of(CommitRequest.NewObject.adopted("wal/1/0000000000000004", 1, List.of())),
                        List.of(), 6L << 24)), clock.instant())).hasMessageContaining("already adopted");
        Instant t = clock.instant().plus(Duration.ofMinutes(2)); // the unused prepared ids expire
        ManifestOp next = new ManifestOp.TrimStream(1, 0, 110);
        apply(m, next, t);
        apply(restored, next, t);
        assertThat(encode(restored)).isEqualTo(encode(m));
    }

    @Test
    void deletedObjectsLeaveTheStateAndCheckpointsOfEarlierVersionsRestoreWithoutThem() {
        ManifestState m = sample();
        ObjectMetadata seal = m.listObjects(ObjectState.MARKED_FOR_DELETION).stream()
                .filter(o -> o.key().equals("wal/1/0000000000000004")).findFirst().orElseThrow();
        ManifestState.Snapshot before = m.snapshot();
        apply(m, new ManifestOp.ObjectsDeleted(List.of(seal.objectId())), clock.instant());

        assertThat(m.snapshot().objects()).hasSize(before.objects().size() - 1)
                .noneMatch(o -> o.metadata().objectId() == seal.objectId());
        apply(m, new ManifestOp.ObjectsDeleted(List.of(seal.objectId())), clock.instant()); // a retry applies too

        // A checkpoint written before objects were forgotten holds the deleted object in state DELETED.
        List<ManifestState.ObjectSnapshot> legacyObjects = new ArrayList<>();
        for (ManifestState.ObjectSnapshot o : before.objects()) {
            legacyObjects.add(o.metadata().objectId() != seal.objectId() ? o : new ManifestState.ObjectSnapshot(
                    new ObjectMetadata(seal.objectId(), seal.type(), seal.sizeBytes(), seal.ranges(), seal.nodeId(),
                            seal.committedAtMs(), ObjectState.DELETED, seal.key()), o.deadline(), o.expired()));
        }
        ManifestState legacy = ManifestState.restore(new ManifestState.Snapshot(before.nextStreamId(),
                before.nextObjectId(), before.nodeEpochs(), before.walPositions(), before.streams(), legacyObjects,
                before.kv()), clock);
        assertThat(encode(legacy)).isEqualTo(encode(m));
        for (ManifestState state : List.of(m, legacy)) { // the key is free again, in both
            apply(state, new ManifestOp.CommitObjects(new CommitRequest(1, 1, List.of(CommitRequest.NewObject
                    .adopted("wal/1/0000000000000004", 12, List.of())), List.of(), 6L << 24)), clock.instant());
        }
        assertThat(encode(legacy)).isEqualTo(encode(m));
    }

    @Test
    void deletedStreamsLeaveTheStateAndCheckpointsOfEarlierVersionsRestoreWithoutThem() {
        ManifestState m = sample();
        StreamMetadata gone = m.getStream(1).orElseThrow();
        ManifestState.Snapshot before = m.snapshot();
        apply(m, new ManifestOp.DeleteStream(1, 0), clock.instant());

        assertThat(m.snapshot().streams()).extracting(StreamMetadata::streamId).containsExactly(0L);
        assertThat(m.getStream(1)).isEmpty();
        // Stream 1's ranges in the three stream set objects are dead, stream 0's still live.
        assertThat(m.listObjects(ObjectState.COMMITTED)).hasSize(3);

        // A checkpoint written before streams were forgotten holds the deleted stream in state DELETED.
        List<StreamMetadata> legacyStreams = List.of(m.getStream(0).orElseThrow(), new StreamMetadata(1, 0,
                gone.startOffset(), gone.endOffset(), StreamState.DELETED, -1, gone.tags()));
        ManifestState.Snapshot after = m.snapshot();
        ManifestState legacy = ManifestState.restore(new ManifestState.Snapshot(after.nextStreamId(),
                after.nextObjectId(), after.nodeEpochs(), after.walPositions(), legacyStreams, after.objects(),
                after.kv()), clock);
        assertThat(encode(legacy)).isEqualTo(encode(m));
        assertThat(before.streams()).hasSize(2);

        // In both, a late upload of the deleted stream is dead on arrival and a second deletion says what happened.
        long id = (Long) apply(m, new ManifestOp.PrepareObjects(1, Duration.ofMinutes(1).toNanos()), clock.instant());
        apply(legacy, new ManifestOp.PrepareObjects(1, Duration.ofMinutes(1).toNanos()), clock.instant());
        for (ManifestState state : List.of(m, legacy)) {
            apply(state, new ManifestOp.CommitObjects(new CommitRequest(1, 1, List.of(new CommitRequest.NewObject(id,
                    ObjectType.STREAM, 5, List.of(new StreamRange(1, 0, 115, 120)))), List.of())), clock.instant());
            assertThat(state.listObjects(ObjectState.MARKED_FOR_DELETION)).extracting(ObjectMetadata::objectId)
                    .contains(id);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> apply(state,
                    new ManifestOp.DeleteStream(1, 0), clock.instant())).hasMessageContaining("stream 1 was deleted");
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> apply(state,
                    new ManifestOp.DeleteStream(2, 0), clock.instant())).hasMessageContaining("stream 2 does not");
        }
        assertThat(encode(legacy)).isEqualTo(encode(m));
    }

    @Test
    void aManifestThatCreatesAndDeletesStreamsAllDayKeepsOnlyWhatLives() {
        ManifestState m = sample();
        int sizeBefore = encode(m).length;
        Instant t = clock.instant();
        for (int i = 0; i < 10_000; i++) {
            StreamMetadata s = (StreamMetadata) apply(m, new ManifestOp.CreateStream(1, 1, 0,
                    Map.of("topic", "t-" + i, "partition", "0")), t);
            long id = (Long) apply(m, new ManifestOp.PrepareObjects(1, Duration.ofMinutes(1).toNanos()), t);
            apply(m, new ManifestOp.CommitObjects(new CommitRequest(1, 1, List.of(new CommitRequest.NewObject(id,
                    ObjectType.STREAM, 10, List.of(new StreamRange(s.streamId(), 0, 0, 10)))), List.of())), t);
            apply(m, new ManifestOp.DeleteStream(s.streamId(), 0), t);
            apply(m, new ManifestOp.ObjectsDeleted(List.of(id)), t); // the compactor deleted its object
        }
        // Only the two id counters grew: a few bytes of varint, not one stream record per deletion.
        assertThat(encode(m).length).isBetween(sizeBefore, sizeBefore + 8);
        assertThat(m.listStreams()).hasSize(2);
    }

    @Test
    void entryRoundTrips() {
        List<ManifestOp> ops = List.of(new ManifestOp.RegisterNode(3), new ManifestOp.RegisterNodeIf(3, 17),
                new ManifestOp.CreateStream(1, 2, 3, Map.of("x", "y")),
                new ManifestOp.OpenStream(1, 2, 3, 4), new ManifestOp.CloseStream(1, 2, 3, 4),
                new ManifestOp.TrimStream(1, 2, 3), new ManifestOp.DeleteStream(1, 2),
                new ManifestOp.PrepareObjects(3, 1_000), new ManifestOp.ObjectsDeleted(List.of(1L, 2L)),
                new ManifestOp.DeleteKv("d"),
                new ManifestOp.CommitObjects(new CommitRequest(1, 2, List.of(new CommitRequest.NewObject(9,
                        ObjectType.STREAM, 5, List.of(new StreamRange(1, 0, 0, 5)))), List.of(4L))),
                new ManifestOp.CommitObjects(new CommitRequest(1, 2, List.of(
                        CommitRequest.NewObject.adopted("wal/1/x", 5, List.of(new StreamRange(1, 0, 5, 6))),
                        CommitRequest.NewObject.adopted("wal/1/y", 5, List.of())), List.of(), 1234)));
        ManifestFormat.Entry e = new ManifestFormat.Entry(42, 5, 6, Instant.ofEpochSecond(100, 7), ops);
        ManifestFormat.Entry d = ManifestFormat.decodeEntry(ManifestFormat.encodeEntry(e), "k", 42);
        assertThat(d).isEqualTo(e);
        ManifestFormat.Entry kv = new ManifestFormat.Entry(1, 5, 6, Instant.EPOCH,
                List.of(new ManifestOp.CompareAndSetKv("c", null, new byte[] {1})));
        ManifestOp.CompareAndSetKv cas = (ManifestOp.CompareAndSetKv)
                ManifestFormat.decodeEntry(ManifestFormat.encodeEntry(kv), "k", 1).ops().getFirst();
        assertThat(cas.expected()).isNull();
        assertThat(cas.value()).containsExactly(1);
        // Key-value changes made by a node carry its id and epoch, around the change itself.
        ManifestFormat.Entry byNode = new ManifestFormat.Entry(2, 5, 6, Instant.EPOCH, List.of(
                new ManifestOp.ByNode(7, 3, new ManifestOp.PutKv("p", new byte[] {4, 5})),
                new ManifestOp.ByNode(7, 3, new ManifestOp.DeleteKv("d")),
                new ManifestOp.ByNode(8, 1, new ManifestOp.CompareAndSetKv("c", new byte[] {1}, null))));
        List<ManifestOp> decoded = ManifestFormat.decodeEntry(ManifestFormat.encodeEntry(byNode), "k", 2).ops();
        assertThat(decoded).hasSize(3).allSatisfy(op -> assertThat(op).isInstanceOf(ManifestOp.ByNode.class));
        ManifestOp.ByNode put = (ManifestOp.ByNode) decoded.get(0);
        assertThat(put.nodeId()).isEqualTo(7);
        assertThat(put.nodeEpoch()).isEqualTo(3);
        assertThat(((ManifestOp.PutKv) put.op()).value()).containsExactly(4, 5);
        assertThat(decoded.get(1)).isEqualTo(byNode.ops().get(1));
        ManifestOp.CompareAndSetKv swap = (ManifestOp.CompareAndSetKv) ((ManifestOp.ByNode) decoded.get(2)).op();
        assertThat(swap.expected()).containsExactly(1);
        assertThat(swap.value()).isNull();
    }

    /** A version-1 entry (written before adopted objects and WAL positions existed) still decodes. */
    @Test
    void versionOneCommitEntriesDecode() {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(256);
        b.putInt(ManifestFormat.MAGIC).putShort((short) 1).putShort(ManifestFormat.KIND_ENTRY).putInt(0).putInt(0)
                .putLong(9).putLong(5).putLong(6).putLong(100).putInt(0)
                .putInt(1).put((byte) 8).putLong(1).putLong(2).putInt(1)            // T_COMMIT_OBJECTS v1, one object
                .putLong(3).put((byte) ObjectType.STREAM.ordinal()).putLong(50)
                .putInt(1).putLong(7).putLong(0).putLong(0).putLong(10)             // one range
                .putInt(0);                                                          // no compacted inputs
        byte[] bytes = java.util.Arrays.copyOf(b.array(), b.position());
        java.nio.ByteBuffer view = java.nio.ByteBuffer.wrap(bytes);
        view.putInt(ManifestFormat.LENGTH_OFFSET, bytes.length - ManifestFormat.HEADER_BYTES);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(bytes, ManifestFormat.HEADER_BYTES, bytes.length - ManifestFormat.HEADER_BYTES);
        view.putInt(ManifestFormat.CRC_OFFSET, (int) crc.getValue());

        ManifestOp.CommitObjects op = (ManifestOp.CommitObjects) ManifestFormat.decodeEntry(bytes, "k", 9).ops().getFirst();
        assertThat(op.request()).isEqualTo(new CommitRequest(1, 2, List.of(new CommitRequest.NewObject(3,
                ObjectType.STREAM, 50, List.of(new StreamRange(7, 0, 0, 10)))), List.of()));
    }

    @Test
    void unusedOptionsAreHarmless() {
        assertThat(StreamOptions.defaults().tags()).isEmpty();
    }
}
