package io.s3stream.internal.compaction;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.internal.format.DecodedBatch;
import io.s3stream.internal.format.IndexEntry;
import io.s3stream.internal.format.ObjectIndex;
import io.s3stream.internal.format.ObjectReader;
import io.s3stream.internal.store.FileObjectStore;
import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import static org.assertj.core.api.Assertions.assertThat;

/** The object a compaction output writer leaves, and the parts it cuts on the way. */
class ObjectWriterTest {
    private static final int MIN_PART = 64 << 10;
    private static final int PART = 2 * MIN_PART;
    private static final int BLOCK = 48 << 10;

    @TempDir
    Path dir;

    @Test
    void fullPartsAreCutAtExactlyThePartSizeWhateverTheBlocks() {
        ConcurrentMap<Integer, Integer> partLengths = new ConcurrentHashMap<>();
        Random random = new Random(17);
        try (FileObjectStore files = FileObjectStore.open(dir, MIN_PART);
             ObjectStorage store = new ObjectStorage(recordingParts(files, partLengths),
                     ObjectStorage.RetryPolicy.defaults(), ObjectStorage.Settings.defaults().withCostLogInterval(null))) {
            MemoryGauge gauge = new MemoryGauge();
            List<byte[]> payloads = new java.util.ArrayList<>();
            try (ObjectWriter writer = new ObjectWriter(store, PooledByteBufAllocator.DEFAULT, "out", PART, MIN_PART,
                    BLOCK, 2, gauge, new Throttle(1L << 40))) {
                // Two streams, batches of uneven sizes: blocks end anywhere, about 4.5 parts in all.
                long offset = 0;
                for (int i = 0; i < 60; i++) {
                    byte[] payload = new byte[1000 + random.nextInt(9000)];
                    random.nextBytes(payload);
                    payloads.add(payload);
                    writer.addBatch(i < 30 ? 1 : 2, i < 30 ? offset : offset - 30 * 2, 2, ByteBuffer.wrap(payload));
                    offset += 2;
                }
                writer.finish();
            }
            assertThat(gauge.inUse()).as("every buffer given back").isZero();
            int parts = partLengths.size();
            assertThat(parts).isGreaterThan(2);
            for (int n = 1; n < parts; n++) {
                assertThat(partLengths.get(n)).as("part %d", n).isEqualTo(PART);
            }
            List<byte[]> read = new java.util.ArrayList<>(payloads(store, "out", 1, 60));
            read.addAll(payloads(store, "out", 2, 60));
            assertThat(read).containsExactlyElementsOf(payloads);
        }
    }

    @ParameterizedTest(name = "copiesOnThisNode={0}")
    @ValueSource(booleans = {true, false})
    void aCopyOnThisNodeGoesInThrottledPartsOfAtMostThePartSize(boolean copiesOnThisNode) {
        ConcurrentMap<Integer, Integer> partLengths = new ConcurrentHashMap<>();
        ConcurrentMap<Integer, Long> copyLengths = new ConcurrentHashMap<>();
        Random random = new Random(19);
        try (FileObjectStore files = FileObjectStore.open(dir, MIN_PART);
             ObjectStorage store = new ObjectStorage(recordingParts(files, partLengths, copyLengths, copiesOnThisNode),
                     ObjectStorage.RetryPolicy.defaults(), ObjectStorage.Settings.defaults().withCostLogInterval(null))) {
            MemoryGauge gauge = new MemoryGauge();
            List<byte[]> payloads = new java.util.ArrayList<>();
            try (ObjectWriter source = new ObjectWriter(store, PooledByteBufAllocator.DEFAULT, "source", PART, MIN_PART,
                    BLOCK, 2, gauge, new Throttle(1L << 40))) {
                for (int i = 0; i < 120; i++) { // about 700 KB: five and a half part sizes
                    byte[] payload = new byte[1000 + random.nextInt(9000)];
                    random.nextBytes(payload);
                    payloads.add(payload);
                    source.addBatch(1, 2L * i, 2, ByteBuffer.wrap(payload));
                }
                source.finish();
            }
            List<IndexEntry> blocks = index(store, "source").entries();
            long range = blocks.getLast().endPosition() - blocks.getFirst().position();
            partLengths.clear();
            Throttle throttle = new Throttle(1L << 40);
            try (ObjectWriter writer = new ObjectWriter(store, PooledByteBufAllocator.DEFAULT, "out", PART, MIN_PART,
                    BLOCK, 2, gauge, throttle)) {
                assertThat(writer.reachPartBoundary()).isTrue();
                writer.copyBlocks("source", blocks);
                writer.finish();
            }
            if (copiesOnThisNode) {
                assertThat(copyLengths).hasSizeGreaterThan(1);
                assertThat(copyLengths.values()).allSatisfy(length -> assertThat(length).isBetween(
                        (long) MIN_PART, (long) PART));
                assertThat(throttle.taken()).as("read and written here: twice the range").isEqualTo(2 * range);
            } else {
                assertThat(copyLengths.values()).containsExactly(range);
                assertThat(throttle.taken()).as("a server-side copy moves nothing through the node").isZero();
            }
            assertThat(copyLengths.values().stream().mapToLong(Long::longValue).sum()).isEqualTo(range);
            ObjectIndex out = index(store, "out");
            assertThat(out.entries()).hasSameSizeAs(blocks);
            assertThat(payloads(store, "out", 1, 240)).containsExactlyElementsOf(payloads);
            assertThat(gauge.inUse()).isZero();
        }
    }

    /** The payloads of stream {@code streamId}'s batches in object {@code key}, offsets from 0 to {@code end}. */
    private static List<byte[]> payloads(ObjectStorage store, String key, long streamId, long end) {
        ByteBuf object = store.backend().get(key).join();
        try {
            List<byte[]> read = new java.util.ArrayList<>();
            for (DecodedBatch batch : ObjectReader.of(object, key).read(streamId, 0, end)) {
                byte[] bytes = new byte[batch.payload().readableBytes()];
                batch.payload().getBytes(batch.payload().readerIndex(), bytes);
                read.add(bytes);
            }
            return read;
        } finally {
            object.release();
        }
    }

    private static ObjectIndex index(ObjectStorage store, String key) {
        ByteBuf object = store.backend().get(key).join();
        try {
            return ObjectReader.of(object, key).index();
        } finally {
            object.release();
        }
    }

    /** {@code store}, recording the length of each part uploaded, by part number. */
    private static ObjectStore recordingParts(ObjectStore store, ConcurrentMap<Integer, Integer> lengths) {
        return recordingParts(store, lengths, new ConcurrentHashMap<>(), store.copiesOnThisNode());
    }

    /**
     * {@code store}, recording the length of each part uploaded and each part copied, by part number, and saying it
     * copies on this node as told.
     */
    private static ObjectStore recordingParts(ObjectStore store, ConcurrentMap<Integer, Integer> lengths,
                                              ConcurrentMap<Integer, Long> copies, boolean copiesOnThisNode) {
        return new ObjectStore() {
            @Override
            public CompletableFuture<Void> put(String key, ByteBuf data) {
                return store.put(key, data);
            }

            @Override
            public CompletableFuture<Boolean> putIfAbsent(String key, ByteBuf data) {
                return store.putIfAbsent(key, data);
            }

            @Override
            public CompletableFuture<ByteBuf> get(String key, long position, int length) {
                return store.get(key, position, length);
            }

            @Override
            public CompletableFuture<ByteBuf> get(String key) {
                return store.get(key);
            }

            @Override
            public CompletableFuture<Optional<ObjectInfo>> head(String key) {
                return store.head(key);
            }

            @Override
            public CompletableFuture<List<ObjectInfo>> list(String prefix) {
                return store.list(prefix);
            }

            @Override
            public CompletableFuture<Void> delete(Collection<String> keys) {
                return store.delete(keys);
            }

            @Override
            public CompletableFuture<MultipartUpload> startMultipart(String key) {
                return store.startMultipart(key).thenApply(upload -> new MultipartUpload() {
                    @Override
                    public String key() {
                        return upload.key();
                    }

                    @Override
                    public CompletableFuture<Void> uploadPart(int partNumber, ByteBuf data) {
                        lengths.put(partNumber, data.readableBytes());
                        return upload.uploadPart(partNumber, data);
                    }

                    @Override
                    public CompletableFuture<Void> uploadPartCopy(int partNumber, String sourceKey, long position,
                                                                  long length) {
                        copies.put(partNumber, length);
                        return upload.uploadPartCopy(partNumber, sourceKey, position, length);
                    }

                    @Override
                    public CompletableFuture<Void> complete() {
                        return upload.complete();
                    }

                    @Override
                    public CompletableFuture<Void> abort() {
                        return upload.abort();
                    }
                });
            }

            @Override
            public int minPartSizeBytes() {
                return store.minPartSizeBytes();
            }

            @Override
            public boolean copiesOnThisNode() {
                return copiesOnThisNode;
            }

            @Override
            public String description() {
                return "recording " + store.description();
            }

            @Override
            public void close() {
            }
        };
    }
}
