package io.s3stream.internal.format;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * Test fixture: a plain model of the streams an object should hold, and helpers that build it with pooled direct
 * buffers and compare decoded batches with it.
 */
public final class TestObjects {

    /** One batch as the test wrote it. */
    public record BatchSpec(int count, byte[] payload) {
    }

    /** One stream's batches, contiguous from {@code startOffset}. */
    public record StreamSpec(long streamId, long startOffset, List<BatchSpec> batches) {
        public long endOffset() {
            long end = startOffset;
            for (BatchSpec b : batches) {
                end += b.count();
            }
            return end;
        }
    }

    /** What an object should hold, and the block size target to build it with. */
    public record Model(List<StreamSpec> streams, int targetBlockSizeBytes) {
    }

    /** A decoded batch copied out of its buffer, comparable with {@code equals}. */
    public record Batch(long baseOffset, int count, String payloadHex) {
        public static Batch of(long baseOffset, int count, byte[] payload) {
            return new Batch(baseOffset, count, HexFormat.of().formatHex(payload));
        }

        public static Batch of(DecodedBatch d) {
            return of(d.baseOffset(), d.count(), ByteBufUtil.getBytes(d.payload()));
        }
    }

    private TestObjects() {
    }

    /**
     * A pooled direct buffer holding {@code payload} between its reader and writer index, with {@code junk} bytes of
     * other data before and after, so code that ignores the indexes shows.
     */
    public static ByteBuf payloadBuffer(byte[] payload, int junk) {
        ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(payload.length + 2 * junk);
        for (int i = 0; i < junk; i++) {
            buf.writeByte(0x5A);
        }
        buf.writeBytes(payload);
        for (int i = 0; i < junk; i++) {
            buf.writeByte(0xA5);
        }
        buf.readerIndex(junk);
        buf.writerIndex(junk + payload.length);
        return buf;
    }

    /** Adds every batch of {@code model} to {@code builder}, releasing the test's own payload buffers after. */
    public static void addAll(ObjectBuilder builder, Model model) {
        int junk = 0;
        for (StreamSpec s : model.streams()) {
            long offset = s.startOffset();
            for (BatchSpec b : s.batches()) {
                ByteBuf payload = payloadBuffer(b.payload(), junk++ % 3);
                try {
                    builder.add(s.streamId(), offset, b.count(), payload);
                } finally {
                    payload.release();
                }
                offset += b.count();
            }
        }
    }

    /** Builds {@code model} into one object; the caller releases it. */
    public static ByteBuf build(Model model) {
        try (ObjectBuilder builder = new ObjectBuilder(PooledByteBufAllocator.DEFAULT, model.targetBlockSizeBytes())) {
            addAll(builder, model);
            return builder.build();
        }
    }

    /** The whole object copied into a plain array. */
    public static byte[] bytes(ByteBuf object) {
        return ByteBufUtil.getBytes(object);
    }

    /** A pooled direct copy of {@code bytes}; the caller releases it. */
    public static ByteBuf direct(byte[] bytes) {
        ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(Math.max(1, bytes.length));
        buf.writeBytes(bytes);
        return buf;
    }

    /** The batches of one stream as written. */
    public static List<Batch> expected(StreamSpec s) {
        List<Batch> out = new ArrayList<>();
        long offset = s.startOffset();
        for (BatchSpec b : s.batches()) {
            out.add(Batch.of(offset, b.count(), b.payload()));
            offset += b.count();
        }
        return out;
    }

    /** Copies decoded batches out of their buffer. */
    public static List<Batch> copy(List<DecodedBatch> decoded) {
        List<Batch> out = new ArrayList<>(decoded.size());
        for (DecodedBatch d : decoded) {
            out.add(Batch.of(d));
        }
        return out;
    }
}
