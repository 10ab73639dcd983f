package io.s3stream.internal.manifest;

import io.s3stream.CorruptDataException;
import io.s3stream.internal.metadata.ManifestState;
import io.s3stream.internal.metadata.ManifestOp;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.ObjectKeys;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamMetadata;
import io.s3stream.spi.StreamRange;
import io.s3stream.spi.StreamState;
import io.s3stream.spi.WalContext;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * Byte layout of the two kinds of manifest objects, log entries and checkpoints, and their encoding in place over a
 * {@link ByteBuffer} (big-endian). Both kinds share one header and one body prefix:
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |                     magic 0x53334D46 "S3MF"                   |  0
 *  +-------------------------------+-------------------------------+
 *  |        version (1 or 2)       |   kind (1 entry, 2 checkpoint)|  4
 *  +-------------------------------+-------------------------------+
 *  |                body length in bytes (after offset 16)         |  8
 *  +---------------------------------------------------------------+
 *  |            CRC32C of the body [16, 16 + body length)          | 12
 *  +---------------------------------------------------------------+
 *  |                     sequence number (long)                    | 16
 *  +---------------------------------------------------------------+
 *  |      writer id (long, random per store instance; 0 = none)    | 24
 *  +---------------------------------------------------------------+
 *  |                 writer's commit counter (long)                | 32
 *  +---------------------------------------------------------------+
 *  |         time: epoch seconds (long) and nanoseconds (int)      | 40
 *  +---------------------------------------------------------------+
 *  |   kind-specific payload ...                                   | 52
 * </pre>
 *
 * <b>Entry payload</b>: operation count (int), then each operation as a type byte ({@code T_*} below) followed by its
 * fields in record order. <b>Checkpoint payload</b>: next stream id, next object id (longs); node count, then
 * (node id, node epoch, <i>v2:</i> WAL committed position); stream count, then (id, epoch, start, end, state byte,
 * owner, tag count, tags); object count, then (id, state byte, expired byte, deadline seconds and nanos, type byte,
 * size, node id, committed-at ms, range count, ranges as (stream id, epoch, start, end), <i>v2:</i> key as a byte
 * array, null for the id's data key); key count, then (key, value).
 * Strings are an int length and UTF-8 bytes; byte arrays an int length ({@code -1} for null) and the bytes.
 *
 * <p>Versions: this build writes version 2 and reads 1 and 2. Version 2 added adopted objects (their own keys) and the
 * nodes' WAL committed positions: the checkpoint fields marked above and the entry operation
 * {@code T_COMMIT_OBJECTS_V2} (node id, node epoch, WAL position, objects as (id, type, size, key, ranges), compacted
 * ids); version 1's {@code T_COMMIT_OBJECTS} is still read.
 *
 * <p>The sequence number in the body must equal the one in the object's key, so an object copied or renamed to the
 * wrong key is caught. Anything that does not decode exactly (magic, version, kind, length, CRC, unknown tags,
 * trailing bytes) fails with {@link CorruptDataException} naming the key: history is never skipped.
 */
final class ManifestFormat {

    static final int MAGIC = 0x53334D46;
    static final short VERSION = 2;
    static final short OLDEST_READABLE_VERSION = 1;
    static final short KIND_ENTRY = 1;
    static final short KIND_CHECKPOINT = 2;

    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 4;
    static final int KIND_OFFSET = 6;
    static final int LENGTH_OFFSET = 8;
    static final int CRC_OFFSET = 12;
    static final int HEADER_BYTES = 16;
    static final int SEQ_OFFSET = 16;
    static final int WRITER_OFFSET = 24;
    static final int COUNTER_OFFSET = 32;
    static final int TIME_SECONDS_OFFSET = 40;
    static final int TIME_NANOS_OFFSET = 48;
    static final int PAYLOAD_OFFSET = 52;

    private static final byte T_REGISTER_NODE = 1;
    private static final byte T_CREATE_STREAM = 2;
    private static final byte T_OPEN_STREAM = 3;
    private static final byte T_CLOSE_STREAM = 4;
    private static final byte T_TRIM_STREAM = 5;
    private static final byte T_DELETE_STREAM = 6;
    private static final byte T_PREPARE_OBJECTS = 7;
    private static final byte T_COMMIT_OBJECTS = 8;
    private static final byte T_OBJECTS_DELETED = 9;
    private static final byte T_PUT_KV = 10;
    private static final byte T_DELETE_KV = 11;
    private static final byte T_CAS_KV = 12;
    private static final byte T_COMMIT_OBJECTS_V2 = 13;
    /** A key-value change by a node: node id, node epoch, then the change itself (one of the three KV types). */
    private static final byte T_BY_NODE = 14;
    /** A conditional registration (a takeover): node id, expected node epoch. */
    private static final byte T_REGISTER_NODE_IF = 15;

    private ManifestFormat() {
    }

    /** A decoded log entry: the operations one writer committed at sequence number {@code seq}. */
    record Entry(long seq, long writerId, long counter, Instant time, List<ManifestOp> ops) {
        Entry {
            ops = List.copyOf(ops);
        }
    }

    /** A decoded checkpoint: the state after applying every entry up to {@code seq}, whose time was {@code time}. */
    record Checkpoint(long seq, Instant time, ManifestState.Snapshot snapshot) {
    }

    // ------------------------------------------------------------------------------------------------ encode

    static byte[] encodeEntry(Entry entry) {
        Sink out = new Sink(256);
        out.prefix(KIND_ENTRY, entry.seq(), entry.writerId(), entry.counter(), entry.time());
        out.buf.putInt(entry.ops().size());
        for (ManifestOp op : entry.ops()) {
            writeOp(out, op);
        }
        return out.finish();
    }

    static byte[] encodeCheckpoint(Checkpoint checkpoint) {
        ManifestState.Snapshot s = checkpoint.snapshot();
        Sink out = new Sink(1024 + s.objects().size() * 96 + s.streams().size() * 64);
        out.prefix(KIND_CHECKPOINT, checkpoint.seq(), 0, 0, checkpoint.time());
        out.ensure(20);
        out.buf.putLong(s.nextStreamId()).putLong(s.nextObjectId()).putInt(s.nodeEpochs().size());
        for (Map.Entry<Long, Long> n : s.nodeEpochs().entrySet()) {
            out.ensure(24);
            out.buf.putLong(n.getKey()).putLong(n.getValue())
                    .putLong(s.walPositions().getOrDefault(n.getKey(), WalContext.NO_POSITION));
        }
        out.ensure(4);
        out.buf.putInt(s.streams().size());
        for (StreamMetadata m : s.streams()) {
            out.ensure(49);
            out.buf.putLong(m.streamId()).putLong(m.epoch()).putLong(m.startOffset()).putLong(m.endOffset())
                    .put((byte) m.state().ordinal()).putLong(m.ownerNodeId());
            writeTags(out, m.tags());
        }
        out.ensure(4);
        out.buf.putInt(s.objects().size());
        for (ManifestState.ObjectSnapshot os : s.objects()) {
            ObjectMetadata m = os.metadata();
            out.ensure(59 + m.ranges().size() * 32);
            out.buf.putLong(m.objectId()).put((byte) m.state().ordinal()).put((byte) (os.expired() ? 1 : 0))
                    .putLong(os.deadline().getEpochSecond()).putInt(os.deadline().getNano())
                    .put((byte) m.type().ordinal()).putLong(m.sizeBytes()).putLong(m.nodeId())
                    .putLong(m.committedAtMs());
            writeRanges(out, m.ranges());
            out.bytes(m.key().equals(ObjectKeys.dataKey(m.objectId())) ? null
                    : m.key().getBytes(StandardCharsets.UTF_8));
        }
        out.ensure(4);
        out.buf.putInt(s.kv().size());
        for (Map.Entry<String, byte[]> e : s.kv().entrySet()) {
            out.string(e.getKey());
            out.bytes(e.getValue());
        }
        return out.finish();
    }

    private static void writeOp(Sink out, ManifestOp op) {
        out.ensure(64);
        ByteBuffer b = out.buf;
        switch (op) {
            case ManifestOp.RegisterNode o -> b.put(T_REGISTER_NODE).putLong(o.nodeId());
            case ManifestOp.RegisterNodeIf o -> b.put(T_REGISTER_NODE_IF).putLong(o.nodeId()).putLong(o.expectedEpoch());
            case ManifestOp.CreateStream o -> {
                b.put(T_CREATE_STREAM).putLong(o.nodeId()).putLong(o.nodeEpoch()).putLong(o.startOffset());
                writeTags(out, o.tags());
            }
            case ManifestOp.OpenStream o ->
                    b.put(T_OPEN_STREAM).putLong(o.streamId()).putLong(o.epoch()).putLong(o.nodeId()).putLong(o.nodeEpoch());
            case ManifestOp.CloseStream o ->
                    b.put(T_CLOSE_STREAM).putLong(o.streamId()).putLong(o.epoch()).putLong(o.nodeId()).putLong(o.nodeEpoch());
            case ManifestOp.TrimStream o ->
                    b.put(T_TRIM_STREAM).putLong(o.streamId()).putLong(o.epoch()).putLong(o.newStartOffset());
            case ManifestOp.DeleteStream o -> b.put(T_DELETE_STREAM).putLong(o.streamId()).putLong(o.epoch());
            case ManifestOp.PrepareObjects o -> b.put(T_PREPARE_OBJECTS).putInt(o.count()).putLong(o.timeToLiveNanos());
            case ManifestOp.CommitObjects o -> {
                CommitRequest r = o.request();
                b.put(T_COMMIT_OBJECTS_V2).putLong(r.nodeId()).putLong(r.nodeEpoch()).putLong(r.walPosition())
                        .putInt(r.objects().size());
                for (CommitRequest.NewObject n : r.objects()) {
                    out.ensure(17);
                    out.buf.putLong(n.objectId()).put((byte) n.type().ordinal()).putLong(n.sizeBytes());
                    out.bytes(n.key() == null ? null : n.key().getBytes(StandardCharsets.UTF_8));
                    writeRanges(out, n.ranges());
                }
                writeLongs(out, r.compactedObjectIds());
            }
            case ManifestOp.ObjectsDeleted o -> {
                b.put(T_OBJECTS_DELETED);
                writeLongs(out, o.objectIds());
            }
            case ManifestOp.PutKv o -> {
                b.put(T_PUT_KV);
                out.string(o.key());
                out.bytes(o.value());
            }
            case ManifestOp.DeleteKv o -> {
                b.put(T_DELETE_KV);
                out.string(o.key());
            }
            case ManifestOp.CompareAndSetKv o -> {
                b.put(T_CAS_KV);
                out.string(o.key());
                out.bytes(o.expected());
                out.bytes(o.value());
            }
            case ManifestOp.ByNode o -> {
                b.put(T_BY_NODE).putLong(o.nodeId()).putLong(o.nodeEpoch());
                writeOp(out, o.op());
            }
        }
    }

    private static void writeTags(Sink out, Map<String, String> tags) {
        out.ensure(4);
        out.buf.putInt(tags.size());
        for (Map.Entry<String, String> t : new TreeMap<>(tags).entrySet()) {
            out.string(t.getKey());
            out.string(t.getValue());
        }
    }

    private static void writeRanges(Sink out, List<StreamRange> ranges) {
        out.ensure(4 + ranges.size() * 32);
        out.buf.putInt(ranges.size());
        for (StreamRange r : ranges) {
            out.buf.putLong(r.streamId()).putLong(r.epoch()).putLong(r.startOffset()).putLong(r.endOffset());
        }
    }

    private static void writeLongs(Sink out, List<Long> values) {
        out.ensure(4 + values.size() * 8);
        out.buf.putInt(values.size());
        for (long v : values) {
            out.buf.putLong(v);
        }
    }

    /** A growable big-endian buffer; {@link #finish} fills in the length and CRC and returns the bytes. */
    private static final class Sink {
        ByteBuffer buf;

        Sink(int capacity) {
            buf = ByteBuffer.allocate(Math.max(capacity, PAYLOAD_OFFSET + 64));
        }

        void ensure(int bytes) {
            if (buf.remaining() < bytes) {
                ByteBuffer bigger = ByteBuffer.allocate(Math.max(buf.capacity() * 2, buf.position() + bytes));
                buf.flip();
                bigger.put(buf);
                buf = bigger;
            }
        }

        void prefix(short kind, long seq, long writerId, long counter, Instant time) {
            buf.putInt(MAGIC).putShort(VERSION).putShort(kind).putInt(0).putInt(0)
                    .putLong(seq).putLong(writerId).putLong(counter).putLong(time.getEpochSecond()).putInt(time.getNano());
        }

        void string(String s) {
            bytes(s.getBytes(StandardCharsets.UTF_8));
        }

        void bytes(byte[] b) {
            ensure(4 + (b == null ? 0 : b.length));
            if (b == null) {
                buf.putInt(-1);
            } else {
                buf.putInt(b.length).put(b);
            }
        }

        byte[] finish() {
            int length = buf.position();
            byte[] out = new byte[length];
            buf.flip();
            buf.get(out);
            ByteBuffer view = ByteBuffer.wrap(out);
            view.putInt(LENGTH_OFFSET, length - HEADER_BYTES);
            CRC32C crc = new CRC32C();
            crc.update(out, HEADER_BYTES, length - HEADER_BYTES);
            view.putInt(CRC_OFFSET, (int) crc.getValue());
            return out;
        }
    }

    // ------------------------------------------------------------------------------------------------ decode

    /** The sequence number and time stored in a checkpoint's header, from its first {@link #PAYLOAD_OFFSET} bytes. */
    static Instant timeOf(byte[] prefix, String key) {
        if (prefix.length < PAYLOAD_OFFSET) {
            throw new CorruptDataException("manifest object " + key + " is truncated: " + prefix.length + " bytes");
        }
        ByteBuffer b = ByteBuffer.wrap(prefix);
        checkHeaderFields(b, key, prefix.length, true);
        return Instant.ofEpochSecond(b.getLong(TIME_SECONDS_OFFSET), b.getInt(TIME_NANOS_OFFSET));
    }

    static Entry decodeEntry(byte[] bytes, String key, long expectedSeq) {
        ByteBuffer b = open(bytes, key, KIND_ENTRY, expectedSeq);
        try {
            long seq = b.getLong(SEQ_OFFSET);
            long writer = b.getLong(WRITER_OFFSET);
            long counter = b.getLong(COUNTER_OFFSET);
            Instant time = Instant.ofEpochSecond(b.getLong(TIME_SECONDS_OFFSET), b.getInt(TIME_NANOS_OFFSET));
            b.position(PAYLOAD_OFFSET);
            int count = count(b, 1);
            List<ManifestOp> ops = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                ops.add(readOp(b, key));
            }
            end(b, key);
            return new Entry(seq, writer, counter, time, ops);
        } catch (BufferUnderflowException | IllegalArgumentException | NullPointerException e) {
            throw new CorruptDataException("manifest entry " + key + " does not decode: " + e, e);
        }
    }

    static Checkpoint decodeCheckpoint(byte[] bytes, String key, long expectedSeq) {
        ByteBuffer b = open(bytes, key, KIND_CHECKPOINT, expectedSeq);
        try {
            long seq = b.getLong(SEQ_OFFSET);
            Instant time = Instant.ofEpochSecond(b.getLong(TIME_SECONDS_OFFSET), b.getInt(TIME_NANOS_OFFSET));
            b.position(PAYLOAD_OFFSET);
            boolean v2 = b.getShort(VERSION_OFFSET) >= 2;
            long nextStreamId = b.getLong();
            long nextObjectId = b.getLong();
            TreeMap<Long, Long> nodes = new TreeMap<>();
            TreeMap<Long, Long> walPositions = new TreeMap<>();
            for (int i = count(b, v2 ? 24 : 16); i > 0; i--) {
                long nodeId = b.getLong();
                nodes.put(nodeId, b.getLong());
                long walPosition = v2 ? b.getLong() : WalContext.NO_POSITION;
                if (walPosition != WalContext.NO_POSITION) {
                    walPositions.put(nodeId, walPosition);
                }
            }
            int streamCount = count(b, 45);
            List<StreamMetadata> streams = new ArrayList<>(streamCount);
            for (int i = 0; i < streamCount; i++) {
                streams.add(new StreamMetadata(b.getLong(), b.getLong(), b.getLong(), b.getLong(),
                        enumOf(StreamState.values(), b.get(), "stream state"), b.getLong(), readTags(b)));
            }
            int objectCount = count(b, 51);
            List<ManifestState.ObjectSnapshot> objects = new ArrayList<>(objectCount);
            for (int i = 0; i < objectCount; i++) {
                long id = b.getLong();
                ObjectState state = enumOf(ObjectState.values(), b.get(), "object state");
                boolean expired = b.get() != 0;
                Instant deadline = Instant.ofEpochSecond(b.getLong(), b.getInt());
                ObjectType type = enumOf(ObjectType.values(), b.get(), "object type");
                long size = b.getLong();
                long nodeId = b.getLong();
                long committedAtMs = b.getLong();
                List<StreamRange> ranges = readRanges(b);
                String objectKey = v2 ? readNullableString(b) : null;
                objects.add(new ManifestState.ObjectSnapshot(new ObjectMetadata(id, type, size, ranges, nodeId,
                        committedAtMs, state, objectKey), deadline, expired));
            }
            TreeMap<String, byte[]> kv = new TreeMap<>();
            for (int i = count(b, 8); i > 0; i--) {
                kv.put(readString(b), readBytes(b));
            }
            end(b, key);
            return new Checkpoint(seq, time, new ManifestState.Snapshot(nextStreamId, nextObjectId, nodes,
                    walPositions, streams, objects, kv));
        } catch (BufferUnderflowException | IllegalArgumentException | NullPointerException
                 | java.time.DateTimeException e) {
            throw new CorruptDataException("manifest checkpoint " + key + " does not decode: " + e, e);
        }
    }

    private static ByteBuffer open(byte[] bytes, String key, short kind, long expectedSeq) {
        if (bytes.length < PAYLOAD_OFFSET) {
            throw new CorruptDataException("manifest object " + key + " is truncated: " + bytes.length
                    + " bytes, a header needs " + PAYLOAD_OFFSET);
        }
        ByteBuffer b = ByteBuffer.wrap(bytes);
        checkHeaderFields(b, key, bytes.length, false);
        if (b.getShort(KIND_OFFSET) != kind) {
            throw new CorruptDataException("manifest object " + key + " is of kind " + b.getShort(KIND_OFFSET)
                    + ", expected " + kind);
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, HEADER_BYTES, bytes.length - HEADER_BYTES);
        if ((int) crc.getValue() != b.getInt(CRC_OFFSET)) {
            throw new CorruptDataException("manifest object " + key + " fails its CRC32C check (stored "
                    + Integer.toHexString(b.getInt(CRC_OFFSET)) + ", computed " + Long.toHexString(crc.getValue())
                    + "): it is corrupt");
        }
        if (b.getLong(SEQ_OFFSET) != expectedSeq) {
            throw new CorruptDataException("manifest object " + key + " holds sequence number "
                    + b.getLong(SEQ_OFFSET) + ", its key says " + expectedSeq);
        }
        return b;
    }

    private static void checkHeaderFields(ByteBuffer b, String key, int available, boolean prefixOnly) {
        if (b.getInt(MAGIC_OFFSET) != MAGIC) {
            throw new CorruptDataException("manifest object " + key + " has bad magic 0x"
                    + Integer.toHexString(b.getInt(MAGIC_OFFSET)) + ": it is not a manifest object or is corrupt");
        }
        short version = b.getShort(VERSION_OFFSET);
        if (version < OLDEST_READABLE_VERSION || version > VERSION) {
            throw new CorruptDataException("manifest object " + key + " has unknown format version " + version
                    + " (this build reads versions " + OLDEST_READABLE_VERSION + " to " + VERSION + ")");
        }
        if (!prefixOnly && b.getInt(LENGTH_OFFSET) != available - HEADER_BYTES) {
            throw new CorruptDataException("manifest object " + key + " is truncated or padded: its header says "
                    + b.getInt(LENGTH_OFFSET) + " body bytes, the object holds " + (available - HEADER_BYTES));
        }
    }

    private static ManifestOp readOp(ByteBuffer b, String key) {
        byte type = b.get();
        return switch (type) {
            case T_REGISTER_NODE -> new ManifestOp.RegisterNode(b.getLong());
            case T_REGISTER_NODE_IF -> new ManifestOp.RegisterNodeIf(b.getLong(), b.getLong());
            case T_CREATE_STREAM -> new ManifestOp.CreateStream(b.getLong(), b.getLong(), b.getLong(), readTags(b));
            case T_OPEN_STREAM -> new ManifestOp.OpenStream(b.getLong(), b.getLong(), b.getLong(), b.getLong());
            case T_CLOSE_STREAM -> new ManifestOp.CloseStream(b.getLong(), b.getLong(), b.getLong(), b.getLong());
            case T_TRIM_STREAM -> new ManifestOp.TrimStream(b.getLong(), b.getLong(), b.getLong());
            case T_DELETE_STREAM -> new ManifestOp.DeleteStream(b.getLong(), b.getLong());
            case T_PREPARE_OBJECTS -> new ManifestOp.PrepareObjects(b.getInt(), b.getLong());
            case T_COMMIT_OBJECTS -> {
                long nodeId = b.getLong();
                long nodeEpoch = b.getLong();
                int n = count(b, 21);
                List<CommitRequest.NewObject> objects = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    long id = b.getLong();
                    ObjectType t = enumOf(ObjectType.values(), b.get(), "object type");
                    long size = b.getLong();
                    objects.add(new CommitRequest.NewObject(id, t, size, readRanges(b)));
                }
                yield new ManifestOp.CommitObjects(new CommitRequest(nodeId, nodeEpoch, objects, readLongs(b)));
            }
            case T_COMMIT_OBJECTS_V2 -> {
                long nodeId = b.getLong();
                long nodeEpoch = b.getLong();
                long walPosition = b.getLong();
                int n = count(b, 25);
                List<CommitRequest.NewObject> objects = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    long id = b.getLong();
                    ObjectType t = enumOf(ObjectType.values(), b.get(), "object type");
                    long size = b.getLong();
                    String objectKey = readNullableString(b);
                    objects.add(new CommitRequest.NewObject(id, t, size, readRanges(b), objectKey));
                }
                yield new ManifestOp.CommitObjects(new CommitRequest(nodeId, nodeEpoch, objects, readLongs(b),
                        walPosition));
            }
            case T_OBJECTS_DELETED -> new ManifestOp.ObjectsDeleted(readLongs(b));
            case T_PUT_KV -> new ManifestOp.PutKv(readString(b), readBytes(b));
            case T_DELETE_KV -> new ManifestOp.DeleteKv(readString(b));
            case T_CAS_KV -> new ManifestOp.CompareAndSetKv(readString(b), readBytes(b), readBytes(b));
            case T_BY_NODE -> {
                long nodeId = b.getLong();
                long nodeEpoch = b.getLong();
                ManifestOp change = readOp(b, key);
                try {
                    yield new ManifestOp.ByNode(nodeId, nodeEpoch, change);
                } catch (IllegalArgumentException e) {
                    throw new CorruptDataException("manifest entry " + key + ": " + e.getMessage());
                }
            }
            default -> throw new CorruptDataException("manifest entry " + key + " holds unknown operation type " + type
                    + " at byte " + (b.position() - 1));
        };
    }

    private static Map<String, String> readTags(ByteBuffer b) {
        int n = count(b, 8);
        Map<String, String> tags = new HashMap<>(n * 2);
        for (int i = 0; i < n; i++) {
            tags.put(readString(b), readString(b));
        }
        return tags;
    }

    private static List<StreamRange> readRanges(ByteBuffer b) {
        int n = count(b, 32);
        List<StreamRange> ranges = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            ranges.add(new StreamRange(b.getLong(), b.getLong(), b.getLong(), b.getLong()));
        }
        return ranges;
    }

    private static List<Long> readLongs(ByteBuffer b) {
        int n = count(b, 8);
        List<Long> values = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            values.add(b.getLong());
        }
        return values;
    }

    private static String readString(ByteBuffer b) {
        byte[] bytes = readBytes(b);
        if (bytes == null) {
            throw new IllegalArgumentException("null string at byte " + b.position());
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static String readNullableString(ByteBuffer b) {
        byte[] bytes = readBytes(b);
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }

    private static byte[] readBytes(ByteBuffer b) {
        int n = b.getInt();
        if (n == -1) {
            return null;
        }
        if (n < 0 || n > b.remaining()) {
            throw new IllegalArgumentException("length " + n + " at byte " + (b.position() - 4) + " exceeds the object");
        }
        byte[] out = new byte[n];
        b.get(out);
        return out;
    }

    /** Reads a count and checks that {@code minBytesEach} per element can still follow, so garbage cannot OOM us. */
    private static int count(ByteBuffer b, int minBytesEach) {
        int n = b.getInt();
        if (n < 0 || (long) n * minBytesEach > b.remaining()) {
            throw new IllegalArgumentException("count " + n + " at byte " + (b.position() - 4) + " exceeds the object");
        }
        return n;
    }

    private static <E extends Enum<E>> E enumOf(E[] values, byte ordinal, String what) {
        if (ordinal < 0 || ordinal >= values.length) {
            throw new IllegalArgumentException("unknown " + what + " " + ordinal);
        }
        return values[ordinal];
    }

    private static void end(ByteBuffer b, String key) {
        if (b.hasRemaining()) {
            throw new CorruptDataException("manifest object " + key + " has " + b.remaining()
                    + " unexpected trailing bytes");
        }
    }
}
