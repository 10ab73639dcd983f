package io.s3stream.internal.format;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static io.s3stream.internal.format.ObjectFormat.BATCH_HEADER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_CRC_SIZE;
import static io.s3stream.internal.format.ObjectFormat.BLOCK_HEADER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.FOOTER_SIZE;
import static io.s3stream.internal.format.ObjectFormat.INDEX_ENTRY_SIZE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Unit tests of {@link ObjectBuilder}: ordering rules and their messages, block splitting, and buffer lifetimes. */
class ObjectBuilderTest {

    private static final String KEY = "00/ff/builder-test";

    /** Every payload a test passed to a builder; each must be back at refCnt 1 before the test releases it. */
    private final List<ByteBuf> payloads = new ArrayList<>();

    @BeforeAll
    static void watchLeaks() {
        LeakWatch.install();
    }

    @AfterAll
    static void noLeaks() throws InterruptedException {
        LeakWatch.assertNoLeaks();
    }

    @AfterEach
    void releasePayloads() {
        for (ByteBuf p : payloads) {
            assertThat(p.refCnt()).as("payload refCnt after the builder let go").isEqualTo(1);
            p.release();
        }
    }

    private ByteBuf payload(int size) {
        byte[] bytes = new byte[size];
        for (int i = 0; i < size; i++) {
            bytes[i] = (byte) (i * 31 + size);
        }
        ByteBuf buf = TestObjects.payloadBuffer(bytes, 5);
        payloads.add(buf);
        return buf;
    }

    private static ObjectBuilder builder(int target) {
        return new ObjectBuilder(PooledByteBufAllocator.DEFAULT, target);
    }

    private static int blockSize(int... payloadSizes) {
        int size = BLOCK_HEADER_SIZE + BLOCK_CRC_SIZE;
        for (int p : payloadSizes) {
            size += BATCH_HEADER_SIZE + p;
        }
        return size;
    }

    @Test
    void rejectsAStreamIdBelowThePreviousOne() {
        try (ObjectBuilder b = builder(1024)) {
            b.add(7, 0, 1, payload(3));
            assertThatThrownBy(() -> b.add(5, 0, 1, payload(3)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("stream 5 added after stream 7: batches must be added in ascending stream id order");
        }
    }

    @Test
    void rejectsGapsAndOverlapsInsideAStream() {
        try (ObjectBuilder b = builder(1024)) {
            b.add(1, 100, 10, payload(3));
            assertThatThrownBy(() -> b.add(1, 111, 1, payload(3)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("stream 1: batch at base offset 111 is not contiguous: the previous batch ends at 110,"
                            + " so expected base offset 110");
            assertThatThrownBy(() -> b.add(1, 105, 1, payload(3)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("batch at base offset 105 is not contiguous")
                    .hasMessageContaining("expected base offset 110");
            // The rejected calls changed nothing: the contiguous batch is still accepted.
            b.add(1, 110, 1, payload(3));
            assertThat(b.entries()).extracting(IndexEntry::endOffset).containsExactly(111L);
        }
    }

    @Test
    void contiguityIsCheckedAcrossBlockBoundaries() {
        try (ObjectBuilder b = builder(1)) {
            b.add(1, 0, 2, payload(10));
            assertThatThrownBy(() -> b.add(1, 3, 1, payload(10)))
                    .hasMessageContaining("expected base offset 2");
        }
    }

    @Test
    void rejectsBadCountsAndOffsets() {
        try (ObjectBuilder b = builder(1024)) {
            assertThatThrownBy(() -> b.add(1, 0, 0, payload(1)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("stream 1: batch at base offset 0 has count 0, must be >= 1");
            assertThatThrownBy(() -> b.add(1, -1, 1, payload(1)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("outside [0, Long.MAX_VALUE]");
            assertThatThrownBy(() -> b.add(1, Long.MAX_VALUE, 1, payload(1)))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> new ObjectBuilder(PooledByteBufAllocator.DEFAULT, 0))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("targetBlockSizeBytes must be >= 1, was 0");
        }
    }

    @Test
    void splitsBlocksAtTheTargetAndGivesAnOversizedBatchItsOwnBlock() {
        int target = blockSize(10, 10);
        try (ObjectBuilder b = builder(target)) {
            b.add(4, 0, 1, payload(10));
            b.add(4, 1, 2, payload(10));   // fills the first block exactly
            b.add(4, 3, 3, payload(10));   // second block
            b.add(4, 6, 4, payload(500));  // bigger than the target: a block of its own
            b.add(4, 10, 5, payload(10));  // a new block again
            b.add(6, 0, 1, payload(1));    // new stream, new block even though it would fit
            assertThat(b.entries()).containsExactly(
                    new IndexEntry(4, 0, 3, 3, 0, blockSize(10, 10)),
                    new IndexEntry(4, 3, 6, 3, blockSize(10, 10), blockSize(10)),
                    new IndexEntry(4, 6, 10, 4, blockSize(10, 10) + blockSize(10), blockSize(500)),
                    new IndexEntry(4, 10, 15, 5, blockSize(10, 10) + blockSize(10) + blockSize(500), blockSize(10)),
                    new IndexEntry(6, 0, 1, 1, blockSize(10, 10) + 2L * blockSize(10) + blockSize(500),
                            blockSize(1)));
            long data = blockSize(10, 10) + 2L * blockSize(10) + blockSize(500) + blockSize(1);
            assertThat(b.sizeBytes()).isEqualTo(data + 5 * INDEX_ENTRY_SIZE + FOOTER_SIZE);
            assertThat(b.streams()).containsExactly(
                    new StreamSummary(4, 0, 15, blockSize(10, 10) + 2L * blockSize(10) + blockSize(500)),
                    new StreamSummary(6, 0, 1, blockSize(1)));

            ByteBuf object = b.build();
            try {
                assertThat((long) object.readableBytes()).isEqualTo(data + 5 * INDEX_ENTRY_SIZE + FOOTER_SIZE);
                ObjectReader reader = ObjectReader.of(object, KEY);
                assertThat(reader.index().entries()).isEqualTo(b.entries());
                List<DecodedBatch> big = reader.read(4, 7, 8);
                assertThat(big).hasSize(1);
                assertThat(big.getFirst().baseOffset()).isEqualTo(6);
                assertThat(big.getFirst().count()).isEqualTo(4);
                assertThat(big.getFirst().payload()).isEqualTo(payloads.get(3));
                assertThat(reader.read(4, 0, 15)).hasSize(5);
            } finally {
                object.release();
            }
        }
    }

    @Test
    void startsANewBlockBeforeTheRecordCountOverflows() {
        try (ObjectBuilder b = builder(1 << 20)) {
            b.add(1, 0, Integer.MAX_VALUE, payload(1));
            b.add(1, Integer.MAX_VALUE, 1, payload(1));
            assertThat(b.entries()).extracting(IndexEntry::recordCount).containsExactly(Integer.MAX_VALUE, 1);
        }
    }

    @Test
    void emptyBuilderBuildsAFooterOnlyObject() {
        try (ObjectBuilder b = builder(1024)) {
            assertThat(b.sizeBytes()).isEqualTo(FOOTER_SIZE);
            assertThat(b.entries()).isEmpty();
            assertThat(b.streams()).isEmpty();
            ByteBuf object = b.build();
            try {
                assertThat(object.readableBytes()).isEqualTo(FOOTER_SIZE);
                ObjectReader reader = ObjectReader.of(object, KEY);
                assertThat(reader.footer().indexPosition()).isZero();
                assertThat(reader.index().entries()).isEmpty();
                assertThat(reader.read(1, 0, 100)).isEmpty();
                assertThat(reader.index().find(1, 0, 100, 1)).isEmpty();
            } finally {
                object.release();
            }
        }
    }

    @Test
    void emptyPayloadsAreAllowed() {
        try (ObjectBuilder b = builder(1024)) {
            b.add(2, 0, 3, payload(0));
            b.add(2, 3, 1, payload(0));
            ByteBuf object = b.build();
            try {
                List<DecodedBatch> batches = ObjectReader.of(object, KEY).read(2, 0, 4);
                assertThat(batches).extracting(DecodedBatch::count).containsExactly(3, 1);
                assertThat(batches).allSatisfy(d -> assertThat(d.payload().readableBytes()).isZero());
            } finally {
                object.release();
            }
        }
    }

    @Test
    void addCopiesAndLeavesTheCallersBufferAlone() {
        try (ObjectBuilder b = builder(1024)) {
            ByteBuf p = payload(20);
            int reader = p.readerIndex();
            int writer = p.writerIndex();
            b.add(1, 0, 1, p);
            assertThat(p.refCnt()).isEqualTo(1);
            assertThat(p.readerIndex()).isEqualTo(reader);
            assertThat(p.writerIndex()).isEqualTo(writer);
        }
    }

    @Test
    void closeWithoutBuildReleasesEverythingAndIsIdempotent() {
        ObjectBuilder b = builder(64);
        for (int i = 0; i < 300; i++) {   // enough batches to fill many blocks
            b.add(i / 100, i % 100, 1, payload(i % 40));
        }
        // Payloads are copied, never retained; the builder's own block buffers are freed by close (leak check).
        assertThat(payloads).allSatisfy(p -> assertThat(p.refCnt()).isEqualTo(1));
        b.close();
        assertThat(payloads).allSatisfy(p -> assertThat(p.refCnt()).isEqualTo(1));
        b.close();
        assertThatThrownBy(() -> b.add(9, 0, 1, payload(1)))
                .isInstanceOf(IllegalStateException.class).hasMessage("cannot add: the builder is closed");
        assertThatThrownBy(b::build).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void buildHandsEverythingToTheObject() {
        ObjectBuilder b = builder(64);
        for (int i = 0; i < 300; i++) {
            b.add(i / 100, i % 100, 1, payload(i % 40));
        }
        ByteBuf object = b.build();
        assertThatThrownBy(b::build)
                .isInstanceOf(IllegalStateException.class).hasMessage("cannot build: the builder is already built");
        assertThatThrownBy(() -> b.add(9, 0, 1, payload(1))).isInstanceOf(IllegalStateException.class);
        b.close();   // holds nothing after build: must not release the object's parts
        assertThat(object.refCnt()).isEqualTo(1);
        ObjectReader reader = ObjectReader.of(object, KEY);
        assertThat(reader.read(2, 0, 100)).hasSize(100);
        object.release();
        // @AfterEach checks every payload is back to refCnt 1.
    }
}
