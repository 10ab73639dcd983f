package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link ReadMerger} on its own: which reads join a group, the pieces a sealed group is read in, and who owns which
 * buffer afterwards. The GETs are futures the test completes with buffers it keeps, to check each one's fate.
 */
class ReadMergerTest {
    private static final int MAX_GAP = 1024;
    private static final int MAX_BYTES = 1 << 16;

    private final LongAdder merged = new LongAdder();
    private final ReadMerger merger = new ReadMerger(MAX_GAP, MAX_BYTES, merged);
    private final List<ReadMerger.Group> groups = new ArrayList<>();
    private final List<CompletableFuture<List<ByteBuf>>> gets = new ArrayList<>();
    private final List<ByteBuf> answered = new ArrayList<>();

    private CompletableFuture<ByteBuf> read(long position, int length) {
        return merger.read("obj", position, length, group -> {
            groups.add(group);
            CompletableFuture<List<ByteBuf>> get = new CompletableFuture<>();
            gets.add(get);
            return get;
        });
    }

    /** Seals group {@code i} and answers its GET with one buffer per piece, each filled with its offset's byte. */
    private List<ByteBuf> answer(int i) {
        ReadMerger.Group group = groups.get(i);
        group.seal();
        List<ByteBuf> parts = new ArrayList<>();
        long at = group.start();
        for (int length : group.pieces()) {
            ByteBuf part = Unpooled.directBuffer(length);
            for (int b = 0; b < length; b++) {
                part.writeByte((int) (at + b));
            }
            parts.add(part);
            at += length;
        }
        answered.addAll(parts);
        gets.get(i).complete(parts);
        return parts;
    }

    private static byte[] expected(long position, int length) {
        byte[] bytes = new byte[length];
        for (int b = 0; b < length; b++) {
            bytes[b] = (byte) (position + b);
        }
        return bytes;
    }

    @AfterEach
    void nothingLeaks() {
        assertThat(answered).as("every buffer the GETs answered ends released").allMatch(b -> b.refCnt() == 0);
    }

    @Test
    void readsThatDoNotOverlapAreOneSplitGetAndEachKeepsABufferOfItsOwn() {
        CompletableFuture<ByteBuf> middle = read(1000, 100);
        CompletableFuture<ByteBuf> first = read(0, 500);
        CompletableFuture<ByteBuf> last = read(1200, 300);
        CompletableFuture<ByteBuf> adjacent = read(1500, 20);

        assertThat(gets).as("one GET").hasSize(1);
        assertThat(merged.sum()).isEqualTo(3);
        List<ByteBuf> parts = answer(0);
        assertThat(groups.getFirst().start()).isZero();
        // Pieces in position order: read [0, 500), gap, read [1000, 1100), gap, read [1200, 1500), read [1500, 1520).
        assertThat(groups.getFirst().pieces()).containsExactly(500, 500, 100, 100, 300, 20);

        assertThat(first.join()).isSameAs(parts.get(0));
        assertThat(middle.join()).isSameAs(parts.get(2));
        assertThat(last.join()).isSameAs(parts.get(4));
        assertThat(adjacent.join()).isSameAs(parts.get(5));
        assertThat(parts.get(1).refCnt()).as("gap released").isZero();
        assertThat(parts.get(3).refCnt()).as("gap released").isZero();
        assertThat(ByteBufUtil.getBytes(middle.join())).isEqualTo(expected(1000, 100));
        assertThat(ByteBufUtil.getBytes(last.join())).isEqualTo(expected(1200, 300));
        for (CompletableFuture<ByteBuf> f : List.of(first, middle, last, adjacent)) {
            assertThat(f.join().refCnt()).isOne();
            f.join().release();
        }
    }

    @Test
    void overlappingReadsShareOneBufferThroughSlices() {
        CompletableFuture<ByteBuf> a = read(0, 1000);
        CompletableFuture<ByteBuf> b = read(500, 1000);
        CompletableFuture<ByteBuf> c = read(2000, 10);
        List<ByteBuf> parts = answer(0);

        assertThat(groups.getFirst().pieces()).as("the whole range as one piece").containsExactly(2010);
        ByteBuf whole = parts.getFirst();
        assertThat(whole.refCnt()).as("one reference per slice").isEqualTo(3);
        assertThat(ByteBufUtil.getBytes(a.join())).isEqualTo(expected(0, 1000));
        assertThat(ByteBufUtil.getBytes(b.join())).isEqualTo(expected(500, 1000));
        assertThat(ByteBufUtil.getBytes(c.join())).isEqualTo(expected(2000, 10));
        a.join().release();
        b.join().release();
        c.join().release();
        assertThat(whole.refCnt()).isZero();
    }

    @Test
    void aLoneReadGetsTheBufferItself() {
        CompletableFuture<ByteBuf> only = read(4096, 512);
        List<ByteBuf> parts = answer(0);
        assertThat(groups.getFirst().pieces()).containsExactly(512);
        assertThat(only.join()).isSameAs(parts.getFirst());
        only.join().release();
    }

    @Test
    void onlyReadsWithinTheGapAndSizeOfAnUnsealedGroupJoinIt() {
        CompletableFuture<ByteBuf> base = read(100_000, 1000);
        CompletableFuture<ByteBuf> tooFar = read(100_000 + 1000 + MAX_GAP + 1, 10);
        CompletableFuture<ByteBuf> tooBig = read(100_000 - MAX_BYTES, MAX_BYTES - 500); // near, but 66,536 merged
        CompletableFuture<ByteBuf> before = read(100_000 - MAX_GAP - 10, 10); // ends exactly MAX_GAP before: joins
        assertThat(gets).as("base (with before), tooFar, tooBig").hasSize(3);
        answer(0);
        assertThat(groups.getFirst().pieces()).containsExactly(10, MAX_GAP, 1000);
        CompletableFuture<ByteBuf> afterSeal = read(100_500, 10);
        assertThat(gets).as("a sealed group takes no more reads").hasSize(4);
        answer(1);
        answer(2);
        answer(3);
        assertThat(ByteBufUtil.getBytes(afterSeal.join())).isEqualTo(expected(100_500, 10));
        assertThat(ByteBufUtil.getBytes(before.join())).isEqualTo(expected(100_000 - MAX_GAP - 10, 10));
        assertThat(merged.sum()).isOne();
        for (var f : List.of(base, tooFar, tooBig, before, afterSeal)) {
            f.join().release();
        }
    }

    @Test
    void aReaderThatGaveUpDoesNotKeepItsBuffer() {
        CompletableFuture<ByteBuf> kept = read(0, 100);
        CompletableFuture<ByteBuf> abandoned = read(100, 100);
        abandoned.cancel(false);
        List<ByteBuf> parts = answer(0);
        assertThat(parts.get(1).refCnt()).as("the abandoned read's piece is released").isZero();
        assertThat(kept.join()).isSameAs(parts.getFirst());
        kept.join().release();
    }

    @Test
    void aFailedGetFailsEveryReadOfItsGroup() {
        CompletableFuture<ByteBuf> a = read(0, 100);
        CompletableFuture<ByteBuf> b = read(200, 100);
        groups.getFirst().seal();
        IllegalStateException cause = new IllegalStateException("503 SlowDown, attempts spent");
        gets.getFirst().completeExceptionally(cause);
        assertThat(a).isCompletedExceptionally();
        assertThat(b).isCompletedExceptionally();
        assertThatThrownBy(b::join).hasCause(cause);
    }

    @Test
    void aGroupHasNoPiecesBeforeItIsSealed() {
        CompletableFuture<ByteBuf> a = read(0, 100);
        assertThatThrownBy(() -> groups.getFirst().pieces()).isInstanceOf(IllegalStateException.class);
        answer(0);
        a.join().release();
    }
}
