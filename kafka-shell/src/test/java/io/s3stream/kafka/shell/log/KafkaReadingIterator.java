package io.s3stream.kafka.shell.log;

import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.utils.BufferSupplier;
import org.apache.kafka.common.utils.CloseableIterator;

import java.nio.BufferUnderflowException;

/**
 * The reference the validator's record readers are held to: every record of a batch read through Kafka's own reading
 * iterator (a consumer's, decompressing as it goes), with the validator's per-record checks and the error codes it gave
 * when it read records this way (up to 57e544e for uncompressed batches, c03f92d for compressed ones).
 */
final class KafkaReadingIterator {
    private KafkaReadingIterator() {
    }

    /** Null when Kafka's iterator reads all {@code count} records of {@code batch} and each is acceptable. */
    static ProduceValidator.Result verdict(MutableRecordBatch batch, int count, int maxMessageBytes,
                                           boolean requireKeys) {
        String codec = batch.compressionType().name;
        int n = 0;
        long expectedOffset = batch.baseOffset();
        try (CloseableIterator<Record> records = batch.streamingIterator(BufferSupplier.NO_CACHING)) {
            while (records.hasNext()) {
                Record r = records.next();
                if (r.offset() != expectedOffset) {
                    return ProduceValidator.Result.error(Errors.INVALID_RECORD, "record " + n + " has offset delta "
                            + (r.offset() - batch.baseOffset()) + ", expected " + n);
                }
                if (requireKeys && !r.hasKey()) {
                    return ProduceValidator.Result.error(Errors.INVALID_RECORD, "record " + n + " has no key");
                }
                if (r.sizeInBytes() > maxMessageBytes) {
                    return ProduceValidator.Result.error(Errors.MESSAGE_TOO_LARGE, "record " + n + " of "
                            + r.sizeInBytes() + " bytes is larger than max.message.bytes " + maxMessageBytes);
                }
                expectedOffset++;
                n++;
            }
        } catch (InvalidRecordException e) {
            return ProduceValidator.Result.error(Errors.INVALID_RECORD, "record " + n + " is malformed: "
                    + e.getMessage());
        } catch (CorruptRecordException | BufferUnderflowException | IllegalArgumentException e) {
            return ProduceValidator.Result.error(Errors.CORRUPT_MESSAGE, "record " + n + " is malformed: " + e);
        } catch (KafkaException e) {
            return ProduceValidator.Result.error(Errors.CORRUPT_MESSAGE, "records do not decompress as " + codec
                    + ": " + (e.getCause() != null ? e.getCause() : e));
        }
        if (n != count) {
            return ProduceValidator.Result.error(Errors.CORRUPT_MESSAGE, "the batch holds " + n + " records but counts "
                    + count);
        }
        return null;
    }
}
