package io.s3stream.internal.engine;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** How {@link ReadAhead} recognises a stream's readers from nothing but where their fetches start and end. */
class ReadAheadTest {
    private static final long STREAM = 7;
    private final ReadAhead readAhead = new ReadAhead(1 << 20, 8 << 20);

    /** One fetch from {@code start} whose data ended at {@code end}. */
    private ReadAhead.Reader fetch(long start, long end) {
        ReadAhead.Reader reader = readAhead.begin(STREAM, start);
        readAhead.advance(STREAM, reader, end);
        return reader;
    }

    @Test
    void aFetchFromWhereTheLastEndedContinuesItsReader() {
        ReadAhead.Reader first = fetch(0, 100);
        assertThat(first.sequential()).isFalse();
        ReadAhead.Reader second = fetch(100, 200);
        assertThat(second).isSameAs(first);
        assertThat(second.sequential()).isTrue();
        assertThat(readAhead.sequentialFetches.sum()).isOne();
        assertThat(readAhead.windows()).hasSize(1);
    }

    @Test
    void aReaderThatLeftTheLastBatchesOfAFetchIsStillTheSameReader() {
        // kafka-shell drops the batches that would overflow the client's byte limit; the client asks again from there.
        ReadAhead.Reader reader = fetch(0, 1000);
        for (long start = 900; start < 10_000; start += 900) {
            assertThat(fetch(start, start + 1000)).isSameAs(reader);
        }
        assertThat(reader.sequential()).isTrue();
        assertThat(reader.consecutiveFetches).isEqualTo(11);
    }

    @Test
    void aRetryFromTheSameOffsetOrAJumpStartsAReaderOfItsOwn() {
        ReadAhead.Reader reader = fetch(1000, 2000);
        assertThat(fetch(1000, 2000)).as("a retry").isNotSameAs(reader);
        assertThat(fetch(2001, 3000)).as("past the end").isNotSameAs(reader);
        assertThat(fetch(500, 1500)).as("before the start").isNotSameAs(reader);
        assertThat(readAhead.sequentialFetches.sum()).isZero();
    }

    @Test
    void theMostRecentlyActiveReaderWinsAndOnlyAFewAreRemembered() {
        ReadAhead.Reader older = fetch(0, 1000);
        ReadAhead.Reader newer = fetch(500, 1000); // 500 lies inside `older`'s last fetch
        assertThat(newer).isSameAs(older);
        ReadAhead.Reader a = fetch(10_000, 11_000);
        ReadAhead.Reader b = fetch(10_500, 10_800); // continues a
        assertThat(b).isSameAs(a);
        ReadAhead.Reader other = fetch(10_100, 10_900); // 10_100 <= 10_500 (a's last start): a new reader
        assertThat(other).isNotSameAs(a);
        assertThat(fetch(10_700, 10_900)).as("both could continue; the most recent does").isSameAs(other);

        for (int i = 0; i < ReadAhead.READERS_PER_STREAM; i++) {
            fetch(100_000L * (i + 1), 100_000L * (i + 1) + 10);
        }
        assertThat(fetch(1000, 2000)).as("forgotten after %d newer readers", ReadAhead.READERS_PER_STREAM)
                .isNotSameAs(older);
    }
}
