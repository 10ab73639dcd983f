package io.s3stream.kafka.shell.log;

import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.DefaultRecordBatch;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.BufferSupplier;
import org.apache.kafka.common.utils.ByteUtils;
import org.xerial.snappy.SnappyCodec;
import org.xerial.snappy.SnappyError;

import java.io.IOException;
import java.io.InputStream;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;

/**
 * Reads the records of one compressed v2 batch as a consumer will read them, decompressing the batch once and building
 * no record objects: the compressed half of {@link ProduceValidator}, beside {@link UncompressedRecords}.
 *
 * <p>Per record it does what Kafka's reading iterator ({@code DefaultRecord.readFrom(InputStream, ...)}) does, in the
 * same order and with the same error codes: the length prefix ({@code ByteUtils.readVarint}, which reads an ended
 * stream as continuation bytes, so a prefix cut short is "too long"); then all of the claimed bytes from the stream;
 * then the body, parsed by {@link UncompressedRecords#body} within exactly those bytes; after the last record, no byte
 * left in the stream. A prefix too long or negative is INVALID_RECORD (the iterator turns the
 * {@code IllegalArgumentException} into its "premature EOF"), as are fewer bytes than claimed, a body that does not
 * parse and bytes after the last record; a codec stream that fails to decode, truncated ones included, is
 * CORRUPT_MESSAGE (the iterator's "Failed to decompress record stream"). Two differences, on purpose, both refusing
 * what the iterator would have tried to allocate: a length prefix claiming more than {@code max.message.bytes} is
 * refused (MESSAGE_TOO_LARGE) before a byte is read for it (one 40-byte gzip batch claiming 2 GiB stopped the broker
 * before f4b8ed8), and a snappy stream is first checked by {@link #snappyClaim}.
 *
 * <p>Design note: each thread keeps one reader (Netty's event loops run the validator): its decompression buffers
 * ({@link BufferSupplier#create()}, as Kafka's request handler threads keep one) and a record body buffer of up to
 * {@value #KEPT_BODY_BYTES} bytes; a larger record gets a buffer of its own, as every record did through Kafka's
 * iterator. Before, a compressed batch was decompressed twice, once to bound the claims and once through that
 * iterator, with fresh codec buffers and a record object each time: this reader validates a 128-record batch 2.3x
 * (gzip) to 3.9x (lz4) as fast, allocating 0.7-39 KB where that took 200-445 KB (benchmarks/README.md).
 */
final class CompressedRecords {
    static final int KEPT_BODY_BYTES = 64 * 1024;
    private static final ThreadLocal<CompressedRecords> PER_THREAD = ThreadLocal.withInitial(CompressedRecords::new);

    private final BufferSupplier buffers = BufferSupplier.create();
    private final UncompressedRecords fields = new UncompressedRecords();
    private byte[] kept = new byte[1024];
    private ByteBuffer keptView = ByteBuffer.wrap(kept);

    private CompressedRecords() {
    }

    /**
     * Checks the {@code count} records of the batch of {@code batchBytes} bytes at absolute position {@code batchStart}
     * of {@code buf}, compressed with {@code codec}; null when every record is readable and acceptable, else the
     * refusal. {@code buf} is not moved.
     */
    static ProduceValidator.Result check(ByteBuffer buf, int batchStart, int batchBytes, CompressionType codec,
                                         int count, int maxMessageBytes, boolean requireKeys) {
        return PER_THREAD.get().read(buf.duplicate().limit(batchStart + batchBytes)
                .position(batchStart + DefaultRecordBatch.RECORD_BATCH_OVERHEAD), codec, count, maxMessageBytes,
                requireKeys);
    }

    private ProduceValidator.Result read(ByteBuffer compressed, CompressionType codec, int count, int maxMessageBytes,
                                         boolean requireKeys) {
        if (codec == CompressionType.SNAPPY) {
            String claim = snappyClaim(compressed);
            if (claim != null) {
                return ProduceValidator.Result.error(Errors.CORRUPT_MESSAGE, "records do not decompress as snappy: "
                        + claim);
            }
        }
        int n = 0;
        try (InputStream in = Compression.of(codec).build().wrapForInput(compressed, RecordBatch.MAGIC_VALUE_V2,
                buffers)) {
            for (; n < count; n++) {
                ProduceValidator.Result refused = next(in, n, n == count - 1, maxMessageBytes, requireKeys);
                if (refused != null) {
                    return refused;
                }
            }
        } catch (IOException | KafkaException e) {
            // A codec's stream that does not decode (gzip claimed over plain bytes, a truncated frame).
            return ProduceValidator.Result.error(Errors.CORRUPT_MESSAGE, "records do not decompress as " + codec.name
                    + ": " + (e instanceof KafkaException && e.getCause() != null ? e.getCause() : e));
        } catch (IllegalArgumentException | BufferUnderflowException e) {
            return ProduceValidator.Result.error(Errors.CORRUPT_MESSAGE, "record " + n + " is malformed: " + e);
        } catch (SnappyError e) {
            // snappy-java reports some damaged streams with an Error, which would escape every handler but the last.
            return ProduceValidator.Result.error(Errors.CORRUPT_MESSAGE, "records do not decompress as snappy: " + e);
        } finally {
            fields.reset(keptView, 0, 0); // let a large record's own buffer go
        }
        return null;
    }

    /** Reads record {@code n} from {@code in}; null if it is acceptable. */
    private ProduceValidator.Result next(InputStream in, int n, boolean last, int maxMessageBytes, boolean requireKeys)
            throws IOException {
        int bodyBytes;
        try {
            bodyBytes = ByteUtils.readVarint(in); // an ended stream reads as continuation bytes: "too long"
            if (bodyBytes > maxMessageBytes) {
                return ProduceValidator.Result.error(Errors.MESSAGE_TOO_LARGE, "record " + n + " claims " + bodyBytes
                        + " bytes, more than max.message.bytes " + maxMessageBytes);
            }
            if (bodyBytes < 0) {
                throw new IllegalArgumentException("a negative record length " + bodyBytes);
            }
            ByteBuffer body = bodyBuffer(bodyBytes);
            int read = in.readNBytes(body.array(), 0, bodyBytes);
            if (read != bodyBytes) {
                return ProduceValidator.Result.error(Errors.INVALID_RECORD, "record " + n + " is malformed: expected "
                        + bodyBytes + " bytes in record payload, but the batch holds only " + read);
            }
            fields.reset(body, 0, bodyBytes).body(bodyBytes);
        } catch (IllegalArgumentException e) {
            return ProduceValidator.Result.error(Errors.INVALID_RECORD, "record " + n + " is malformed: Incorrect "
                    + "declared batch size, premature EOF reached (" + e.getMessage() + ")");
        } catch (UncompressedRecords.Malformed e) {
            return fields.refusal(n, e);
        }
        if (last && in.read() != -1) {
            return ProduceValidator.Result.error(Errors.INVALID_RECORD, "record " + n + " is malformed: "
                    + "Incorrect declared batch size, records still remaining in file");
        }
        return fields.accept(n, UncompressedRecords.varintSize(bodyBytes) + bodyBytes, maxMessageBytes, requireKeys);
    }

    /**
     * Why snappy-java would allocate more for the snappy stream {@code region} than a valid stream of its size could
     * need, or null. snappy-java's stream ({@code SnappyInputStream}: a 16-byte header, then chunks each of a 4-byte
     * big-endian length and a raw snappy block, or without the header one raw block) allocates each chunk's claimed
     * length before reading it (up to 512 MiB), then each block's claimed uncompressed length before decompressing it
     * (any int): a 73-byte batch claiming 2 GiB stopped the broker (which exits on {@code OutOfMemoryError}) at
     * c03f92d. Refused here, reading only those claims: a chunk longer than the bytes after it, and an uncompressed
     * length over {@value #SNAPPY_MAX_EXPANSION} times its block (snappy's densest element, a 3-byte copy of 64 bytes,
     * expands 21.3 times), which no valid block reaches. {@code region} is not moved.
     */
    static String snappyClaim(ByteBuffer region) {
        int end = region.limit();
        int at = region.position();
        if (!snappyHeaderAt(region, at)) {
            return snappyBlockClaim(region, at, end - at); // snappy-java reads it all as one raw block
        }
        at += SnappyCodec.HEADER_SIZE;
        while (end - at >= Integer.BYTES) {
            int chunk = region.getInt(at);
            if (chunk == SnappyCodec.MAGIC_HEADER_HEAD) {
                if (!snappyHeaderAt(region, at)) {
                    return null; // where snappy-java's stream ends
                }
                at += SnappyCodec.HEADER_SIZE; // a concatenated stream
                continue;
            }
            int follow = end - at - Integer.BYTES;
            if (chunk < 0 || chunk > follow) {
                return "a chunk claims " + chunk + " bytes, " + follow + " follow";
            }
            String block = snappyBlockClaim(region, at + Integer.BYTES, chunk);
            if (block != null) {
                return block;
            }
            at += Integer.BYTES + chunk;
        }
        return null;
    }

    private static final int SNAPPY_MAX_EXPANSION = 22;
    private static final byte[] SNAPPY_MAGIC = SnappyCodec.getMagicHeader();

    private static boolean snappyHeaderAt(ByteBuffer region, int at) {
        if (region.limit() - at < SnappyCodec.HEADER_SIZE) {
            return false;
        }
        for (int i = 0; i < SNAPPY_MAGIC.length; i++) {
            if (region.get(at + i) != SNAPPY_MAGIC[i]) {
                return false;
            }
        }
        return true;
    }

    /**
     * Why the raw snappy block of {@code bytes} at {@code at} claims more than it can hold: its preamble, the
     * uncompressed length as a little-endian base-128 varint of up to 32 bits, over the expansion bound; null if not,
     * or if the preamble does not parse (snappy-java refuses it before allocating).
     */
    private static String snappyBlockClaim(ByteBuffer region, int at, int bytes) {
        long length = 0;
        for (int i = 0; i < 5 && i < bytes; i++) {
            int b = region.get(at + i);
            length |= (long) (b & 0x7f) << (7 * i);
            if (b >= 0) {
                return length > (long) SNAPPY_MAX_EXPANSION * bytes ? "a block of " + bytes
                        + " bytes claims to decompress to " + length : null;
            }
        }
        return null;
    }

    /** A heap buffer of at least {@code bytes}, the thread's own when the record fits in {@value #KEPT_BODY_BYTES}. */
    private ByteBuffer bodyBuffer(int bytes) {
        if (bytes <= kept.length) {
            return keptView;
        }
        if (bytes > KEPT_BODY_BYTES) {
            return ByteBuffer.wrap(new byte[bytes]);
        }
        kept = new byte[Math.min(KEPT_BODY_BYTES, Math.max(bytes, kept.length * 2))];
        keptView = ByteBuffer.wrap(kept);
        return keptView;
    }
}
