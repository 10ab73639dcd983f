package io.s3stream.kafka.shell.log;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.ByteBufferOutputStream;
import org.junit.jupiter.api.Test;
import org.xerial.snappy.SnappyError;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link CompressedRecords} (the validator's one-pass reader of compressed batches) against Kafka's reading iterator
 * ({@link KafkaReadingIterator}, which allocates each record's claimed length before reading it), over seeded batches
 * compressed with each codec: valid ones; ones whose records are damaged as {@link UncompressedRecordsTest} damages
 * them before they are compressed, so the codec's stream is sound and only the records inside it are wrong; and ones
 * whose compressed stream itself is damaged (bits flipped, cut short, bytes appended). Every batch the iterator accepts
 * the reader accepts, and every batch it refuses the reader refuses with the same code, except that a claim is refused
 * before the iterator reaches it: a record claiming more than {@code max.message.bytes} as too large, a snappy chunk
 * claiming more than a valid one can as corrupt (the guard reads all chunk headers first, the iterator may refuse a
 * record before them); where the iterator cannot allocate a claim, or snappy-java throws its Error, the reader must
 * refuse the batch. All cases run on one thread, so they share its
 * reader and its buffers, as a broker's requests on one event loop do.
 */
class CompressedRecordsValidationTest {
    private static final int CASES = Integer.getInteger("s3stream.simulation.seeds", 40) * 75;
    private static final List<Compression> CODECS = List.of(Compression.gzip().build(), Compression.lz4().build(),
            Compression.zstd().build(), Compression.snappy().build());
    /** Record-level damage kinds ({@link UncompressedRecordsTest#MUTATIONS}), then three kinds of stream damage. */
    private static final int KINDS = UncompressedRecordsTest.MUTATIONS + 3;

    @Test
    void givesEveryCompressedBatchTheVerdictOfKafkasReadingIterator() {
        Map<Errors, Integer> verdicts = new EnumMap<>(Errors.class);
        Map<Errors, Integer> streamVerdicts = new EnumMap<>(Errors.class);
        int claimsRefused = 0;
        int iteratorFailures = 0;
        for (int c = 0; c < CASES; c++) {
            SplittableRandom random = new SplittableRandom(7_000_000 + c);
            int kind = c % KINDS;
            boolean recordDamage = kind < UncompressedRecordsTest.MUTATIONS;
            byte[] plain = UncompressedRecordsTest.validBatch(random);
            if (recordDamage) {
                plain = UncompressedRecordsTest.mutate(plain, random, kind);
            }
            Compression codec = CODECS.get((c / KINDS) % CODECS.size());
            byte[] batch = compressed(plain, codec);
            if (!recordDamage) {
                batch = damageStream(batch, random, kind - UncompressedRecordsTest.MUTATIONS);
            }
            MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.allocateDirect(batch.length).put(batch)
                    .flip());
            MutableRecordBatch parsed = records.batches().iterator().next();
            int count = parsed.countOrNull();
            int maxMessageBytes = random.nextInt(4) == 0 ? 64 + random.nextInt(2_000) : 1_048_588;
            boolean requireKeys = random.nextInt(4) == 0;

            ProduceValidator.Result kafka = null;
            Throwable iteratorFailed = null;
            try {
                kafka = KafkaReadingIterator.verdict(parsed, count, maxMessageBytes, requireKeys);
            } catch (OutOfMemoryError | SnappyError e) {
                // A claim the iterator could not allocate, or snappy-java's Error for a chunk length it will not:
                // the validator must refuse the batch, whatever the code.
                iteratorFailed = e;
            }
            ProduceValidator.Result ours = CompressedRecords.check(records.buffer(), 0, parsed.sizeInBytes(),
                    parsed.compressionType(), count, maxMessageBytes, requireKeys);
            Errors expected = kafka == null ? Errors.NONE : kafka.error();
            Errors got = ours == null ? Errors.NONE : ours.error();
            if (iteratorFailed != null) {
                assertThat(got).as("case %d (%s, kind %d): the iterator failed with %s", c, codec.type().name, kind,
                        iteratorFailed).isIn(Errors.CORRUPT_MESSAGE, Errors.INVALID_RECORD, Errors.MESSAGE_TOO_LARGE);
                iteratorFailures++;
            } else if (expected != Errors.NONE && got != expected && (got == Errors.MESSAGE_TOO_LARGE
                    && ours.message().contains(" claims ") || got == Errors.CORRUPT_MESSAGE
                    && ours.message().contains("as snappy: a "))) {
                claimsRefused++; // refused for a claim before the reading iterator reached it: both refuse it
            } else {
                assertThat(got).as("case %d (%s, kind %d): Kafka's iterator says %s, the reader %s", c,
                                codec.type().name, kind, kafka == null ? "readable" : kafka.message(),
                                ours == null ? "readable" : ours.message())
                        .isEqualTo(expected);
            }
            assertThat(records.buffer().position()).as("the request's buffer is not moved").isZero();
            if (iteratorFailed == null) {
                verdicts.merge(expected, 1, Integer::sum);
                if (!recordDamage) {
                    streamVerdicts.merge(expected, 1, Integer::sum);
                }
            }
        }
        System.out.printf("%d compressed batches: iterator verdicts %s (damaged streams %s); refused for a claim first"
                + " %d; iterator failed %d%n", CASES, verdicts, streamVerdicts, claimsRefused, iteratorFailures);
        // Every kind of verdict was reached often enough for the agreement to mean something.
        assertThat(verdicts).containsKeys(Errors.NONE, Errors.INVALID_RECORD, Errors.CORRUPT_MESSAGE,
                Errors.MESSAGE_TOO_LARGE);
        assertThat(verdicts.values()).allMatch(n -> n >= CASES / 100, "each verdict in at least 1 % of the cases");
        assertThat(streamVerdicts).as("damaged streams: refused as malformed and as undecodable")
                .containsKeys(Errors.INVALID_RECORD, Errors.CORRUPT_MESSAGE);
        assertThat(claimsRefused).as("batches refused for a claimed length alone").isLessThan(CASES / 20);
        assertThat(iteratorFailures).as("batches the iterator could not read at all").isLessThan(CASES / 20);
    }

    @Test
    void refusesSnappyClaimsNoValidStreamMakesBeforeSnappyAllocatesThem() {
        byte[] valid = compressed(oneRecord(2_000), Compression.snappy().build());
        int firstChunk = UncompressedRecordsTest.RECORDS_OFFSET + 16; // after snappy-java's stream header
        // A chunk length of 500 MiB: snappy-java allocates it before it finds that 2 KiB follow.
        byte[] longChunk = valid.clone();
        ByteBuffer.wrap(longChunk).putInt(firstChunk, 500 << 20);
        // No stream header: snappy-java reads one raw block, and allocates its claimed 2 GiB - 1 uncompressed length.
        byte[] rawClaim = new byte[UncompressedRecordsTest.RECORDS_OFFSET + 12];
        System.arraycopy(valid, 0, rawClaim, 0, UncompressedRecordsTest.RECORDS_OFFSET);
        System.arraycopy(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x07, 0, 'x'}, 0, rawClaim,
                UncompressedRecordsTest.RECORDS_OFFSET, 7);
        // A chunk whose block claims 30 times its length uncompressed.
        byte[] denseClaim = valid.clone();
        int chunkBytes = ByteBuffer.wrap(valid).getInt(firstChunk);
        byte[] preamble = {(byte) 0x80, (byte) 0x80, (byte) 0x80, 0x01}; // 2^21, over 22 x a 2 KiB block
        System.arraycopy(preamble, 0, denseClaim, firstChunk + 4, preamble.length);
        assertThat(chunkBytes).isLessThan((1 << 21) / 22);
        for (byte[] damaged : List.of(longChunk, rawClaim, denseClaim)) {
            byte[] batch = UncompressedRecordsTest.sealed(damaged);
            ByteBuffer buf = ByteBuffer.allocateDirect(batch.length).put(batch).flip();
            ProduceValidator.Result r = CompressedRecords.check(buf, 0, batch.length,
                    org.apache.kafka.common.record.internal.CompressionType.SNAPPY, 1, 1_048_588, false);
            assertThat(r.error()).isEqualTo(Errors.CORRUPT_MESSAGE);
            assertThat(r.message()).contains("snappy").containsAnyOf("claims", "decompress to");
        }
        // The densest valid stream is not refused: a megabyte of zeros.
        byte[] zeros = compressed(zeroRecord(1 << 20), Compression.snappy().build());
        ByteBuffer buf = ByteBuffer.allocateDirect(zeros.length).put(zeros).flip();
        assertThat(CompressedRecords.check(buf, 0, zeros.length,
                org.apache.kafka.common.record.internal.CompressionType.SNAPPY, 1, 2 << 20, false)).isNull();
        assertThat(zeros.length).as("snappy made it dense").isLessThan((1 << 20) / 15);
    }

    @Test
    void readsRecordsLargerThanTheKeptBufferAndTheBatchesAfterThem() {
        int[] valueBytes = {100, CompressedRecords.KEPT_BODY_BYTES + 1_000, 3_000, 40_000, 300_000, 10};
        for (Compression codec : CODECS) {
            for (int value : valueBytes) {
                byte[] batch = compressed(oneRecord(value), codec);
                ByteBuffer buf = ByteBuffer.allocateDirect(batch.length).put(batch).flip();
                MutableRecordBatch parsed = MemoryRecords.readableRecords(buf).batches().iterator().next();
                ProduceValidator.Result r = CompressedRecords.check(buf, 0, batch.length, parsed.compressionType(), 1,
                        1_048_588, true);
                assertThat(r).as("%s, a %d-byte value", codec.type().name, value).isNull();
                assertThat(KafkaReadingIterator.verdict(parsed, 1, 1_048_588, true)).isNull();
                ProduceValidator.Result small = CompressedRecords.check(buf, 0, batch.length, parsed.compressionType(),
                        1, value, false);
                assertThat(small.error()).as("%s, a %d-byte value over a %d-byte limit", codec.type().name, value,
                        value).isEqualTo(Errors.MESSAGE_TOO_LARGE);
            }
        }
    }

    /** An uncompressed batch of one record with a 3-byte key and a value of {@code valueBytes} seeded bytes. */
    private static byte[] oneRecord(int valueBytes) {
        byte[] value = new byte[valueBytes];
        new SplittableRandom(valueBytes).nextBytes(value);
        return withValue(value);
    }

    private static byte[] zeroRecord(int valueBytes) {
        return withValue(new byte[valueBytes]);
    }

    private static byte[] withValue(byte[] value) {
        int valueBytes = value.length;
        ByteBuffer out = ByteBuffer.allocate(valueBytes + 1_024);
        MemoryRecordsBuilder builder = MemoryRecords.builder(out, RecordBatch.CURRENT_MAGIC_VALUE, Compression.NONE,
                TimestampType.CREATE_TIME, 0L, 1_700_000_000_000L, RecordBatch.NO_PRODUCER_ID, (short) 0, 0, false,
                RecordBatch.NO_PARTITION_LEADER_EPOCH);
        builder.append(1_700_000_000_000L, new byte[] {1, 2, 3}, value);
        ByteBuffer built = builder.build().buffer();
        byte[] batch = new byte[built.remaining()];
        built.get(batch);
        return batch;
    }

    /** {@code plain}'s header over its records region compressed with {@code compression}; length and CRC right. */
    private static byte[] compressed(byte[] plain, Compression compression) {
        int recordsOffset = UncompressedRecordsTest.RECORDS_OFFSET;
        ByteBufferOutputStream sink = new ByteBufferOutputStream(plain.length + 64);
        try (OutputStream out = compression.wrapForOutput(sink, (byte) 2)) {
            out.write(plain, recordsOffset, plain.length - recordsOffset);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        ByteBuffer body = sink.buffer().flip();
        byte[] batch = new byte[recordsOffset + body.remaining()];
        System.arraycopy(plain, 0, batch, 0, recordsOffset);
        body.get(batch, recordsOffset, body.remaining());
        ByteBuffer b = ByteBuffer.wrap(batch);
        b.putShort(21, (short) (b.getShort(21) & ~7 | compression.type().id)); // attributes: the codec
        return UncompressedRecordsTest.sealed(batch);
    }

    /**
     * Damages the compressed stream of {@code batch} by {@code kind} (0: bits flipped, 1: cut short, 2: bytes
     * appended), the batch's length and CRC kept right, so that only the codec meets the damage.
     */
    private static byte[] damageStream(byte[] batch, SplittableRandom random, int kind) {
        int from = UncompressedRecordsTest.RECORDS_OFFSET;
        int streamBytes = batch.length - from;
        byte[] out = batch;
        switch (kind) {
            case 0 -> {
                for (int i = 1 + random.nextInt(3); i > 0; i--) {
                    out[from + random.nextInt(streamBytes)] ^= (byte) (1 << random.nextInt(8));
                }
            }
            case 1 -> out = Arrays.copyOf(batch, batch.length - 1 - random.nextInt(Math.max(1, streamBytes - 1)));
            default -> {
                out = Arrays.copyOf(batch, batch.length + 1 + random.nextInt(32));
                for (int i = batch.length; i < out.length; i++) {
                    out[i] = (byte) random.nextInt();
                }
            }
        }
        return UncompressedRecordsTest.sealed(out);
    }
}
