package io.s3stream.kafka.shell.log;

import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.DefaultRecordBatch;

import java.nio.ByteBuffer;

/**
 * Reads the records of one uncompressed v2 batch in place, as a consumer will read them, without building them: the
 * allocation-free half of {@link ProduceValidator}.
 *
 * <p>It walks the same fields in the same order as Kafka's {@code DefaultRecord.readFrom} (length, attributes,
 * timestamp delta, offset delta, key, value, headers) and refuses what that reader refuses, with the error code the
 * validator gave when it read through Kafka's iterator: a structure that does not parse is INVALID_RECORD (Kafka's
 * {@code InvalidRecordException}), a record length whose varint is longer than five bytes CORRUPT_MESSAGE (the
 * {@code IllegalArgumentException} that escaped the iterator). It is as lenient as Kafka where Kafka is lenient: any
 * negative key or value length means null, a fifth varint byte's high bits are dropped, header keys are not checked
 * to be UTF-8. Then the validator's own checks per record: consecutive offset deltas (INVALID_RECORD), a key on a
 * compacted topic (INVALID_RECORD), the record's size against {@code max.message.bytes} (MESSAGE_TOO_LARGE).
 *
 * <p>Absolute reads only: the request's buffer is not moved, and nothing is allocated per record unless one is refused.
 * {@link CompressedRecords} reuses {@link #body} and {@link #accept} on each record it decompresses.
 */
final class UncompressedRecords {
    /**
     * A refusal found by the readers below; never leaves this package's record readers. Without a stack trace, and
     * immutable, so the two shared instances below serve every thread.
     */
    static final class Malformed extends Exception {
        final boolean corrupt; // CORRUPT_MESSAGE rather than INVALID_RECORD

        Malformed(String message, boolean corrupt) {
            super(message, null, false, false);
            this.corrupt = corrupt;
        }
    }

    /** An over-long varint; in a record's body, like running out of bytes, Kafka's "invalid record structure". */
    private static final Malformed TOO_LONG = new Malformed("Found invalid record structure", false);
    private static final Malformed STRUCTURE = new Malformed("Found invalid record structure", false);

    private ByteBuffer buf;
    private int end;
    private int at;
    /** The offset delta and key length of the record {@link #body} read last. */
    private int offsetDelta;
    private int keyBytes;

    UncompressedRecords() {
    }

    /** Points this reader at the bytes of {@code buf} from absolute position {@code at} up to {@code end}. */
    UncompressedRecords reset(ByteBuffer buf, int at, int end) {
        this.buf = buf;
        this.at = at;
        this.end = end;
        return this;
    }

    /**
     * Checks the {@code count} records of the uncompressed batch of {@code batchBytes} bytes at absolute position
     * {@code batchStart} of {@code buf}; null when every record is readable and acceptable, else the refusal.
     */
    static ProduceValidator.Result check(ByteBuffer buf, int batchStart, int batchBytes, int count,
                                         int maxMessageBytes, boolean requireKeys) {
        UncompressedRecords r = new UncompressedRecords().reset(buf,
                batchStart + DefaultRecordBatch.RECORD_BATCH_OVERHEAD, batchStart + batchBytes);
        int n = 0;
        try {
            for (; n < count; n++) {
                int bodyBytes = r.recordLength();
                if (r.end - r.at < bodyBytes) {
                    throw new Malformed("Invalid record size: expected " + bodyBytes + " bytes in record payload, but"
                            + " instead the buffer has only " + (r.end - r.at) + " remaining bytes.", false);
                }
                r.body(bodyBytes);
                if (n == count - 1 && r.at != r.end) {
                    throw new Malformed("Incorrect declared batch size, records still remaining in file", false);
                }
                ProduceValidator.Result refused = r.accept(n, varintSize(bodyBytes) + bodyBytes, maxMessageBytes,
                        requireKeys);
                if (refused != null) {
                    return refused;
                }
            }
        } catch (Malformed e) {
            return r.refusal(n, e);
        }
        return null;
    }

    /** The refusal of record {@code n} for {@code e}, with the code Kafka's iterator gives. */
    ProduceValidator.Result refusal(int n, Malformed e) {
        return ProduceValidator.Result.error(e.corrupt ? Errors.CORRUPT_MESSAGE : Errors.INVALID_RECORD,
                "record " + n + " is malformed: " + e.getMessage());
    }

    /**
     * Reads one record's body of {@code bodyBytes} bytes from the current position, as Kafka's
     * {@code DefaultRecord.readFrom} reads it: attributes, timestamp delta, offset delta, key, value, headers; throws
     * if it does not parse or does not take exactly {@code bodyBytes} bytes.
     */
    void body(int bodyBytes) throws Malformed {
        int bodyStart = at;
        skip(1); // attributes
        skipVarlong(); // timestamp delta
        offsetDelta = varint();
        keyBytes = varint();
        if (keyBytes >= 0) {
            skip(keyBytes);
        }
        int valueBytes = varint();
        if (valueBytes >= 0) {
            skip(valueBytes);
        }
        int headers = varint();
        if (headers < 0) {
            throw new Malformed("Found invalid number of record headers " + headers, false);
        }
        if (headers > end - at) {
            throw new Malformed("Found invalid number of record headers. " + headers
                    + " is larger than the remaining size of the buffer", false);
        }
        for (int h = 0; h < headers; h++) {
            int headerKeyBytes = varint();
            if (headerKeyBytes < 0) {
                throw new Malformed("Invalid negative header key size " + headerKeyBytes, false);
            }
            skip(headerKeyBytes);
            int headerValueBytes = varint();
            if (headerValueBytes >= 0) {
                skip(headerValueBytes);
            }
        }
        if (at - bodyStart != bodyBytes) {
            throw new Malformed("Invalid record size: expected to read " + bodyBytes + " bytes in record payload, but"
                    + " instead read " + (at - bodyStart), false);
        }
    }

    /**
     * The validator's own checks of record {@code n}, which {@link #body} read and which takes {@code totalBytes} with
     * its length prefix: its offset delta, its key on a compacted topic, its size; null if it is acceptable.
     */
    ProduceValidator.Result accept(int n, int totalBytes, int maxMessageBytes, boolean requireKeys) {
        if (offsetDelta != n) {
            return ProduceValidator.Result.error(Errors.INVALID_RECORD, "record " + n + " has offset delta "
                    + offsetDelta + ", expected " + n);
        }
        if (requireKeys && keyBytes < 0) {
            return ProduceValidator.Result.error(Errors.INVALID_RECORD, "record " + n + " has no key: a compacted "
                    + "topic (cleanup.policy=compact) cannot accept records without a key");
        }
        if (totalBytes > maxMessageBytes) {
            return ProduceValidator.Result.error(Errors.MESSAGE_TOO_LARGE, "record " + n + " of " + totalBytes
                    + " bytes is larger than max.message.bytes " + maxMessageBytes);
        }
        return null;
    }

    /**
     * The record's length prefix. Kafka reads it outside the try block that turns the body's failures into
     * {@code InvalidRecordException}: running out of bytes there is still INVALID_RECORD (its iterator's "premature
     * EOF"), but an over-long varint escapes as the {@code IllegalArgumentException} the validator answers with
     * CORRUPT_MESSAGE.
     */
    private int recordLength() throws Malformed {
        try {
            return varint();
        } catch (Malformed e) {
            throw e == TOO_LONG ? new Malformed("Varint is too long", true)
                    : new Malformed("Incorrect declared batch size, premature EOF reached", false);
        }
    }

    private void skip(int bytes) throws Malformed {
        if (bytes > end - at) {
            throw structure();
        }
        at += bytes;
    }

    private byte read() throws Malformed {
        if (at >= end) {
            throw structure();
        }
        return buf.get(at++);
    }

    /** A zig-zag varint of at most five bytes, decoded as {@code ByteUtils.readVarint} decodes it. */
    private int varint() throws Malformed {
        int value = 0;
        for (int shift = 0; shift < 28; shift += 7) {
            byte b = read();
            if (b >= 0) {
                value |= b << shift;
                return (value >>> 1) ^ -(value & 1);
            }
            value |= (b & 0x7f) << shift;
        }
        byte b = read();
        if (b < 0) {
            throw TOO_LONG;
        }
        value |= b << 28; // high bits of a fifth byte are dropped, as Kafka drops them
        return (value >>> 1) ^ -(value & 1);
    }

    /** Skips a varlong of at most ten bytes, as {@code ByteUtils.readVarlong} reads one. */
    private void skipVarlong() throws Malformed {
        for (int i = 0; i < 10; i++) {
            if (read() >= 0) {
                return;
            }
        }
        throw structure(); // Kafka's "Varlong is too long", inside the record's try block
    }

    static int varintSize(int value) {
        int v = (value << 1) ^ (value >> 31);
        int bytes = 1;
        while ((v & 0xffffff80) != 0) {
            bytes++;
            v >>>= 7;
        }
        return bytes;
    }

    private static Malformed structure() {
        return STRUCTURE;
    }
}
