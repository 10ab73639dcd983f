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
}
