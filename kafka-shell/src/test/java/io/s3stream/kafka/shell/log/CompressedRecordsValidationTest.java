package io.s3stream.kafka.shell.log;

import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.utils.BufferSupplier;
import org.apache.kafka.common.utils.ByteBufferOutputStream;
import org.apache.kafka.common.utils.CloseableIterator;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.util.EnumMap;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The validator's reading of compressed batches ({@link ProduceValidator#checkCompressed}: a pass over the records'
 * claimed lengths, then Kafka's reading iterator) against that iterator alone, which allocates each record's claimed
 * length before reading it: seeded batches whose records are valid, or damaged as {@link UncompressedRecordsTest}
 * damages them before they are compressed (gzip or lz4), so the codec's stream is sound and only the records inside
 * it are wrong. Every batch the iterator accepts the validator accepts, and every batch it refuses the validator
 * refuses with the same code, except that a record claiming more than {@code max.message.bytes} is refused as too
 * large before the iterator could call it malformed; where the iterator cannot allocate a claim, the validator must
 * refuse the batch.
 */
class CompressedRecordsValidationTest {
    private static final int CASES = Integer.getInteger("s3stream.simulation.seeds", 40) * 50;

    @Test
    void givesEveryCompressedBatchTheVerdictOfKafkasReadingIterator() {
        Map<Errors, Integer> verdicts = new EnumMap<>(Errors.class);
        int claimsRefused = 0;
        for (int c = 0; c < CASES; c++) {
            SplittableRandom random = new SplittableRandom(7_000_000 + c);
            byte[] plain = UncompressedRecordsTest.mutate(UncompressedRecordsTest.validBatch(random), random,
                    c % UncompressedRecordsTest.MUTATIONS);
            MemoryRecords records = compressed(plain, random.nextBoolean() ? Compression.gzip().build()
                    : Compression.lz4().build());
            MutableRecordBatch batch = records.batches().iterator().next();
            int count = batch.countOrNull();
            int maxMessageBytes = random.nextInt(4) == 0 ? 64 + random.nextInt(2_000) : 1_048_588;
            boolean requireKeys = random.nextInt(4) == 0;

            Errors expected;
            try {
                expected = readingVerdict(batch, count, maxMessageBytes, requireKeys);
            } catch (OutOfMemoryError e) {
                expected = Errors.INVALID_RECORD; // a claimed length no batch of this size can hold
            }
            ProduceValidator.Result ours = ProduceValidator.checkCompressed(records.buffer(), 0, batch,
                    batch.compressionType(), count, maxMessageBytes, requireKeys);
            Errors got = ours == null ? Errors.NONE : ours.error();
            if (expected != Errors.NONE && got != expected && got == Errors.MESSAGE_TOO_LARGE
                    && ours.message().contains(" claims ")) {
                claimsRefused++; // refused before the reading iterator, for its claim: both refuse it
            } else {
                assertThat(got).as("case %d (mutation %d): %s", c, c % UncompressedRecordsTest.MUTATIONS,
                        ours == null ? "readable" : ours.message()).isEqualTo(expected);
            }
            verdicts.merge(expected, 1, Integer::sum);
        }
        assertThat(verdicts).containsKeys(Errors.NONE, Errors.INVALID_RECORD, Errors.MESSAGE_TOO_LARGE);
        assertThat(claimsRefused).as("batches refused for a claimed length alone").isLessThan(CASES / 20);
        assertThat(verdicts.values()).allMatch(n -> n >= CASES / 100, "each verdict in at least 1 % of the cases");
    }

    /** The verdict the validator gave before, through Kafka's reading iterator (the same checks, the same codes). */
    private static Errors readingVerdict(MutableRecordBatch batch, int count, int maxMessageBytes,
                                         boolean requireKeys) {
        int n = 0;
        try (CloseableIterator<Record> it = batch.streamingIterator(BufferSupplier.NO_CACHING)) {
            while (it.hasNext()) {
                Record r = it.next();
                if (r.offset() != batch.baseOffset() + n || requireKeys && !r.hasKey()) {
                    return Errors.INVALID_RECORD;
                }
                if (r.sizeInBytes() > maxMessageBytes) {
                    return Errors.MESSAGE_TOO_LARGE;
                }
                n++;
            }
        } catch (InvalidRecordException e) {
            return Errors.INVALID_RECORD;
        } catch (CorruptRecordException | BufferUnderflowException | IllegalArgumentException e) {
            return Errors.CORRUPT_MESSAGE;
        } catch (KafkaException e) {
            return Errors.CORRUPT_MESSAGE;
        }
        return n == count ? Errors.NONE : Errors.CORRUPT_MESSAGE;
    }

    /** {@code plain}'s header over its records region compressed with {@code compression}; length and CRC right. */
    private static MemoryRecords compressed(byte[] plain, Compression compression) {
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
        UncompressedRecordsTest.sealed(batch);
        return MemoryRecords.readableRecords(ByteBuffer.allocateDirect(batch.length).put(batch).flip());
    }
}
