package io.s3stream.internal.engine;

import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StorageMetrics;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.testing.EngineFixture;
import io.s3stream.testing.S3Server;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link CatchUpReadTest}'s scenario on MinIO: a catch-up reader replays a 25 MiB backlog from objects (three times the
 * log cache) with read-ahead while another stream is appended to and tail-read for as long as the replay lasts. The
 * tail is served from the log cache throughout, the backlog comes back byte for byte, and read-ahead serves the
 * replay. Compaction is off so that every object request in the test is the catch-up reader's.
 */
class CatchUpReadMinioIT {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    private static final int BACKLOG_BATCHES = 800;
    private static final int BACKLOG_BATCH_BYTES = 32 * 1024;
    private static final int MIN_TAIL_ROUNDS = 300;

    private final EngineFixture fixture = new EngineFixture();
    private final String prefix = "catchup-" + UUID.randomUUID();
    private final long seed = System.nanoTime();

    @AfterEach
    void close() {
        fixture.close();
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
                .get(30, TimeUnit.SECONDS).baseOffset();
        assertThat(got).isEqualTo(base);
    }

    /** One tail round: append a small batch and read it at once; the fetch must complete from memory. */
    private static long tailRound(Stream tail, long next) throws Exception {
        appendChecked(tail, 1, 2048);
        CompletableFuture<FetchResult> f = tail.fetch(next, Long.MAX_VALUE, 1 << 20);
        assertThat(f).as("a tail fetch is answered from memory, at once").isDone();
        try (FetchResult r = f.join()) {
            assertThat(r.batches()).isNotEmpty();
            for (StoredBatch b : r.batches()) {
                assertThat(b.baseOffset()).isEqualTo(next);
                check(tail, b);
                next = b.endOffset();
            }
        }
        return next;
    }

    @Test
    void aCatchUpReaderReadsTheBacklogWhileTheTailStaysInTheLogCache() throws Exception {
        StreamStorage storage = fixture.open(1, b -> b.objectStore(S3.uri(prefix)).compactionEnabled(false)
                .uploadInterval(Duration.ofSeconds(1)).backpressureTimeout(Duration.ofSeconds(30)));
        Stream backlog = storage.createStream(StreamOptions.defaults()).get();
        Stream tail = storage.createStream(StreamOptions.defaults()).get();
        for (int i = 0; i < BACKLOG_BATCHES; i++) { // 25 MiB through an 8 MiB log cache: the start is only in objects
            appendChecked(backlog, 4, BACKLOG_BATCH_BYTES);
        }
        StorageMetrics before = storage.metrics();
        assertThat(before.uploads().objects()).isPositive();

        AtomicReference<Throwable> tailFailure = new AtomicReference<>();
        AtomicBoolean catchUpDone = new AtomicBoolean();
        AtomicInteger tailFetches = new AtomicInteger();
        AtomicInteger tailFetchesDuringCatchUp = new AtomicInteger();
        long[] tailNext = {tail.nextOffset()};
        Thread tailThread = Thread.ofPlatform().name("tail-reader").start(() -> {
            try {
                // The tail runs for as long as the replay does (and at least MIN_TAIL_ROUNDS rounds).
                while (!catchUpDone.get() || tailFetches.get() < MIN_TAIL_ROUNDS) {
                    boolean during = !catchUpDone.get();
                    tailNext[0] = tailRound(tail, tailNext[0]);
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
                try (FetchResult r = backlog.fetch(next, end, 96 * 1024).get(30, TimeUnit.SECONDS)) {
                    assertThat(r.batches()).isNotEmpty();
                    for (StoredBatch b : r.batches()) {
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
        long catchUpMs = (System.nanoTime() - started) / 1_000_000;
        tailThread.join(60_000);
        assertThat(tailThread.isAlive()).isFalse();
        assertThat(tailFailure.get()).isNull();
        assertThat(bytes).isEqualTo((long) BACKLOG_BATCHES * BACKLOG_BATCH_BYTES);
        assertThat(tailFetchesDuringCatchUp.get()).as("the tail was read while the replay ran").isPositive();

        StorageMetrics after = storage.metrics();
        // Every tail fetch came from the log cache; every object read was the catch-up reader's.
        assertThat(after.reads().fromLogCache() - before.reads().fromLogCache()).isGreaterThanOrEqualTo(tailFetches.get());
        assertThat(after.reads().fromObjects() - before.reads().fromObjects()).isLessThanOrEqualTo(catchUpFetches);
        assertThat(after.reads().fromObjects() - before.reads().fromObjects()).isPositive();
        assertThat(after.readAhead().hits()).as("read-ahead served the catch-up reader").isPositive();
        assertThat(after.readAhead().bytes()).isLessThanOrEqualTo(MemoryBudgets.resolve(fixture.config(1).build(), Long.MAX_VALUE).readAheadBytes());
        assertThat(after.blockCache().bytes()).isLessThanOrEqualTo(after.blockCache().capacityBytes());
        assertThat(after.logCache().bytes()).isLessThanOrEqualTo(after.logCache().capacityBytes());

        // With the replay over, the tail alone makes no GET at all (uploads are PUTs).
        long getsBefore = after.objectStore().requests().get("GET");
        long objectFetchesBefore = after.reads().fromObjects();
        for (int i = 0; i < 100; i++) {
            tailNext[0] = tailRound(tail, tailNext[0]);
        }
        StorageMetrics tailOnly = storage.metrics();
        assertThat(tailOnly.objectStore().requests().get("GET")).as("GETs while only the tail reads").isEqualTo(getsBefore);
        assertThat(tailOnly.reads().fromObjects()).isEqualTo(objectFetchesBefore);

        System.out.printf("catch-up on MinIO: %d fetches in %d ms, %d tail fetches meanwhile, GETs %d, read-ahead hits %d,"
                        + " blocks %d, evicted unread %d, merged %d%n",
                catchUpFetches, catchUpMs, tailFetchesDuringCatchUp.get(),
                after.objectStore().requests().get("GET") - before.objectStore().requests().get("GET"),
                after.readAhead().hits(), after.readAhead().blocks(), after.readAhead().evictedUnread(), after.blockCache().mergedLoads());
    }
}
