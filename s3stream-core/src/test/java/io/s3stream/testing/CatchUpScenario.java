package io.s3stream.testing;

import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The catch-up scenario shared by the engine's tests on every store: a backlog stream of 25 MiB (three times a small
 * log cache, so its start is only in objects) is replayed from its start while a tail stream is appended to and read
 * back, round after round, for as long as the replay lasts. Every batch read is checked byte for byte and every tail
 * fetch must complete at once (from the log cache); the caller asserts on the engine's metrics around {@link #replay}.
 */
public final class CatchUpScenario {
    public static final int BACKLOG_BATCHES = 800;
    public static final int BACKLOG_BATCH_BYTES = 32 * 1024;
    /** The tail runs at least this many rounds, even when the replay is faster. */
    public static final int MIN_TAIL_ROUNDS = 300;
    private static final long ACK_TIMEOUT_SECONDS = 30;

    private final Stream backlog;
    private final Stream tail;
    private long tailNext;

    private CatchUpScenario(Stream backlog, Stream tail) {
        this.backlog = backlog;
        this.tail = tail;
        this.tailNext = tail.nextOffset();
    }

    /** Creates the two streams and appends the backlog, 4 records per 32 KiB batch. */
    public static CatchUpScenario prepare(StreamStorage storage) throws Exception {
        Stream backlog = storage.createStream(StreamOptions.defaults()).get();
        Stream tail = storage.createStream(StreamOptions.defaults()).get();
        for (int i = 0; i < BACKLOG_BATCHES; i++) {
            appendChecked(backlog, 4, BACKLOG_BATCH_BYTES);
        }
        return new CatchUpScenario(backlog, tail);
    }

    /**
     * What a replay saw.
     *
     * @param catchUpFetches           fetches of the backlog
     * @param bytes                    payload bytes of the backlog read back
     * @param tailFetches              tail rounds in all
     * @param tailFetchesDuringCatchUp tail rounds that started while the replay ran
     * @param catchUpMillis            the replay's wall-clock time
     */
    public record Result(int catchUpFetches, long bytes, int tailFetches, int tailFetchesDuringCatchUp,
                         long catchUpMillis) {
    }

    /** Replays the whole backlog with fetches of 96 KiB while a thread runs tail rounds; fails on any mismatch. */
    public Result replay(long seed) throws Exception {
        return replay(seed, false);
    }

    /**
     * {@link #replay(long)}; with {@code leavesLastBatch} the reader takes every batch of a fetch but the last (when
     * it got more than one) and fetches again from that one, as a Kafka consumer behind kafka-shell does when the
     * last batch would overflow its byte limit.
     */
    public Result replay(long seed, boolean leavesLastBatch) throws Exception {
        AtomicReference<Throwable> tailFailure = new AtomicReference<>();
        AtomicBoolean catchUpDone = new AtomicBoolean();
        AtomicInteger tailFetches = new AtomicInteger();
        AtomicInteger tailFetchesDuringCatchUp = new AtomicInteger();
        Thread tailThread = Thread.ofPlatform().name("tail-reader").start(() -> {
            try {
                while (!catchUpDone.get() || tailFetches.get() < MIN_TAIL_ROUNDS) {
                    boolean during = !catchUpDone.get();
                    tailRound();
                    tailFetches.incrementAndGet();
                    if (during) {
                        tailFetchesDuringCatchUp.incrementAndGet();
                    }
                }
            } catch (Throwable t) {
                tailFailure.set(t);
            }
        });

        long next = backlog.startOffset();
        int catchUpFetches = 0;
        long bytes = 0;
        long end = backlog.confirmedOffset();
        long started = System.nanoTime();
        try {
            while (next < end) {
                try (FetchResult r = backlog.fetch(next, end, 96 * 1024).get(ACK_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                    assertThat(r.batches()).isNotEmpty();
                    List<StoredBatch> taken = leavesLastBatch && r.batches().size() > 1
                            ? r.batches().subList(0, r.batches().size() - 1) : r.batches();
                    for (StoredBatch b : taken) {
                        assertThat(b.baseOffset()).as("contiguous (seed %d)", seed).isEqualTo(next);
                        check(backlog, b);
                        bytes += b.payload().remaining();
                        next = b.endOffset();
                    }
                }
                catchUpFetches++;
            }
        } finally {
            catchUpDone.set(true);
        }
        long catchUpMillis = (System.nanoTime() - started) / 1_000_000;
        tailThread.join(60_000);
        assertThat(tailThread.isAlive()).isFalse();
        assertThat(tailFailure.get()).isNull();
        assertThat(bytes).isEqualTo((long) BACKLOG_BATCHES * BACKLOG_BATCH_BYTES);
        return new Result(catchUpFetches, bytes, tailFetches.get(), tailFetchesDuringCatchUp.get(), catchUpMillis);
    }

    /** One tail round: append a small batch and read it back at once; the fetch must complete from memory. */
    public void tailRound() throws Exception {
        appendChecked(tail, 1, 2048);
        CompletableFuture<FetchResult> f = tail.fetch(tailNext, Long.MAX_VALUE, 1 << 20);
        assertThat(f).as("a tail fetch is answered from memory, at once").isDone();
        try (FetchResult r = f.join()) {
            assertThat(r.batches()).isNotEmpty();
            for (StoredBatch b : r.batches()) {
                assertThat(b.baseOffset()).isEqualTo(tailNext);
                check(tail, b);
                tailNext = b.endOffset();
            }
        }
    }

    private static byte[] payload(long stream, long offset, int size) {
        byte[] b = new byte[size];
        new Random(stream * 1_000_003 + offset).nextBytes(b);
        return b;
    }

    private static void check(Stream s, StoredBatch b) {
        byte[] got = new byte[b.payload().remaining()];
        b.payload().duplicate().get(got);
        assertThat(got).as("stream %d batch at %d", s.streamId(), b.baseOffset())
                .isEqualTo(payload(s.streamId(), b.baseOffset(), got.length));
    }

    private static void appendChecked(Stream s, int count, int size) throws Exception {
        long base = s.nextOffset();
        long got = s.append(RecordBatch.of(count, ByteBuffer.wrap(payload(s.streamId(), base, size))))
                .get(ACK_TIMEOUT_SECONDS, TimeUnit.SECONDS).baseOffset();
        assertThat(got).isEqualTo(base);
    }
}
