package io.s3stream.cache;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A {@link RangeLoader} whose requests the test completes by hand, over objects whose byte at position {@code p} is
 * a function of the object and {@code p}; it remembers every buffer it made so a test can check all were released.
 * A split load is one call over the whole span; completing it splits the bytes into a buffer per range, as a store
 * reading each range into its own buffer would.
 */
final class RangeLoads implements RangeLoader {
    static final ByteBufAllocator ALLOC = new UnpooledByteBufAllocator(true);

    record Call(long objectId, long position, int length, CompletableFuture<ByteBuf> future) {
    }

    final List<Call> calls = new ArrayList<>();
    final List<ByteBuf> made = new ArrayList<>();

    @Override
    public CompletableFuture<ByteBuf> load(long objectId, long position, int lengthBytes) {
        Call call = new Call(objectId, position, lengthBytes, new CompletableFuture<>());
        calls.add(call);
        return call.future();
    }

    @Override
    public CompletableFuture<List<ByteBuf>> loadSplit(long objectId, long position, int[] lengths) {
        int total = 0;
        for (int length : lengths) {
            total += length;
        }
        return load(objectId, position, total).thenApply(whole -> {
            List<ByteBuf> parts = new ArrayList<>();
            int at = whole.readerIndex();
            for (int length : lengths) {
                ByteBuf part = ALLOC.directBuffer(length).writeBytes(whole, at, length);
                made.add(part);
                parts.add(part);
                at += length;
            }
            whole.release();
            return parts;
        });
    }

    static byte byteAt(long objectId, long position) {
        return (byte) (objectId * 131 + position * 7 + (position >>> 8));
    }

    /** Completes a call with the object's bytes; returns whether it was still pending. */
    boolean complete(Call call) {
        ByteBuf buf = ALLOC.directBuffer(call.length());
        byte[] bytes = new byte[call.length()];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = byteAt(call.objectId(), call.position() + i);
        }
        buf.writeBytes(bytes);
        made.add(buf);
        if (!call.future().complete(buf)) {
            buf.release();
            return false;
        }
        return true;
    }

    void completeAll() {
        for (Call c : List.copyOf(calls)) {
            if (!c.future().isDone()) {
                complete(c);
            }
        }
    }

    /** Checks that {@code buf} holds the bytes of {@code span}. */
    static void verify(BlockSpan span, ByteBuf buf) {
        if (buf.readableBytes() != span.lengthBytes()) {
            throw new AssertionError(span + ": " + buf.readableBytes() + " bytes");
        }
        for (int i = 0; i < span.lengthBytes(); i++) {
            if (buf.getByte(buf.readerIndex() + i) != byteAt(span.key().objectId(), span.key().position() + i)) {
                throw new AssertionError(span + ": wrong byte at " + i);
            }
        }
    }

    /** Every buffer made by this loader has been released (copies made by the cache come from the same allocator). */
    void assertAllReleased() {
        for (ByteBuf b : made) {
            if (b.refCnt() != 0) {
                throw new AssertionError("buffer not released, refCnt " + b.refCnt());
            }
        }
    }

    static BlockSpan span(long objectId, long position, int length) {
        return new BlockSpan(new BlockKey(objectId, position), length);
    }
}
