package io.s3stream.kafka.shell.network;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Cuts Kafka's size-prefixed frames, reserving each frame's bytes in the {@link RequestMemoryPool} before buffering
 * its body. Without a reservation the connection stops reading (auto-read off) and tries again when memory is given
 * back; the frame, once cut, carries its reservation to {@link KafkaConnectionHandler}, which gives it back when the
 * request is answered. A size above {@code socket.request.max.bytes} closes the connection.
 *
 * <p>Buffering: a frame larger than one socket read arrives over several, and Netty's default cumulator grows the
 * buffer it gathers them in as they come, doubling it and copying what it holds at each step, or, while an earlier
 * frame's slice still holds the buffer (a request in flight), copying it whole into a new one at every read that
 * does not fit. A produce request of a megabyte was copied two to three times over (measured: the cumulator was 6.8 %
 * of the shell's CPU under 16-partition produce, benchmarks/README.md "Frames gathered once"). Here the buffer is
 * replaced at most once per frame, by one that holds the whole frame and one more read, once the frame's bytes are
 * reserved: each byte is copied once, and no buffer is sized before the budget allows it.
 */
final class BudgetedFrameDecoder extends ByteToMessageDecoder {
    private static final System.Logger LOG = System.getLogger(BudgetedFrameDecoder.class.getName());
    private static final RateLimitedLog FULL = new RateLimitedLog(LOG, System.Logger.Level.WARNING,
            TimeUnit.MINUTES.toNanos(1));

    /**
     * Room past a frame in the buffer that gathers it: the read that completes the frame usually carries the start
     * of the next one too, and must fit without the frame being copied again. Netty's adaptive reads are at most
     * 64 KiB.
     */
    private static final int READ_SLACK = 64 << 10;

    private final int maxFrameBytes;
    private final RequestMemoryPool pool;
    private int pendingLength = -1;
    private boolean reserved;
    private boolean waiting;

    BudgetedFrameDecoder(int maxFrameBytes, RequestMemoryPool pool) {
        this.maxFrameBytes = maxFrameBytes;
        this.pool = pool;
        setCumulator(this::cumulate);
    }

    /**
     * Adds the bytes of a read to those buffered (see "Buffering"). Netty's merge cumulator, except that a buffer too
     * small for the read is replaced by one that holds the rest of the frame being read when its reservation is held.
     * Writing past the buffered bytes while a cut frame's slice holds the buffer is safe: the slice covers bytes
     * before them, which nothing writes again.
     */
    private ByteBuf cumulate(ByteBufAllocator alloc, ByteBuf cumulation, ByteBuf in) {
        if (cumulation == in) {
            in.release();
            return cumulation;
        }
        if (!cumulation.isReadable() && in.isContiguous()) {
            cumulation.release();
            return in;
        }
        try {
            int buffered = cumulation.readableBytes();
            int incoming = in.readableBytes();
            if (incoming <= cumulation.maxFastWritableBytes() && !cumulation.isReadOnly()) {
                cumulation.writeBytes(in, in.readerIndex(), incoming);
                return cumulation;
            }
            // The buffered bytes start at a frame (decode consumes whole frames only); with its reservation held,
            // the frame's length is pendingLength.
            long needed = (long) buffered + incoming;
            long frame = reserved ? 4L + pendingLength + READ_SLACK : 0;
            ByteBuf grown = alloc.buffer((int) Math.min(Integer.MAX_VALUE - 8, Math.max(needed, frame)));
            try {
                grown.writeBytes(cumulation, cumulation.readerIndex(), buffered);
                grown.writeBytes(in, in.readerIndex(), incoming);
            } catch (RuntimeException | Error e) {
                grown.release();
                throw e;
            }
            cumulation.release();
            return grown;
        } finally {
            in.release();
        }
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        while (true) {
            if (pendingLength < 0) {
                if (in.readableBytes() < 4) {
                    return;
                }
                int length = in.getInt(in.readerIndex());
                if (length < 0 || length > maxFrameBytes) {
                    LOG.log(System.Logger.Level.DEBUG, () -> "closing " + ctx.channel() + ": frame of " + length
                            + " bytes, socket.request.max.bytes is " + maxFrameBytes);
                    in.skipBytes(in.readableBytes());
                    ctx.close();
                    return;
                }
                pendingLength = length;
            }
            if (!reserved) {
                if (waiting) {
                    ctx.channel().config().setAutoRead(false); // still waiting: read nothing more meanwhile
                    return;
                }
                if (!pool.tryReserve(pendingLength, () -> ctx.executor().execute(() -> retry(ctx)))) {
                    waiting = true;
                    ctx.channel().config().setAutoRead(false);
                    int length = pendingLength;
                    FULL.log(() -> "request memory budget in use (queued.max.request.bytes=" + pool.capacityBytes()
                            + ", reserved " + pool.reservedBytes() + "): pausing reads from " + ctx.channel().remoteAddress()
                            + " until a request of " + length + " bytes fits");
                    return;
                }
                reserved = true; // auto-read is left alone: KafkaConnectionHandler may have paused it (requests in flight)
            }
            if (in.readableBytes() < 4 + pendingLength) {
                return;
            }
            in.skipBytes(4);
            out.add(new Frame(in.readRetainedSlice(pendingLength), pool));
            pendingLength = -1;
            reserved = false;
        }
    }

    /** Memory was given back: try to reserve again (from the bytes already buffered), on the channel's event loop. */
    private void retry(ChannelHandlerContext ctx) {
        waiting = false;
        if (!ctx.channel().isActive()) {
            return;
        }
        try {
            channelRead(ctx, Unpooled.EMPTY_BUFFER); // runs decode() over what is buffered
        } catch (Exception e) {
            ctx.fireExceptionCaught(e);
            return;
        }
        if (reserved || pendingLength < 0) {
            ctx.channel().config().setAutoRead(true);
            ctx.read();
        }
    }

    /**
     * ByteToMessageDecoder asks for another read when a read produced no frame and auto-read is off, so that a decoder
     * waiting for the rest of a frame gets it. A connection waiting for budget must not read: it is resumed by
     * {@link #retry}.
     */
    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) throws Exception {
        if (waiting) {
            ctx.fireChannelReadComplete();
            return;
        }
        super.channelReadComplete(ctx);
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
        if (reserved) { // a connection closed with a reserved frame half read: give its memory back
            reserved = false;
            pool.release(pendingLength);
        }
    }

    /** A cut frame and the reservation it carries; {@link #release()} gives back both. */
    record Frame(ByteBuf bytes, RequestMemoryPool pool) {
        void release() {
            int size = bytes.capacity();
            bytes.release();
            pool.release(size);
        }
    }
}
