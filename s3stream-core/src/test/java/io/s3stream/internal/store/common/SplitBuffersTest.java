package io.s3stream.internal.store.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.UnpooledByteBufAllocator;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;

class SplitBuffersTest {
    private final UnpooledByteBufAllocator allocator = new UnpooledByteBufAllocator(true);

    @Test
    void writesOfAnySizeLandInTheirRangesAndTheBuffersAreHandedOver() {
        Random random = new Random(11);
        int[] lengths = {3, 1, 40, 17};
        byte[] body = new byte[61];
        random.nextBytes(body);
        for (int trial = 0; trial < 100; trial++) {
            SplitBuffers buffers = new SplitBuffers(lengths, allocator);
            for (int at = 0; at < body.length; ) {
                int n = Math.min(body.length - at, 1 + random.nextInt(20));
                assertThat(trial % 2 == 0 ? buffers.write(body, at, n) : buffers.write(ByteBuffer.wrap(body, at, n)))
                        .isTrue();
                at += n;
            }
            List<ByteBuf> parts = buffers.take();
            int at = 0;
            for (int i = 0; i < lengths.length; i++) {
                assertThat(ByteBufUtil.getBytes(parts.get(i))).isEqualTo(Arrays.copyOfRange(body, at, at + lengths[i]));
                at += lengths[i];
                parts.get(i).release();
            }
            buffers.release(); // handed over: nothing left to release
            assertThat(allocator.metric().usedDirectMemory()).isZero();
        }
    }

    @Test
    void bytesPastTheLastRangeAreRefusedAndAnIncompleteReadHandsNothingOver() {
        SplitBuffers buffers = new SplitBuffers(new int[] {4, 4}, allocator);
        assertThat(buffers.write(new byte[6], 0, 6)).isTrue();
        assertThatThrownBy(buffers::take).isInstanceOf(IllegalStateException.class).hasMessageContaining("6 of its 8");
        assertThat(buffers.write(new byte[5], 0, 5)).isFalse();
        assertThat(buffers.received()).isEqualTo(8);
        buffers.release();
        assertThat(allocator.metric().usedDirectMemory()).isZero();
    }

    @Test
    void aWriteAfterTheBuffersWereReleasedOrTakenIsRefusedAndAllocatesNothing() {
        SplitBuffers released = new SplitBuffers(new int[] {4, 4}, allocator);
        assertThat(released.write(new byte[2], 0, 2)).isTrue();
        released.release();
        assertThat(released.write(new byte[4], 0, 4)).isFalse();
        assertThat(released.write(ByteBuffer.allocate(8))).isFalse();
        assertThat(allocator.metric().usedDirectMemory()).isZero();
        assertThatThrownBy(released::take).isInstanceOf(IllegalStateException.class).hasMessageContaining("released");

        SplitBuffers taken = new SplitBuffers(new int[] {4}, allocator);
        assertThat(taken.write(new byte[4], 0, 4)).isTrue();
        List<ByteBuf> parts = taken.take();
        assertThat(taken.write(new byte[4], 0, 4)).isFalse();
        assertThatThrownBy(taken::take).isInstanceOf(IllegalStateException.class);
        taken.release();
        assertThat(parts.getFirst().refCnt()).isEqualTo(1); // a release after the hand-over leaves the caller's buffer
        parts.getFirst().release();
        assertThat(allocator.metric().usedDirectMemory()).isZero();
    }

    @Test
    void aWriterStillRunningWhenTheWaiterGivesUpLeavesNoBufferBehind() throws Exception {
        // The shape of an Azure download: the SDK writes the body on its event loop while the thread that waited for
        // it fails and releases; whatever the interleaving, no buffer outlives the release.
        Random random = new Random(23);
        for (int trial = 0; trial < 200; trial++) {
            int[] lengths = new int[64];
            Arrays.fill(lengths, 16);
            SplitBuffers buffers = new SplitBuffers(lengths, allocator);
            CountDownLatch started = new CountDownLatch(1);
            Thread writer = Thread.ofPlatform().start(() -> {
                started.countDown();
                byte[] chunk = new byte[5];
                while (buffers.write(chunk, 0, chunk.length)) {
                    Thread.onSpinWait();
                }
            });
            started.await();
            for (int spin = random.nextInt(2_000); spin > 0; spin--) {
                Thread.onSpinWait();
            }
            buffers.release();
            writer.join();
            assertThat(allocator.metric().usedDirectMemory()).as("trial %d", trial).isZero();
        }
    }
}
