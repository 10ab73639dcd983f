package io.s3stream.internal.format;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.CorruptDataException;
import io.s3stream.internal.format.TestObjects.Batch;
import io.s3stream.internal.format.TestObjects.BatchSpec;
import io.s3stream.internal.format.TestObjects.Model;
import io.s3stream.internal.format.TestObjects.StreamSpec;
import io.s3stream.testing.Seeds;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.LongStream;
import java.util.zip.CRC32C;

import static io.s3stream.internal.format.ObjectFormat.BATCH_HEADER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_CRC_SIZE;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_HEADER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.FOOTER_CRC_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.FOOTER_INDEX_CRC_OFFSET;
import static io.s3stream.internal.format.ObjectFormat.FOOTER_SIZE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * Property tests of object format version 1: random objects round-trip byte for byte, {@code find} selects exactly
 * the right blocks, and every single-byte change, truncation or forged header is rejected, never misread.
 */
class ObjectFormatPropertyTest {

    private static final String KEY = "7f/3a/node-1/sso-42";

    @BeforeAll
    static void watchLeaks() {
        LeakWatch.install();
    }

    @AfterAll
    static void noLeaks() throws InterruptedException {
        LeakWatch.assertNoLeaks();
        System.out.println("forged headers, rejected by: " + new TreeMap<>(REJECTED_BY));
    }

    /** Which check rejected each forged object (printed at the end: shows what the forgeries reach). */
    private static final Map<String, Integer> REJECTED_BY = new ConcurrentHashMap<>();

    // ---------------------------------------------------------------- generators

    static LongStream seeds250() {
        return Seeds.of(250);
    }

    static LongStream seeds400() {
        return Seeds.of(400);
    }

    static LongStream seeds500() {
        return Seeds.of(500);
    }

    /**
     * A random object: 0 to 5 streams with distinct ids; each starts at a small offset or one near the top of the
     * range, and has 1 to 12 batches of 1 to 1,000 records or (half of them) {@code Integer.MAX_VALUE / 2}, with 0 to
     * 300 payload bytes; a target block size of 1-64, 64-1,024 or 1,024-1 Mi bytes.
     */
    static Model model(Random r) {
        int n = r.nextInt(6);
        long[] ids = r.longs().distinct().limit(n).sorted().toArray();
        List<StreamSpec> specs = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            long start = r.nextBoolean() ? r.nextLong(0, 1_000_001)
                    : r.nextLong(0, Long.MAX_VALUE - 20L * Integer.MAX_VALUE + 1);
            int batches = 1 + r.nextInt(12);
            List<BatchSpec> list = new ArrayList<>(batches);
            for (int b = 0; b < batches; b++) {
                int count = r.nextBoolean() ? 1 + r.nextInt(1000) : Integer.MAX_VALUE / 2;
                byte[] payload = new byte[r.nextInt(301)];
                r.nextBytes(payload);
                list.add(new BatchSpec(count, payload));
            }
            specs.add(new StreamSpec(ids[i], start, list));
        }
        int target = switch (r.nextInt(3)) {
            case 0 -> 1 + r.nextInt(64);
            case 1 -> 64 + r.nextInt(961);
            default -> 1024 + r.nextInt((1 << 20) - 1023);
        };
        return new Model(List.copyOf(specs), target);
    }

    // ---------------------------------------------------------------- round trip

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds250")
    void roundTripsByteForByte(long seed) {
        Model model = model(new Random(seed));
        ByteBuf object;
        long promisedSize;
        List<IndexEntry> promisedEntries;
        List<StreamSummary> promisedStreams;
        try (ObjectBuilder builder = new ObjectBuilder(PooledByteBufAllocator.DEFAULT, model.targetBlockSizeBytes())) {
            TestObjects.addAll(builder, model);
            promisedSize = builder.sizeBytes();
            promisedEntries = builder.entries();
            promisedStreams = builder.streams();
            object = builder.build();
            assertThat(builder.entries()).isEqualTo(promisedEntries);
        }
        ByteBuf flat = null;
        try {
            assertThat((long) object.readableBytes()).isEqualTo(promisedSize);
            flat = TestObjects.direct(TestObjects.bytes(object));
            for (ByteBuf view : List.of(object, flat)) {
                ObjectReader reader = ObjectReader.of(view, KEY);
                assertThat(reader.footer().version()).isEqualTo(ObjectFormat.VERSION);
                assertThat(reader.footer().objectSizeBytes()).isEqualTo(promisedSize);
                assertThat(reader.index().entries()).isEqualTo(promisedEntries);
                for (StreamSpec s : model.streams()) {
                    assertThat(TestObjects.copy(reader.read(s.streamId(), s.startOffset(), s.endOffset())))
                            .isEqualTo(TestObjects.expected(s));
                }
                checkBlockSizing(reader, model.targetBlockSizeBytes());
            }
            assertThat(promisedStreams).isEqualTo(expectedSummaries(model, promisedEntries));
        } finally {
            object.release();
            if (flat != null) {
                flat.release();
            }
        }
    }

    /**
     * Walking a verified block's headers ({@link DataBlock#visitChecked}, what a block-cache hit does) yields exactly
     * the batches {@link DataBlock#decode} does that end above the walk's start offset, payloads byte for byte, and
     * stops where its visitor says.
     */
    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds250")
    void aCheckedWalkYieldsWhatDecodeDoes(long seed) {
        Random random = new Random(seed);
        Model model = model(random);
        ByteBuf object;
        try (ObjectBuilder builder = new ObjectBuilder(PooledByteBufAllocator.DEFAULT, model.targetBlockSizeBytes())) {
            TestObjects.addAll(builder, model);
            object = builder.build();
        }
        ByteBuf flat = TestObjects.direct(TestObjects.bytes(object));
        object.release();
        try {
            for (IndexEntry e : ObjectReader.of(flat, KEY).index().entries()) {
                ByteBuf block = flat.slice((int) e.position(), e.sizeBytes());
                DataBlock.verify(block, e, KEY);
                long from = e.startOffset() - 1 + random.nextLong(e.endOffset() - e.startOffset() + 2);
                List<Batch> expected = TestObjects.copy(DataBlock.decode(block, e, KEY)).stream()
                        .filter(b -> b.baseOffset() + b.count() > from).toList();
                List<Batch> walked = new ArrayList<>();
                boolean reachedEnd = DataBlock.visitChecked(block, from, (base, count, at, length) -> walked.add(
                        Batch.of(base, count, ByteBufUtil.getBytes(block, at, length))));
                assertThat(reachedEnd).isTrue();
                assertThat(walked).isEqualTo(expected);
                if (!expected.isEmpty()) {
                    int stopAfter = random.nextInt(expected.size());
                    List<Long> seen = new ArrayList<>();
                    boolean stopped = !DataBlock.visitChecked(block, from, (base, count, at, length) -> {
                        seen.add(base);
                        return seen.size() <= stopAfter;
                    });
                    assertThat(stopped).isTrue();
                    assertThat(seen).hasSize(stopAfter + 1)
                            .isEqualTo(expected.subList(0, stopAfter + 1).stream().map(Batch::baseOffset).toList());
                }
            }
        } finally {
            flat.release();
        }
    }

    /** A block exceeds the target only when it is a single batch, and no block could have taken the next batch. */
    private static void checkBlockSizing(ObjectReader reader, int target) {
        List<IndexEntry> entries = reader.index().entries();
        for (int i = 0; i < entries.size(); i++) {
            IndexEntry e = entries.get(i);
            List<DecodedBatch> batches = reader.readBlock(e);
            if (e.sizeBytes() > target) {
                assertThat(batches).as("oversized block %s", e).hasSize(1);
            }
            if (i + 1 < entries.size() && entries.get(i + 1).streamId() == e.streamId()) {
                IndexEntry next = entries.get(i + 1);
                DecodedBatch first = reader.readBlock(next).getFirst();
                long grown = (long) e.sizeBytes() + BATCH_HEADER_SIZE + first.payload().readableBytes();
                boolean countOverflow = (long) e.recordCount() + first.count() > Integer.MAX_VALUE;
                assertThat(grown > target || countOverflow).as("block %s could have held the next batch", e).isTrue();
            }
        }
    }

    private static List<StreamSummary> expectedSummaries(Model model, List<IndexEntry> entries) {
        List<StreamSummary> out = new ArrayList<>();
        for (StreamSpec s : model.streams()) {
            long bytes = entries.stream().filter(e -> e.streamId() == s.streamId())
                    .mapToLong(IndexEntry::sizeBytes).sum();
            out.add(new StreamSummary(s.streamId(), s.startOffset(), s.endOffset(), bytes));
        }
        return out;
    }

    // ---------------------------------------------------------------- find

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds250")
    void findReturnsExactlyTheOverlappingBlocks(long seed) {
        Random random = new Random(seed);
        Model model = model(random);
        ByteBuf object = TestObjects.build(model);
        try {
            ObjectIndex index = ObjectReader.of(object, KEY).index();
            for (int q = 0; q < 30; q++) {
                long streamId;
                long start;
                long end;
                if (model.streams().isEmpty() || random.nextInt(10) == 0) {
                    streamId = random.nextLong();
                    start = random.nextLong(0, 1000);
                    end = start + random.nextLong(0, 1000);
                } else {
                    StreamSpec s = model.streams().get(random.nextInt(model.streams().size()));
                    streamId = s.streamId();
                    long span = s.endOffset() - s.startOffset();
                    start = s.startOffset() - 3 + randomUpTo(random, span + 6);
                    end = start + randomUpTo(random, span + 3);
                }
                long maxBytes = switch (random.nextInt(4)) {
                    case 0 -> 0;
                    case 1 -> random.nextLong(1, 200);
                    case 2 -> random.nextLong(1, 5000);
                    default -> Long.MAX_VALUE;
                };
                assertThat(index.find(streamId, start, end, maxBytes))
                        .as("find(%d, %d, %d, %d)", streamId, start, end, maxBytes)
                        .isEqualTo(linearFind(index.entries(), streamId, start, end, maxBytes));
            }
        } finally {
            object.release();
        }
    }

    private static long randomUpTo(Random random, long bound) {
        return bound <= 0 ? 0 : random.nextLong(bound + 1);
    }

    private static List<IndexEntry> linearFind(List<IndexEntry> entries, long streamId, long start, long end,
                                               long maxBytes) {
        List<IndexEntry> out = new ArrayList<>();
        if (start >= end) {
            return out;
        }
        long bytes = 0;
        for (IndexEntry e : entries) {
            if (e.streamId() == streamId && e.startOffset() < end && start < e.endOffset()) {
                if (!out.isEmpty() && bytes >= maxBytes) {
                    break;
                }
                out.add(e);
                bytes += e.sizeBytes();
            }
        }
        return out;
    }

    // ---------------------------------------------------------------- corruption

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds400")
    void everySingleByteChangeIsCaughtWhereItLands(long seed) {
        Random random = new Random(seed);
        Model model = model(random);
        int where = random.nextInt(Integer.MAX_VALUE);
        int mask = 1 + random.nextInt(255);
        byte[] original = built(model);
        checkSingleChange(original, where % original.length, (byte) mask);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds400")
    void everySingleBitFlipIsCaughtWhereItLands(long seed) {
        Random random = new Random(seed);
        Model model = model(random);
        int where = random.nextInt(Integer.MAX_VALUE);
        int bit = random.nextInt(8);
        byte[] original = built(model);
        checkSingleChange(original, where % original.length, (byte) (1 << bit));
    }

    @Test
    void everyBitOfASmallObjectIsProtected() {
        Model model = new Model(List.of(
                new StreamSpec(3, 10, List.of(new BatchSpec(2, new byte[] {1, 2, 3}), new BatchSpec(1, new byte[0]))),
                new StreamSpec(9, 0, List.of(new BatchSpec(5, new byte[] {9, 8, 7, 6}),
                        new BatchSpec(1, new byte[] {42})))), 60);
        byte[] original = built(model);
        for (int pos = 0; pos < original.length; pos++) {
            for (int bit = 0; bit < 8; bit++) {
                checkSingleChange(original, pos, (byte) (1 << bit));
            }
        }
    }

    /** Applies {@code bytes[pos] ^= mask} and checks that exactly the part holding {@code pos} is rejected. */
    private static void checkSingleChange(byte[] original, int pos, byte mask) {
        Decoded good = decodeAll(original);
        byte[] bytes = original.clone();
        bytes[pos] ^= mask;
        ByteBuf damaged = TestObjects.direct(bytes);
        try {
            long footerPos = good.footer.footerPosition();
            String what = "byte " + pos + " ^ " + mask;

            Throwable footerError = catchThrowable(() -> ObjectFooter.decode(
                    damaged.slice((int) footerPos, FOOTER_SIZE), bytes.length, KEY));
            if (pos >= footerPos) {
                assertCorrupt(footerError, what);
            } else {
                assertThat(footerError).as(what).isNull();
            }

            // The index and the blocks are checked on their own, as a reader with a cached footer/index would.
            Throwable indexError = catchThrowable(() -> assertThat(ObjectIndex.decode(
                    damaged.slice((int) good.footer.indexPosition(), good.footer.indexLength()), good.footer, KEY)
                    .entries()).isEqualTo(good.entries));
            if (pos >= good.footer.indexPosition() && pos < footerPos) {
                assertCorrupt(indexError, what);
            } else {
                assertThat(indexError).as(what).isNull();
            }
            for (int k = 0; k < good.entries.size(); k++) {
                IndexEntry e = good.entries.get(k);
                List<Batch> expected = good.blocks.get(k);
                Throwable blockError = catchThrowable(() -> assertThat(TestObjects.copy(DataBlock.decode(
                        damaged.slice((int) e.position(), e.sizeBytes()), e, KEY))).isEqualTo(expected));
                // The check a block cache's block passes once, on load, catches the same damage.
                Throwable verifyError = catchThrowable(() -> DataBlock.verify(
                        damaged.slice((int) e.position(), e.sizeBytes()), e, KEY));
                if (pos >= e.position() && pos < e.endPosition()) {
                    assertCorrupt(blockError, what + " in block " + k);
                    assertCorrupt(verifyError, what + " in block " + k + " (verify)");
                } else {
                    assertThat(blockError).as(what).isNull();
                    assertThat(verifyError).as(what + " (verify)").isNull();
                }
            }
            assertCorrupt(catchThrowable(() -> decodeAll(bytes)), what + " (whole object)");
        } finally {
            damaged.release();
        }
    }

    private static void assertCorrupt(Throwable t, String what) {
        assertThat(t).as(what).isInstanceOf(CorruptDataException.class);
        assertThat(t.getMessage()).as(what).contains(KEY).contains("at byte ");
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds250")
    void garbledRangesNeverDecodeToDifferentData(long seed) {
        Random random = new Random(seed);
        Model model = model(random);
        byte[] original = built(model);
        Decoded good = decodeAll(original);
        byte[] bytes = original.clone();
        int from = random.nextInt(bytes.length);
        int length = 1 + random.nextInt(Math.min(64, bytes.length - from));
        byte[] garbage = new byte[length];
        random.nextBytes(garbage);
        System.arraycopy(garbage, 0, bytes, from, length);
        if (Arrays.equals(bytes, original)) {
            return;
        }
        decodeWhatDecodes(bytes, good);
    }

    /**
     * A writer bug or a forger: a header field changed and every CRC recomputed. The decoders must still answer
     * only with CorruptDataException (never an IndexOutOfBoundsException or the like), whatever the value.
     */
    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds500")
    void forgedHeadersFailOnlyWithCorruptData(long seed) {
        Random random = new Random(seed);
        Model model = model(random);
        byte[] original = built(model);
        Decoded good = decodeAll(original);
        List<Integer> structural = structuralPositions(good, original.length);
        byte[] bytes = original.clone();
        int changes = 1 + random.nextInt(3);
        for (int i = 0; i < changes; i++) {
            int pos = structural.get(random.nextInt(structural.size()));
            bytes[pos] = switch (random.nextInt(4)) {
                case 0 -> (byte) 0xFF;
                case 1 -> (byte) 0x80;
                case 2 -> 0;
                default -> (byte) random.nextInt(256);
            };
        }
        reseal(bytes, good);
        Throwable t = catchThrowable(() -> decodeAll(bytes));
        if (t != null) {
            assertThat(t).isInstanceOf(CorruptDataException.class);
            assertThat(t.getMessage()).contains(KEY);
        }
        REJECTED_BY.merge(t == null ? "nothing"
                : t.getMessage().replaceAll("^.*?: ", "").replaceAll("\\(.*", "")
                        .replaceAll("IndexEntry\\[.*?]", "[...]").replaceAll("-?\\b(0x[0-9a-f]+|[0-9]+)\\b", "#"),
                1, Integer::sum);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds250")
    void truncatedOrExtendedObjectsAreRejected(long seed) {
        Random random = new Random(seed);
        Model model = model(random);
        byte[] original = built(model);
        int keep = random.nextInt(original.length);
        assertThatThrownBy(() -> decodeAll(Arrays.copyOf(original, keep)))
                .as("first %d of %d bytes", keep, original.length).isInstanceOf(CorruptDataException.class);
        int drop = 1 + random.nextInt(original.length);
        assertThatThrownBy(() -> decodeAll(Arrays.copyOfRange(original, drop, original.length)))
                .as("without the first %d bytes", drop).isInstanceOf(CorruptDataException.class);
        // The nastiest extension: a second copy of the (valid) footer.
        byte[] extended = Arrays.copyOf(original, original.length + FOOTER_SIZE);
        System.arraycopy(original, original.length - FOOTER_SIZE, extended, original.length, FOOTER_SIZE);
        assertThatThrownBy(() -> decodeAll(extended)).isInstanceOf(CorruptDataException.class);
    }

    // ---------------------------------------------------------------- helpers

    private record Decoded(ObjectFooter footer, List<IndexEntry> entries, List<List<Batch>> blocks) {
    }

    private static byte[] built(Model model) {
        ByteBuf object = TestObjects.build(model);
        try {
            return TestObjects.bytes(object);
        } finally {
            object.release();
        }
    }

    /** Decodes footer, index and every block of {@code bytes}, throwing on the first damage. */
    private static Decoded decodeAll(byte[] bytes) {
        ByteBuf buf = TestObjects.direct(bytes);
        try {
            ObjectReader reader = ObjectReader.of(buf, KEY);
            List<List<Batch>> blocks = new ArrayList<>();
            for (IndexEntry e : reader.index().entries()) {
                blocks.add(TestObjects.copy(reader.readBlock(e)));
            }
            return new Decoded(reader.footer(), reader.index().entries(), blocks);
        } finally {
            buf.release();
        }
    }

    /** Decodes as far as possible; whatever decodes must equal the original, anything else is CorruptData. */
    private static void decodeWhatDecodes(byte[] bytes, Decoded good) {
        ByteBuf buf = TestObjects.direct(bytes);
        try {
            ObjectReader reader;
            try {
                reader = ObjectReader.of(buf, KEY);
            } catch (CorruptDataException expected) {
                return;
            }
            assertThat(reader.footer()).isEqualTo(good.footer);
            assertThat(reader.index().entries()).isEqualTo(good.entries);
            for (int k = 0; k < good.entries.size(); k++) {
                try {
                    assertThat(TestObjects.copy(reader.readBlock(good.entries.get(k)))).isEqualTo(good.blocks.get(k));
                } catch (CorruptDataException expected) {
                    assertThat(expected.getMessage()).contains(KEY);
                }
            }
        } finally {
            buf.release();
        }
    }

    /** Positions of every header, index, CRC and footer byte (everything but payloads). */
    private static List<Integer> structuralPositions(Decoded good, int objectSize) {
        List<Integer> out = new ArrayList<>();
        for (int k = 0; k < good.entries.size(); k++) {
            IndexEntry e = good.entries.get(k);
            int at = (int) e.position();
            addRange(out, at, BLOCK_HEADER_SIZE);
            at += BLOCK_HEADER_SIZE;
            for (Batch b : good.blocks.get(k)) {
                addRange(out, at, BATCH_HEADER_SIZE);
                at += BATCH_HEADER_SIZE + b.payloadHex().length() / 2;
            }
            addRange(out, at, BLOCK_CRC_SIZE);
        }
        addRange(out, (int) good.footer.indexPosition(), objectSize - (int) good.footer.indexPosition());
        return out;
    }

    private static void addRange(List<Integer> out, int from, int length) {
        for (int i = 0; i < length; i++) {
            out.add(from + i);
        }
    }

    /** Recomputes every block CRC, the index CRC and the footer CRC where the original layout has them. */
    private static void reseal(byte[] bytes, Decoded good) {
        for (IndexEntry e : good.entries) {
            int crcAt = (int) e.endPosition() - BLOCK_CRC_SIZE;
            putInt(bytes, crcAt, crc(bytes, (int) e.position(), crcAt - (int) e.position()));
        }
        int footerAt = (int) good.footer.footerPosition();
        putInt(bytes, footerAt + FOOTER_INDEX_CRC_OFFSET,
                crc(bytes, (int) good.footer.indexPosition(), good.footer.indexLength()));
        CRC32C c = new CRC32C();
        c.update(bytes, footerAt, FOOTER_CRC_OFFSET);
        c.update(bytes, footerAt + FOOTER_CRC_OFFSET + 4, FOOTER_SIZE - FOOTER_CRC_OFFSET - 4);
        putInt(bytes, footerAt + FOOTER_CRC_OFFSET, (int) c.getValue());
    }

    private static int crc(byte[] bytes, int from, int length) {
        CRC32C c = new CRC32C();
        c.update(bytes, from, length);
        return (int) c.getValue();
    }

    private static void putInt(byte[] bytes, int at, int value) {
        bytes[at] = (byte) (value >>> 24);
        bytes[at + 1] = (byte) (value >>> 16);
        bytes[at + 2] = (byte) (value >>> 8);
        bytes[at + 3] = (byte) value;
    }
}
