package io.s3stream.kafka.shell.log;

import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.RecordBatch;

/**
 * Validates the records of one partition of a Produce request as Kafka does, before they are appended.
 *
 * <p>Design note: this is the per-batch hot path of the produce path, kept apart from the request handling so the
 * JMH suite ({@code BatchValidationBenchmark}) measures exactly what the broker runs. It is public only for the
 * benchmarks; nothing outside kafka-shell should depend on it.
 *
 * <p>Checks, in order, per batch: magic v2 (UNSUPPORTED_FOR_MESSAGE_FORMAT), size against {@code max.message.bytes}
 * (MESSAGE_TOO_LARGE), the batch CRC (CORRUPT_MESSAGE), record count against {@code lastOffsetDelta}
 * (CORRUPT_MESSAGE), no control batches (only the transaction coordinator writes markers) and a producer id on
 * transactional batches (INVALID_RECORD), CreateTime timestamps within
 * {@code message.timestamp.{after,before}.max.ms} (INVALID_TIMESTAMP), a known compression codec (CORRUPT_MESSAGE);
 * then every record, read as a consumer will read it (decompressed once when the batch is compressed): its framing and
 * varint lengths (INVALID_RECORD or CORRUPT_MESSAGE), decompression (CORRUPT_MESSAGE), consecutive offset deltas
 * (INVALID_RECORD), a record no larger than {@code max.message.bytes} (MESSAGE_TOO_LARGE) and as many records as the
 * header counts (CORRUPT_MESSAGE); then that the records form whole batches (CORRUPT_MESSAGE) and that there is
 * exactly one (INVALID_RECORD).
 *
 * <p>Design note: the CRC covers the bytes a client sent, not their meaning: a batch with a right CRC can still hold
 * records that no consumer can read, which would then stop every consumer of the partition at that offset. So the
 * records are read here, once, as Kafka's own log validator does.
 *
 * <p>Design note: an uncompressed batch (what the perf producer and most latency-minded clients send) is read in place
 * by {@link UncompressedRecords}, which walks the varints as Kafka's {@code DefaultRecord.readFrom} does and refuses
 * exactly what it refuses, with the same error codes, but builds no record, key, value or header objects: through
 * Kafka's iterator a 1 KiB record cost a {@code DefaultRecord} and two buffer slices, 58 % of all the bytes the broker
 * allocated under an unthrottled produce (a JFR allocation profile, 2026-12-04). A compressed batch is decompressed
 * once by {@link CompressedRecords}, which reads each record's bytes into a reused buffer and walks them the same way.
 * {@code UncompressedRecordsTest} and {@code CompressedRecordsValidationTest} hold the two readers to the verdicts of
 * Kafka's iterator over seeded random and mutated batches.
 */
public final class ProduceValidator {
    private ProduceValidator() {
    }

    /**
     * The outcome: {@link Errors#NONE} with the number of valid bytes (the whole buffer), or an error and message.
     *
     * @param error      {@link Errors#NONE} when the records may be appended
     * @param message    why not, for the response's error message; {@code null} when valid
     * @param validBytes bytes of the single valid batch
     */
    public record Result(Errors error, String message, int validBytes) {
        static final Result NO_RECORDS = new Result(Errors.CORRUPT_MESSAGE, "no records", 0);

        public boolean valid() {
            return error == Errors.NONE;
        }

        static Result error(Errors error, String message) {
            return new Result(error, message, 0);
        }
    }

    /**
     * Validates {@code records} (one partition's data) against the topic's effective settings.
     *
     * @param maxMessageBytes        the topic's {@code max.message.bytes}
     * @param logAppendTime          whether the topic's {@code message.timestamp.type} is LogAppendTime
     * @param timestampAfterMaxMs    {@code message.timestamp.after.max.ms}
     * @param timestampBeforeMaxMs   {@code message.timestamp.before.max.ms}
     * @param nowMs                  the broker's clock
     */
    public static Result validate(MemoryRecords records, int maxMessageBytes, boolean logAppendTime,
                                  long timestampAfterMaxMs, long timestampBeforeMaxMs, long nowMs) {
        return validate(records, maxMessageBytes, logAppendTime, timestampAfterMaxMs, timestampBeforeMaxMs, nowMs,
                false);
    }

    /**
     * {@link #validate(MemoryRecords, int, boolean, long, long, long)} for a topic that may be compacted:
     * {@code requireKeys} (cleanup.policy includes compact) refuses records without a key, as Kafka does.
     */
    public static Result validate(MemoryRecords records, int maxMessageBytes, boolean logAppendTime,
                                  long timestampAfterMaxMs, long timestampBeforeMaxMs, long nowMs,
                                  boolean requireKeys) {
        if (records == null || records.sizeInBytes() == 0) {
            return Result.NO_RECORDS;
        }
        int batches = 0;
        int validBytes = 0;
        try {
            for (MutableRecordBatch batch : records.batches()) {
                batches++;
                if (batch.magic() != RecordBatch.MAGIC_VALUE_V2) {
                    return Result.error(Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                            "only record batch format v2 (magic 2) is supported");
                }
                if (batch.sizeInBytes() > maxMessageBytes) {
                    return Result.error(Errors.MESSAGE_TOO_LARGE, "batch of " + batch.sizeInBytes()
                            + " bytes is larger than max.message.bytes " + maxMessageBytes);
                }
                batch.ensureValid();
                Integer count = batch.countOrNull();
                if (count == null || count < 1 || count != (int) (batch.lastOffset() - batch.baseOffset()) + 1) {
                    return Result.error(Errors.CORRUPT_MESSAGE, "record count " + count
                            + " does not match lastOffsetDelta " + (int) (batch.lastOffset() - batch.baseOffset()));
                }
                if (batch.isControlBatch()) {
                    return Result.error(Errors.INVALID_RECORD, "clients may not write control batches");
                }
                if (batch.isTransactional() && batch.producerId() < 0) {
                    return Result.error(Errors.INVALID_RECORD, "a transactional batch needs a producer id");
                }
                CompressionType codec;
                try {
                    codec = batch.compressionType();
                } catch (IllegalArgumentException e) {
                    return Result.error(Errors.CORRUPT_MESSAGE, "unknown compression codec: " + e.getMessage());
                }
                int batchStart = records.buffer().position() + validBytes;
                Result unreadable = codec == CompressionType.NONE
                        ? UncompressedRecords.check(records.buffer(), batchStart, batch.sizeInBytes(), count,
                                maxMessageBytes, requireKeys)
                        : CompressedRecords.check(records.buffer(), batchStart, batch.sizeInBytes(), codec, count,
                                maxMessageBytes, requireKeys);
                if (unreadable != null) {
                    return unreadable;
                }
                if (!logAppendTime && batch.timestampType() == TimestampType.CREATE_TIME) {
                    long ts = batch.maxTimestamp();
                    if (ts != RecordBatch.NO_TIMESTAMP
                            && (ts - nowMs > timestampAfterMaxMs || nowMs - ts > timestampBeforeMaxMs)) {
                        return Result.error(Errors.INVALID_TIMESTAMP, "timestamp " + ts + " is out of range");
                    }
                }
                validBytes += batch.sizeInBytes();
            }
        } catch (CorruptRecordException | IllegalArgumentException | IllegalStateException e) {
            return Result.error(Errors.CORRUPT_MESSAGE, e.getMessage());
        }
        if (validBytes != records.sizeInBytes() || batches == 0) {
            return Result.error(Errors.CORRUPT_MESSAGE, "records are truncated: " + validBytes + " of "
                    + records.sizeInBytes() + " bytes form whole batches");
        }
        if (batches != 1) {
            return Result.error(Errors.INVALID_RECORD,
                    "a produce request must carry exactly one batch per partition, got " + batches);
        }
        return new Result(Errors.NONE, null, validBytes);
    }
}
