package io.s3stream.cache;

import static io.s3stream.cache.RangeLoads.span;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** Merged loads, read-ahead blocks consumed once, the read-ahead budget and the window policy. */
class BlockCacheReadAheadTest {
    private final RangeLoads loader = new RangeLoads();

    private static List<ByteBuf> joinAll(BlockCache.Lookup lookup) {
        List<ByteBuf> out = new ArrayList<>();
        for (CompletableFuture<ByteBuf> f : lookup.blocks()) {
            out.add(f.join());
        }
        return out;
    }

    private static void verifyAndRelease(List<BlockSpan> spans, List<ByteBuf> bufs) {
        for (int i = 0; i < spans.size(); i++) {
            RangeLoads.verify(spans.get(i), bufs.get(i));
            bufs.get(i).release();
        }
    }

    @Test
    void adjacentMissesAreOneRequestThatFillsEachEntry() {
        List<BlockSpan> spans = List.of(span(7, 0, 100), span(7, 100, 120), span(7, 220, 30), span(7, 400, 50),
                span(8, 450, 10));
        try (BlockCache cache = BlockCache.create(10_000)) {
            BlockCache.Lookup lookup = cache.getAll(spans, loader);
            assertThat(lookup.missed()).isEqualTo(5);
            assertThat(loader.calls).extracting(RangeLoads.Call::position, RangeLoads.Call::length)
                    .containsExactly(org.assertj.core.groups.Tuple.tuple(0L, 250),
                            org.assertj.core.groups.Tuple.tuple(400L, 50), org.assertj.core.groups.Tuple.tuple(450L, 10));
            loader.completeAll();
            verifyAndRelease(spans, joinAll(lookup));
            for (BlockSpan s : spans) {
                ByteBuf cached = cache.getIfPresent(s.key());
                RangeLoads.verify(s, cached);
                cached.release();
            }
            assertThat(cache.stats().mergedLoads()).isEqualTo(1);
            assertThat(cache.stats().mergedBlocks()).isEqualTo(3);
            assertThat(cache.stats().bytesHeld()).isEqualTo(310);
        }
        loader.assertAllReleased();
    }

    @Test
    void aMergedLoadKeepsTheLoadersBuffersAsTheyAreWithoutCopying() {
        List<BlockSpan> spans = List.of(span(3, 0, 64), span(3, 64, 32));
        List<ByteBuf> given = new ArrayList<>();
        RangeLoader splitting = new RangeLoader() {
            @Override
            public CompletableFuture<ByteBuf> load(long objectId, long position, int lengthBytes) {
                throw new AssertionError("a run of two blocks is one split load");
            }

            @Override
            public CompletableFuture<List<ByteBuf>> loadSplit(long objectId, long position, int[] lengths) {
                for (int i = 0; i < lengths.length; i++) {
                    BlockSpan s = spans.get(i);
                    ByteBuf b = RangeLoads.ALLOC.directBuffer(lengths[i]);
                    for (int j = 0; j < lengths[i]; j++) {
                        b.writeByte(RangeLoads.byteAt(objectId, s.key().position() + j));
                    }
                    given.add(b);
                }
                return CompletableFuture.completedFuture(List.copyOf(given));
            }
        };
        try (BlockCache cache = BlockCache.create(10_000)) {
            verifyAndRelease(spans, joinAll(cache.getAll(spans, splitting)));
            for (int i = 0; i < spans.size(); i++) {
                ByteBuf cached = cache.getIfPresent(spans.get(i).key());
                assertThat(cached.memoryAddress()).isEqualTo(given.get(i).memoryAddress());
                cached.release();
            }
        }
        assertThat(given).allSatisfy(b -> assertThat(b.refCnt()).isZero());
    }

    @Test
    void aSplitLoadOfTheWrongShapeFailsEveryBlockAndReleasesWhatItGot() {
        List<BlockSpan> spans = List.of(span(4, 0, 10), span(4, 10, 10), span(4, 20, 10));
        List<ByteBuf> given = new ArrayList<>();
        RangeLoader wrong = new RangeLoader() {
            @Override
            public CompletableFuture<ByteBuf> load(long objectId, long position, int lengthBytes) {
                throw new AssertionError("a run of three blocks is one split load");
            }

            @Override
            public CompletableFuture<List<ByteBuf>> loadSplit(long objectId, long position, int[] lengths) {
                given.add(RangeLoads.ALLOC.directBuffer(10).writeZero(10));
                given.add(RangeLoads.ALLOC.directBuffer(20).writeZero(20)); // two buffers, the second too long
                return CompletableFuture.completedFuture(List.copyOf(given));
            }
        };
        try (BlockCache cache = BlockCache.create(10_000)) {
            BlockCache.Lookup lookup = cache.getAll(spans, wrong);
            assertThat(lookup.blocks()).allSatisfy(f -> assertThat(f).failsWithin(java.time.Duration.ZERO)
                    .withThrowableThat().withMessageContaining("2 buffers for the run of 3 blocks"));
            assertThat(cache.stats().entries()).isZero();
        }
        assertThat(given).allSatisfy(b -> assertThat(b.refCnt()).isZero());
    }

    @Test
    void aResidentBlockSplitsTheRunAndConcurrentMissesShareIt() {
        List<BlockSpan> spans = List.of(span(1, 0, 10), span(1, 10, 10), span(1, 20, 10));
        try (BlockCache cache = BlockCache.create(10_000)) {
            BlockCache.Lookup middle = cache.getAll(List.of(spans.get(1)), loader);
            loader.completeAll();
            verifyAndRelease(List.of(spans.get(1)), joinAll(middle));

            BlockCache.Lookup first = cache.getAll(spans, loader);
            BlockCache.Lookup second = cache.getAll(spans, loader);
            assertThat(first.missed()).isEqualTo(2);
            assertThat(loader.calls).hasSize(3); // the middle one, then one each side of it; nothing for `second`
            loader.completeAll();
            verifyAndRelease(spans, joinAll(first));
            verifyAndRelease(spans, joinAll(second));
        }
        loader.assertAllReleased();
    }

    @Test
    void aFailedMergedLoadFailsEveryBlockAndCachesNothing() {
        List<BlockSpan> spans = List.of(span(1, 0, 10), span(1, 10, 10));
        try (BlockCache cache = BlockCache.create(10_000)) {
            BlockCache.Lookup lookup = cache.getAll(spans, loader);
            loader.calls.getFirst().future().completeExceptionally(new IllegalStateException("503"));
            assertThat(lookup.blocks()).allSatisfy(f -> assertThat(f).isCompletedExceptionally());
            assertThat(cache.stats().entries()).isZero();
            BlockCache.Lookup retry = cache.getAll(spans, loader);
            loader.completeAll();
            verifyAndRelease(spans, joinAll(retry));
        }
        loader.assertAllReleased();
    }

    @Test
    void aBlockReadAheadIsDroppedOnceConsumed() {
        ReadAheadWindow window = new ReadAheadWindow(100, 800);
        List<BlockSpan> spans = List.of(span(3, 0, 100), span(3, 100, 100));
        try (BlockCache cache = BlockCache.create(1000, 400)) {
            assertThat(cache.prefetch(spans, loader, window)).isEqualTo(2);
            assertThat(loader.calls).hasSize(1);
            loader.completeAll();
            assertThat(cache.stats().readAheadBytesHeld()).isEqualTo(200);
            assertThat(cache.stats().bytesHeld()).isZero(); // not in the main cache

            BlockCache.Lookup read = cache.getAll(List.of(spans.getFirst()), loader);
            assertThat(read.missed()).isZero();
            verifyAndRelease(List.of(spans.getFirst()), joinAll(read));
            assertThat(cache.stats().readAheadBytesHeld()).isEqualTo(100);
            assertThat(cache.getIfPresent(spans.getFirst().key())).isNull(); // consumed: gone
            assertThat(cache.stats().readAheadHits()).isEqualTo(1);
            assertThat(cache.prefetch(spans, loader, window)).isEqualTo(1); // the consumed one again, not the other
        }
        loader.assertAllReleased();
    }

    @Test
    void aReaderThatCatchesUpJoinsTheReadAheadLoadAndConsumesIt() {
        BlockSpan s = span(3, 0, 100);
        try (BlockCache cache = BlockCache.create(1000, 400)) {
            cache.prefetch(List.of(s), loader, ReadAheadListener.NONE);
            CompletableFuture<ByteBuf> f = cache.get(s.key(), k -> {
                throw new AssertionError("second load");
            });
            loader.completeAll();
            RangeLoads.verify(s, f.join());
            f.join().release();
            assertThat(cache.stats().readAheadBytesReserved()).isZero();
            assertThat(cache.stats().loads()).isEqualTo(1);
        }
        loader.assertAllReleased();
    }

    @Test
    void readAheadStopsWhenBlocksInFlightFillTheAreaAndEvictsTheOldestUnread() {
        ReadAheadWindow slow = new ReadAheadWindow(100, 800);
        slow.onMiss();
        slow.onMiss();
        assertThat(slow.bytes()).isEqualTo(400);
        try (BlockCache cache = BlockCache.create(2000, 300)) {
            List<BlockSpan> first = List.of(span(1, 0, 100), span(1, 100, 100), span(1, 200, 100), span(1, 300, 100));
            assertThat(cache.prefetch(first, loader, slow)).isEqualTo(3); // back-pressure: only 300 bytes
            assertThat(cache.stats().readAheadBytesReserved()).isEqualTo(300);
            assertThat(cache.prefetch(List.of(span(2, 0, 100)), loader, ReadAheadListener.NONE)).isZero();
            loader.completeAll();

            List<BlockSpan> other = List.of(span(2, 0, 100), span(2, 100, 100));
            assertThat(cache.prefetch(other, loader, ReadAheadListener.NONE)).isEqualTo(2);
            assertThat(cache.stats().readAheadEvictedUnread()).isEqualTo(2);
            assertThat(slow.evictedUnread()).isEqualTo(2);
            assertThat(slow.bytes()).isEqualTo(100);
            assertThat(cache.stats().readAheadBytesReserved()).isLessThanOrEqualTo(300);
            loader.completeAll();
        }
        loader.assertAllReleased();
    }

    @Test
    void invalidationDuringAReadAheadLoadKeepsNothing() {
        try (BlockCache cache = BlockCache.create(2000, 300)) {
            cache.prefetch(List.of(span(1, 0, 100)), loader, ReadAheadListener.NONE);
            cache.invalidateObject(1);
            loader.completeAll();
            assertThat(cache.stats().readAheadBytesReserved()).isZero();
            cache.prefetch(List.of(span(1, 0, 100)), loader, ReadAheadListener.NONE);
            loader.completeAll();
            assertThat(cache.stats().readAheadBytesHeld()).isEqualTo(100);
        }
        loader.assertAllReleased();
    }

    @Test
    void theWindowDoublesOnMissesUpToTheCapAndHalvesOnUnreadEvictions() {
        ReadAheadWindow w = new ReadAheadWindow(64, 1000);
        w.onMiss();
        assertThat(w.bytes()).isEqualTo(128);
        for (int i = 0; i < 10; i++) {
            w.onMiss();
        }
        assertThat(w.bytes()).isEqualTo(1000);
        w.evictedUnread(new BlockKey(1, 0), 10);
        assertThat(w.bytes()).isEqualTo(500);
        for (int i = 0; i < 10; i++) {
            w.evictedUnread(new BlockKey(1, 0), 10);
        }
        assertThat(w.bytes()).isEqualTo(64);
    }
}
