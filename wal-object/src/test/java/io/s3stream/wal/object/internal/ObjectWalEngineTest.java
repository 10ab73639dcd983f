package io.s3stream.wal.object.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.AppendResult;
import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StorageMetrics;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.TakeoverResult;
import io.s3stream.internal.engine.EngineHooks;
import io.s3stream.internal.format.ObjectReader;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.WalRecordFormat;
import io.s3stream.testing.TestStores;
import io.s3stream.wal.object.internal.WalObjectDescriptor.Header;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The engine on an object WAL in a local directory (objects and manifest in the same {@code file://} store): WAL
 * objects are committed to the manifest as they are, so the data is written to the store once.
 */
class ObjectWalEngineTest {
    @TempDir
    Path dir;
    private final long seed = System.nanoTime();
    private final Random random = new Random(seed);
    private final List<StreamStorage> open = new ArrayList<>();

    @AfterEach
    void closeAll() {
        for (StreamStorage s : open) {
            s.close();
        }
    }

    private StreamStorage node(long nodeId) {
        StorageConfig config = StorageConfig.builder()
                .nodeId(nodeId)
                .dataDir(dir.resolve("node-" + nodeId))
                .wal("objectwal://?batchMs=5&batchBytes=256KiB")
                .objectStore(dir.resolve("bucket").toUri().toString())
                .logCacheBytes(16L << 20).blockCacheBytes(4L << 20)
                .uploadThresholdBytes(2L << 20).uploadInterval(Duration.ofSeconds(30))
                .objectBlockSizeBytes(64 * 1024).maxBatchBytes(256 * 1024)
                .compactionEnabled(false)
                .build();
        StreamStorage storage = StreamStorage.open(config);
        open.add(storage);
        return storage;
    }

    private void crash(StreamStorage storage) {
        open.remove(storage);
        EngineHooks.halt(storage);
    }

    /** Appends {@code batches} random batches to each stream, concurrently across streams; returns each stream's data. */
    private List<TreeMap<Long, byte[]>> fill(List<Stream> streams, int batches) throws Exception {
        List<TreeMap<Long, byte[]>> model = new ArrayList<>();
        List<List<CompletableFuture<AppendResult>>> futures = new ArrayList<>();
        List<List<byte[]>> payloads = new ArrayList<>();
        for (Stream s : streams) {
            model.add(new TreeMap<>());
            futures.add(new ArrayList<>());
            payloads.add(new ArrayList<>());
        }
        for (int i = 0; i < batches; i++) {
            for (int s = 0; s < streams.size(); s++) {
                byte[] payload = new byte[1 + random.nextInt(8000)];
                random.nextBytes(payload);
                payloads.get(s).add(payload);
                futures.get(s).add(streams.get(s).append(RecordBatch.of(1 + random.nextInt(3), ByteBuffer.wrap(payload))));
            }
        }
        for (int s = 0; s < streams.size(); s++) {
            for (int i = 0; i < batches; i++) {
                model.get(s).put(futures.get(s).get(i).get(30, TimeUnit.SECONDS).baseOffset(), payloads.get(s).get(i));
            }
        }
        return model;
    }

    private void assertHolds(Stream stream, TreeMap<Long, byte[]> expected) throws Exception {
        long offset = expected.firstKey();
        for (var e : expected.entrySet()) {
            assertThat(offset).isEqualTo(e.getKey());
            try (FetchResult result = stream.fetch(offset, Long.MAX_VALUE, 1).get(30, TimeUnit.SECONDS)) {
                StoredBatch batch = result.batches().getFirst();
                byte[] bytes = new byte[batch.payload().remaining()];
                batch.payload().get(bytes);
                assertThat(bytes).as("stream %d offset %d (seed %d)", stream.streamId(), offset, seed)
                        .isEqualTo(e.getValue());
                offset += batch.count();
            }
        }
    }

    private static List<ObjectMetadata> committed(StreamStorage storage) {
        return EngineHooks.metadata(storage).listObjects(ObjectState.COMMITTED).join();
    }

    @Test
    void walObjectsAreCommittedAsTheyAreAndTheDataIsWrittenOnce() throws Exception {
        StreamStorage one = node(1);
        List<Stream> streams = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            streams.add(one.createStream(StreamOptions.defaults()).get());
        }
        List<TreeMap<Long, byte[]>> model = fill(streams, 200);
        one.close();
        open.remove(one);
        StorageMetrics m = one.metrics();
        System.out.printf("objectwal engine: appended %d bytes in %d batches; wrote %d bytes (%.3f per byte appended),"
                        + " %d objects adopted, %d uploaded, requests %s%n", m.appends().bytes(), m.appends().batches(),
                m.objectStore().bytesOut(), (double) m.objectStore().bytesOut() / m.appends().bytes(),
                m.uploads().adoptedObjects(), m.uploads().objects(), m.objectStore().requests());
        assertThat(m.uploads().objects()).as("no record was uploaded a second time").isZero();
        assertThat(m.uploads().adoptedObjects()).isPositive();
        assertThat(m.objectStore().bytesOut()).as("bytes written per byte appended (seed %d)", seed)
                .isLessThan((long) (m.appends().bytes() * 1.1));

        StreamStorage again = node(1);
        assertThat(committed(again)).isNotEmpty().allSatisfy(o -> assertThat(o.key()).startsWith("wal/1/"));
        for (int i = 0; i < streams.size(); i++) {
            assertHolds(again.openStream(streams.get(i).streamId(), 1).get(10, TimeUnit.SECONDS), model.get(i));
        }
    }

    @Test
    void aCrashedNodeRecoversEveryAcknowledgedAppendByCommittingItsWalObjects() throws Exception {
        StreamStorage one = node(1);
        List<Stream> streams = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            streams.add(one.createStream(StreamOptions.defaults()).get());
        }
        List<TreeMap<Long, byte[]>> model = fill(streams, 150);
        crash(one);

        StreamStorage again = node(1);
        assertThat(again.metrics().uploads().objects()).as("recovery wrote no data object").isZero();
        assertThat(again.metrics().uploads().adoptedObjects()).isPositive();
        for (int i = 0; i < streams.size(); i++) {
            Stream s = again.openStream(streams.get(i).streamId(), 1).get(10, TimeUnit.SECONDS);
            assertHolds(s, model.get(i));
            s.append(RecordBatch.of(1, ByteBuffer.wrap(new byte[]{7}))).get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aSurvivorTakesOverACrashedNodeWithoutMovingData() throws Exception {
        StreamStorage one = node(1);
        List<Stream> streams = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            streams.add(one.createStream(StreamOptions.defaults()).get());
        }
        List<TreeMap<Long, byte[]>> model = fill(streams, 150);
        crash(one);

        StreamStorage two = node(2);
        long bytesOutBefore = two.metrics().objectStore().bytesOut();
        TakeoverResult result = two.takeOverNode(1).get(60, TimeUnit.SECONDS);
        assertThat(result.committedRecords()).isEqualTo(3 * 150);
        assertThat(result.streamsReleased()).isEqualTo(3);
        StorageMetrics after = two.metrics();
        assertThat(after.uploads().objects()).as("the takeover wrote no data object").isZero();
        assertThat(after.uploads().adoptedObjects()).isPositive();
        assertThat(after.objectStore().bytesOut() - bytesOutBefore).as("only a seal and manifest entries move")
                .isLessThan(64 * 1024);
        for (int i = 0; i < streams.size(); i++) {
            assertHolds(two.openStream(streams.get(i).streamId(), 1).get(10, TimeUnit.SECONDS), model.get(i));
        }
    }

    /**
     * A writer that was still running when it was taken over (paused, cut off) can land an object in the seal's orphan
     * zone after the takeover listed the log: nothing adopts or reads it. The node's next opening finds it below the
     * committed position, unknown to the manifest, and deletes it; what the manifest knows stays and reads back.
     */
    @Test
    void anOrphanLandingAfterATakeoverIsDeletedWhenTheLogIsOpenedAgain() throws Exception {
        StreamStorage one = node(1);
        List<Stream> streams = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            streams.add(one.createStream(StreamOptions.defaults()).get());
        }
        List<TreeMap<Long, byte[]>> model = fill(streams, 100);
        crash(one);
        StreamStorage two = node(2);
        two.takeOverNode(1).get(60, TimeUnit.SECONDS);

        ObjectStore bucket = TestStores.open(dir.resolve("bucket").toUri().toString());
        try {
            List<String> keys = walKeys(bucket);
            String sealKey = keys.getLast(); // the takeover wrote nothing after its seal
            Header seal = header(bucket, sealKey);
            Header lastData = header(bucket, keys.get(keys.size() - 2));
            assertThat(seal.isSeal()).isTrue();
            // The fenced writer's create of sequence seal + 3, in flight since before the takeover, lands now: a data
            // object of its node epoch holding an append it never acknowledged.
            long orphanSeq = seal.seq() + 3;
            String orphanKey = WalObjectDescriptor.key(1, orphanSeq);
            Stream first = streams.getFirst();
            ByteBuf record = WalRecordFormat.encode(PooledByteBufAllocator.DEFAULT, first.streamId(),
                    lastData.records().getFirst().epoch(), model.getFirst().lastKey() + 50, 1,
                    ByteBuffer.wrap(new byte[]{1, 2, 3}));
            Header orphanHeader = new Header(WalObjectDescriptor.KIND_DATA, lastData.maxInFlight(), 1,
                    lastData.nodeEpoch(), lastData.token(), orphanSeq, List.of(new WalObjectDescriptor.RecordEntry(
                    first.streamId(), lastData.records().getFirst().epoch(), model.getFirst().lastKey() + 50, 1)));
            WalObjectCodec.Built orphan = WalObjectCodec.build(PooledByteBufAllocator.DEFAULT, 64 * 1024,
                    orphanHeader, List.of(new WalObjectCodec.Appended(record, first.streamId(),
                            lastData.records().getFirst().epoch(), model.getFirst().lastKey() + 50, 1)));
            record.release();
            try {
                assertThat(bucket.putIfAbsent(orphanKey, orphan.bytes()).join()).isTrue();
            } finally {
                orphan.bytes().release();
            }
            Set<String> known = new HashSet<>();
            for (ObjectMetadata o : EngineHooks.metadata(two).listObjects(ObjectState.values()).join()) {
                known.add(o.key());
            }
            assertThat(known).as("the manifest references the WAL's objects before the seal")
                    .containsAll(keys.subList(0, keys.size() - 1));
            two.close();
            open.remove(two);

            StreamStorage again = node(1);
            List<String> after = walKeys(bucket);
            assertThat(after).as("the late orphan is deleted (seed %d)", seed).doesNotContain(orphanKey)
                    .as("the objects the manifest knows stay").containsAll(keys.stream().filter(known::contains)
                            .toList());
            for (int i = 0; i < streams.size(); i++) {
                Stream s = again.openStream(streams.get(i).streamId(), 1).get(10, TimeUnit.SECONDS);
                assertHolds(s, model.get(i));
            }
        } finally {
            bucket.close();
        }
    }

    private static List<String> walKeys(ObjectStore bucket) {
        return bucket.list("wal/1/").join().stream().map(ObjectInfo::key)
                .filter(k -> WalObjectDescriptor.seqOf("wal/1/", k) >= 0).sorted().toList();
    }

    private static Header header(ObjectStore bucket, String key) {
        ByteBuf bytes = bucket.get(key).join();
        try {
            return WalObjectCodec.header(ObjectReader.of(bytes, key), key);
        } finally {
            bytes.release();
        }
    }
}
