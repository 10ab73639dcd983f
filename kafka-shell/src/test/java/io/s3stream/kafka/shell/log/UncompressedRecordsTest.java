package io.s3stream.kafka.shell.log;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.ByteUtils;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link UncompressedRecords} (the validator's in-place reader of uncompressed batches) against the reader it replaced,
 * Kafka's own record iterator as {@link KafkaReadingIterator} runs it, over seeded batches: valid ones of
 * random keys, values and headers (null, empty and large), and the same with their records mutated and the batch CRC
 * recomputed, so that only the records are wrong: bits flipped, varints written over fields (negative, huge, five bytes
 * with the high bits of the fifth set, too long), the batch cut short or padded with bytes no record claims. Both must
 * give every batch the same verdict: acceptable, or refused with the same error code. Batches sit at an offset inside
 * a direct buffer, as a request frame's partition data sits in the broker's.
 */
class UncompressedRecordsTest {
    private static final int CASES = Integer.getInteger("s3stream.simulation.seeds", 40) * 250;
    private static final int CRC_OFFSET = 17;
    private static final int ATTRIBUTES_OFFSET = 21;
    private static final int LENGTH_OFFSET = 8;
    static final int RECORDS_OFFSET = 61;
    static final int MUTATIONS = 7;
    private static final int[] EDGE_INTS = {0, 1, -1, -2, -7, 63, 64, 127, 128, 300, 16_383, 16_384, 1 << 20,
        Integer.MAX_VALUE, Integer.MIN_VALUE, Integer.MAX_VALUE / 2, -(1 << 20)};

    @Test
    void givesEveryBatchTheVerdictOfKafkasIterator() {
        Map<Errors, Integer> verdicts = new EnumMap<>(Errors.class);
        for (int c = 0; c < CASES; c++) {
            SplittableRandom random = new SplittableRandom(c);
            byte[] batch = mutate(validBatch(random), random, c % MUTATIONS);
            int pad = random.nextInt(9);
            ByteBuffer frame = ByteBuffer.allocateDirect(pad + batch.length + random.nextInt(9));
            frame.position(pad);
            frame.put(batch).flip().position(pad);
            MemoryRecords records = MemoryRecords.readableRecords(frame);
            int maxMessageBytes = random.nextInt(4) == 0 ? 64 + random.nextInt(2_000) : 1_048_588;
            boolean requireKeys = random.nextInt(4) == 0;
            MutableRecordBatch parsed = records.batches().iterator().next();
            int count = parsed.countOrNull();

            ProduceValidator.Result kafka;
            try {
                kafka = KafkaReadingIterator.verdict(parsed, count, maxMessageBytes, requireKeys);
            } catch (OutOfMemoryError e) {
                // Kafka's reader allocates a header key's claimed length before it looks for the bytes: a mutated
                // length near 2^31 cannot be allocated, and could not have fit in the batch (its underflow, had the
                // allocation succeeded, is an invalid record).
                kafka = ProduceValidator.Result.error(Errors.INVALID_RECORD, "header key too long: " + e);
            }
            ProduceValidator.Result ours = UncompressedRecords.check(records.buffer(), records.buffer().position(),
                    parsed.sizeInBytes(), count, maxMessageBytes, requireKeys);

            Errors expected = kafka == null ? Errors.NONE : kafka.error();
            assertThat(ours == null ? Errors.NONE : ours.error())
                    .as("case %d (mutation %d): Kafka's iterator says %s, the in-place reader %s", c, c % MUTATIONS,
                            kafka == null ? "readable" : kafka.message(), ours == null ? "readable" : ours.message())
                    .isEqualTo(expected);
            assertThat(frame.position()).as("the request's buffer is not moved").isEqualTo(pad);
            verdicts.merge(expected, 1, Integer::sum);
        }
        // Every kind of verdict was reached often enough for the agreement to mean something.
        assertThat(verdicts).containsKeys(Errors.NONE, Errors.INVALID_RECORD, Errors.CORRUPT_MESSAGE,
                Errors.MESSAGE_TOO_LARGE);
        assertThat(verdicts.values()).allMatch(n -> n >= CASES / 200, "each verdict in at least 0.5 % of the cases");
    }

    @Test
    void validatorAcceptsValidUncompressedBatchesAnywhereInTheFrame() {
        for (int c = 0; c < CASES / 10; c++) {
            SplittableRandom random = new SplittableRandom(1_000_000 + c);
            byte[] batch = validBatch(random);
            int pad = random.nextInt(64);
            ByteBuffer frame = ByteBuffer.allocateDirect(pad + batch.length);
            frame.position(pad);
            frame.put(batch).position(pad);
            // A request's partition data is a slice of its frame (MemoryRecords counts its size from position 0).
            ProduceValidator.Result r = ProduceValidator.validate(
                    MemoryRecords.readableRecords(frame.slice(pad, batch.length)), 1_048_588,
                    false, Long.MAX_VALUE, Long.MAX_VALUE, System.currentTimeMillis());
            assertThat(r.valid()).as("case %d: %s", c, r.message()).isTrue();
            assertThat(r.validBytes()).isEqualTo(batch.length);
        }
    }

    @Test
    void negativeKeyAndValueLengthsMeanNullAsInKafka() {
        // Kafka reads any negative key or value length as null: a record of key length -5 is readable (and keyless).
        byte[] batch = withRawRecords(record(-5, null, -9, null));
        assertThat(check(batch, false)).isNull();
        assertThat(check(batch, true).error()).isEqualTo(Errors.INVALID_RECORD);
        assertThat(check(batch, true).message()).contains("has no key");
    }

    @Test
    void anOverLongLengthPrefixIsCorruptAndAnOverLongBodyVarintInvalid() {
        byte[] longPrefix = withRawRecords(new byte[] {(byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80,
            0x01});
        assertThat(check(longPrefix, false).error()).isEqualTo(Errors.CORRUPT_MESSAGE);
        assertThat(check(longPrefix, false).error())
                .isEqualTo(KafkaReadingIterator.verdict(parse(longPrefix), 1, 1_048_588, false).error());
        // A body whose offset delta is a six-byte varint: inside Kafka's try block, so an invalid record.
        byte[] body = {0, 0, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, 0x01, 1, 1, 0};
        byte[] longBody = withRawRecords(concat(varint(body.length), body));
        assertThat(check(longBody, false).error()).isEqualTo(Errors.INVALID_RECORD);
        assertThat(check(longBody, false).error())
                .isEqualTo(KafkaReadingIterator.verdict(parse(longBody), 1, 1_048_588, false).error());
    }

    @Test
    void aTenByteTimestampDeltaIsReadableAndAnElevenByteOneIsNot() {
        for (int length : new int[] {10, 11}) {
            byte[] timestamp = new byte[length];
            Arrays.fill(timestamp, (byte) 0x80);
            timestamp[length - 1] = 0x01;
            byte[] body = concat(new byte[] {0}, timestamp, varint(0), varint(-1), varint(1), new byte[] {42},
                    varint(0));
            byte[] batch = withRawRecords(concat(varint(body.length), body));
            ProduceValidator.Result kafka = KafkaReadingIterator.verdict(parse(batch), 1, 1_048_588, false);
            ProduceValidator.Result ours = check(batch, false);
            assertThat(ours == null ? Errors.NONE : ours.error()).as("a %d-byte varlong", length)
                    .isEqualTo(kafka == null ? Errors.NONE : kafka.error())
                    .isEqualTo(length == 10 ? Errors.NONE : Errors.INVALID_RECORD);
        }
    }

    @Test
    void bytesAfterTheLastRecordAreRefused() {
        byte[] one = record(1, "k".getBytes(StandardCharsets.UTF_8), 1, "v".getBytes(StandardCharsets.UTF_8));
        byte[] batch = withRawRecords(concat(one, new byte[] {0}));
        ProduceValidator.Result r = check(batch, false);
        assertThat(r.error()).isEqualTo(Errors.INVALID_RECORD);
        assertThat(r.message()).contains("records still remaining");
    }

    // ------------------------------------------------------------------------------------------------ batches

    private static ProduceValidator.Result check(byte[] batch, boolean requireKeys) {
        ByteBuffer direct = ByteBuffer.allocateDirect(batch.length).put(batch).flip();
        MutableRecordBatch parsed = MemoryRecords.readableRecords(direct).batches().iterator().next();
        return UncompressedRecords.check(direct, 0, parsed.sizeInBytes(), parsed.countOrNull(), 1_048_588,
                requireKeys);
    }

    private static MutableRecordBatch parse(byte[] batch) {
        return MemoryRecords.readableRecords(ByteBuffer.allocateDirect(batch.length).put(batch).flip()).batches()
                .iterator().next();
    }

    /** A valid uncompressed v2 batch of 1-40 records with random keys, values and headers, as a producer builds it. */
    static byte[] validBatch(SplittableRandom random) {
        int n = 1 + random.nextInt(40);
        ByteBuffer out = ByteBuffer.allocate(64 * 1024 + n * 6_000);
        long now = 1_700_000_000_000L;
        MemoryRecordsBuilder builder = MemoryRecords.builder(out, RecordBatch.CURRENT_MAGIC_VALUE, Compression.NONE,
                TimestampType.CREATE_TIME, 0L, now, random.nextBoolean() ? 42L : RecordBatch.NO_PRODUCER_ID,
                (short) 0, 0, false, RecordBatch.NO_PARTITION_LEADER_EPOCH);
        for (int i = 0; i < n; i++) {
            Header[] headers = new Header[random.nextInt(4) == 0 ? random.nextInt(4) : 0];
            for (int h = 0; h < headers.length; h++) {
                headers[h] = new RecordHeader("h" + random.nextInt(1_000), bytes(random, 40));
            }
            builder.append(now + random.nextInt(1_000), bytes(random, 300), bytes(random, 2_000), headers);
        }
        ByteBuffer built = builder.build().buffer();
        byte[] batch = new byte[built.remaining()];
        built.get(batch);
        return batch;
    }

    /** Null one time in eight, else random bytes of a random length below {@code max}, sometimes empty. */
    private static byte[] bytes(SplittableRandom random, int max) {
        if (random.nextInt(8) == 0) {
            return null;
        }
        byte[] b = new byte[random.nextInt(6) == 0 ? 0 : random.nextInt(max)];
        random.nextBytes(b);
        return b;
    }

    /**
     * Mutates the records of {@code batch} by {@code kind} (0: unchanged), keeping the batch header consistent (its
     * length field and CRC), so that a reader meets only record-level damage.
     */
    static byte[] mutate(byte[] batch, SplittableRandom random, int kind) {
        int recordsBytes = batch.length - RECORDS_OFFSET;
        byte[] out = batch;
        switch (kind) {
            case 1 -> { // flip bits
                for (int i = 1 + random.nextInt(3); i > 0; i--) {
                    out[RECORDS_OFFSET + random.nextInt(recordsBytes)] ^= (byte) (1 << random.nextInt(8));
                }
            }
            case 2 -> { // a varint written over whatever field is there
                int at = RECORDS_OFFSET + random.nextInt(recordsBytes);
                byte[] v = random.nextInt(5) == 0 ? overLong(random)
                        : varint(random.nextBoolean() ? EDGE_INTS[random.nextInt(EDGE_INTS.length)] : random.nextInt());
                System.arraycopy(v, 0, out, at, Math.min(v.length, out.length - at));
            }
            case 3 -> { // cut short
                int cut = 1 + random.nextInt(Math.min(recordsBytes, 64));
                out = Arrays.copyOf(batch, batch.length - cut);
            }
            case 4 -> { // bytes no record claims
                out = Arrays.copyOf(batch, batch.length + 1 + random.nextInt(16));
                for (int i = batch.length; i < out.length; i++) {
                    out[i] = (byte) random.nextInt();
                }
            }
            case 5 -> { // a byte of the first record's prefix or attributes set to a random value
                out[RECORDS_OFFSET + random.nextInt(Math.min(recordsBytes, 3))] = (byte) random.nextInt();
            }
            case 6 -> { // an over-long or edge varint over the first record's length prefix or its first fields
                int at = RECORDS_OFFSET + (random.nextBoolean() ? 0 : random.nextInt(Math.min(recordsBytes, 5)));
                byte[] v = random.nextBoolean() ? overLong(random)
                        : varint(EDGE_INTS[random.nextInt(EDGE_INTS.length)]);
                System.arraycopy(v, 0, out, at, Math.min(v.length, out.length - at));
            }
            default -> {
            }
        }
        return sealed(out);
    }

    /**
     * A varint at a limit of Kafka's readers: five bytes whose fifth has high bits set (read, the bits dropped), six
     * bytes (too long for an int), ten (the longest varlong) or eleven (too long for a long).
     */
    private static byte[] overLong(SplittableRandom random) {
        return switch (random.nextInt(4)) {
            case 0 -> new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff,
                (byte) (0x10 + random.nextInt(0x70))};
            case 1 -> new byte[] {(byte) 0x81, (byte) 0x82, (byte) 0x83, (byte) 0x84, (byte) 0x85, 0x01};
            default -> {
                byte[] v = new byte[random.nextInt(2) == 0 ? 10 : 11];
                Arrays.fill(v, (byte) 0x80);
                v[v.length - 1] = (byte) random.nextInt(0x80);
                yield v;
            }
        };
    }

    /** Sets the batch's length field and CRC to match its bytes. */
    static byte[] sealed(byte[] batch) {
        ByteBuffer b = ByteBuffer.wrap(batch);
        b.putInt(LENGTH_OFFSET, batch.length - 12);
        CRC32C crc = new CRC32C();
        crc.update(batch, ATTRIBUTES_OFFSET, batch.length - ATTRIBUTES_OFFSET);
        b.putInt(CRC_OFFSET, (int) crc.getValue());
        return batch;
    }

    /** A one-record batch whose records region is exactly {@code records}. */
    private static byte[] withRawRecords(byte[] records) {
        byte[] header = Arrays.copyOf(validBatch(new SplittableRandom(3)), RECORDS_OFFSET);
        ByteBuffer h = ByteBuffer.wrap(header);
        h.putInt(23, 0); // lastOffsetDelta
        h.putInt(RECORDS_OFFSET - 4, 1); // count
        return sealed(concat(header, records));
    }

    /**
     * One record: attributes 0, timestamp delta 0, offset delta 0, the key and value, no headers (a negative length
     * with no bytes after it: null).
     */
    private static byte[] record(int keyLength, byte[] key, int valueLength, byte[] value) {
        byte[] body = concat(new byte[] {0, 0, 0}, varint(keyLength), key == null ? new byte[0] : key,
                varint(valueLength), value == null ? new byte[0] : value, varint(0));
        return concat(varint(body.length), body);
    }

    private static byte[] varint(int value) {
        ByteBuffer b = ByteBuffer.allocate(5);
        ByteUtils.writeVarint(value, b);
        return Arrays.copyOf(b.array(), b.position());
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        ByteBuffer b = ByteBuffer.allocate(n);
        for (byte[] p : parts) {
            b.put(p);
        }
        return b.array();
    }
}
