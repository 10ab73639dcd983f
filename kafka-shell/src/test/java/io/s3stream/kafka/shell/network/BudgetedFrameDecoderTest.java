package io.s3stream.kafka.shell.network;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Frames cut from reads of any size, with earlier frames still held (requests in flight) or given back, come out
 * byte for byte; the buffer that gathers a frame is replaced at most once per frame (each byte copied once), and never
 * sized for a frame whose bytes the budget has not reserved.
 */
class BudgetedFrameDecoderTest {
    private static final int SEEDS = Integer.getInteger("s3stream.simulation.seeds", 40);

    @Test
    void framesComeOutWholeAndEachIsGatheredInOneBuffer() {
        for (int seed = 0; seed < SEEDS; seed++) {
            Random random = new Random(seed);
            CountingAllocator alloc = new CountingAllocator();
            RequestMemoryPool pool = new RequestMemoryPool(0); // no budget: every frame is reserved at its header
            EmbeddedChannel channel = new EmbeddedChannel(new BudgetedFrameDecoder(16 << 20, pool));
            channel.config().setAllocator(alloc);

            List<byte[]> frames = new ArrayList<>();
            int count = 5 + random.nextInt(20);
            for (int i = 0; i < count; i++) {
                int size = switch (random.nextInt(4)) {
                    case 0 -> random.nextInt(64);
                    case 1 -> random.nextInt(16 << 10);
                    case 2 -> random.nextInt(256 << 10);
                    default -> random.nextInt(3 << 20);
                };
                byte[] body = new byte[size];
                random.nextBytes(body);
                frames.add(body);
            }
            byte[] stream = concatenate(frames);
            List<Integer> headers = new ArrayList<>();
            for (int i = 0, h = 0; i < frames.size(); h += 4 + frames.get(i).length, i++) {
                headers.add(h);
            }
            int splitHeaders = 0;

            Deque<BudgetedFrameDecoder.Frame> held = new ArrayDeque<>();
            List<byte[]> out = new ArrayList<>();
            int at = 0;
            while (at < stream.length) {
                int read = Math.min(stream.length - at, 1 + random.nextInt(random.nextBoolean() ? 1 << 10 : 64 << 10));
                channel.writeInbound(Unpooled.wrappedBuffer(Arrays.copyOfRange(stream, at, at + read)));
                at += read;
                int end = at;
                splitHeaders += (int) headers.stream().filter(h -> h < end && end < h + 4).count();
                for (BudgetedFrameDecoder.Frame f; (f = channel.readInbound()) != null; ) {
                    byte[] bytes = new byte[f.bytes().readableBytes()];
                    f.bytes().getBytes(f.bytes().readerIndex(), bytes);
                    out.add(bytes);
                    held.add(f);
                }
                // Requests answered in any order, some while later frames are still being read.
                while (!held.isEmpty() && random.nextInt(3) == 0) {
                    (random.nextBoolean() ? held.pollFirst() : held.pollLast()).release();
                }
            }
            held.forEach(BudgetedFrameDecoder.Frame::release);

            assertThat(out).as("seed %d: frames", seed).hasSize(frames.size());
            for (int i = 0; i < frames.size(); i++) {
                assertThat(out.get(i)).as("seed %d: frame %d", seed, i).isEqualTo(frames.get(i));
            }
            // One per frame, and one more for a frame whose size prefix a read cut: until the prefix is whole, the
            // frame's size is not known.
            assertThat(alloc.buffers).as("seed %d: gathering buffers (%d frames, %d prefixes cut)", seed,
                    frames.size(), splitHeaders).isLessThanOrEqualTo(frames.size() + splitHeaders);
            assertThat(channel.finishAndReleaseAll()).isFalse();
        }
    }

    @Test
    void aFrameWaitingForBudgetIsNotSizedBeforeItsReservation() {
        RequestMemoryPool pool = new RequestMemoryPool(1 << 20);
        CountingAllocator alloc = new CountingAllocator();
        EmbeddedChannel other = new EmbeddedChannel(new BudgetedFrameDecoder(64 << 20, pool));
        EmbeddedChannel channel = new EmbeddedChannel(new BudgetedFrameDecoder(64 << 20, pool));
        channel.config().setAllocator(alloc);

        // Another connection holds most of the budget with a request in flight.
        other.writeInbound(Unpooled.wrappedBuffer(concatenate(List.of(new byte[900 << 10]))));
        BudgetedFrameDecoder.Frame inFlight = other.readInbound();
        assertThat(inFlight).isNotNull();

        // A frame of 32 MiB cannot be reserved: its first reads are buffered at their own size, not the frame's.
        byte[] big = new byte[32 << 20];
        new Random(7).nextBytes(big);
        byte[] stream = concatenate(List.of(big));
        channel.writeInbound(Unpooled.wrappedBuffer(Arrays.copyOfRange(stream, 0, 1000)));
        channel.writeInbound(Unpooled.wrappedBuffer(Arrays.copyOfRange(stream, 1000, 3000)));
        assertThat(channel.config().isAutoRead()).as("reads paused until the budget allows the frame").isFalse();
        assertThat(alloc.largest).as("no buffer sized for the unreserved frame").isLessThan(64 << 10);

        inFlight.release(); // the budget is free: the frame is reserved and gathered in one buffer of its size
        channel.runPendingTasks();
        assertThat(channel.config().isAutoRead()).isTrue();
        channel.writeInbound(Unpooled.wrappedBuffer(Arrays.copyOfRange(stream, 3000, stream.length)));
        BudgetedFrameDecoder.Frame frame = channel.readInbound();
        assertThat(frame).isNotNull();
        byte[] bytes = new byte[frame.bytes().readableBytes()];
        frame.bytes().getBytes(frame.bytes().readerIndex(), bytes);
        assertThat(bytes).isEqualTo(big);
        assertThat(pool.reservedBytes()).isEqualTo(32 << 20);
        frame.release();
        assertThat(pool.reservedBytes()).isZero();
        assertThat(channel.finishAndReleaseAll()).isFalse();
        assertThat(other.finishAndReleaseAll()).isFalse();
    }

    /** Kafka's size-prefixed frames, one after the other. */
    private static byte[] concatenate(List<byte[]> frames) {
        int total = frames.stream().mapToInt(f -> 4 + f.length).sum();
        ByteBuf stream = Unpooled.buffer(total);
        for (byte[] f : frames) {
            stream.writeInt(f.length).writeBytes(f);
        }
        return stream.array();
    }

    /**
     * The pooled allocator, counting the buffers asked of it (the decoder's gathering buffers) and the largest. Its
     * buffers cannot grow: a gathering buffer that would have grown in place, copying itself, shows here as another.
     */
    private static final class CountingAllocator extends io.netty.buffer.AbstractByteBufAllocator {
        private final ByteBufAllocator pooled = PooledByteBufAllocator.DEFAULT;
        int buffers;
        int largest;

        CountingAllocator() {
            super(true);
        }

        @Override
        protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
            count(initialCapacity);
            return pooled.heapBuffer(initialCapacity, initialCapacity);
        }

        @Override
        protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
            count(initialCapacity);
            return pooled.directBuffer(initialCapacity, initialCapacity);
        }

        @Override
        public CompositeByteBuf compositeBuffer(int maxNumComponents) {
            throw new AssertionError("the decoder gathers frames in one buffer");
        }

        private void count(int capacity) {
            buffers++;
            largest = Math.max(largest, capacity);
        }

        @Override
        public boolean isDirectBufferPooled() {
            return true;
        }
    }
}
