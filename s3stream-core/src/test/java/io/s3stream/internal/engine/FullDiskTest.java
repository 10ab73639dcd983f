package io.s3stream.internal.engine;

import io.s3stream.FetchResult;
import io.s3stream.OverCapacityException;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.testing.MemBackends;
import io.s3stream.testing.SmallFileSystem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A full disk under a {@code file://} object store (a real tmpfs of 64 MiB): uploads fail with ENOSPC; destroying
 * the stream that filled it must complete without waiting for an upload that cannot succeed, its objects must be
 * deleted so the space comes back, and the other stream's acknowledged appends must then be uploaded by themselves and
 * survive a restart.
 */
@Timeout(240)
class FullDiskTest {
    private static final int BATCH = 64 * 1024;
    /** The room the {@code file://} store keeps free for metadata commits: data objects never take it. */
    private static final long RESERVE = 2L << 20;

    @TempDir
    Path tmp;

    private static StreamStorage open(String name, Path data, Path bucket) {
        return StreamStorage.open(config(name, data, bucket, Duration.ofMillis(500)));
    }

    private static StorageConfig config(String name, Path data, Path bucket, Duration uploadInterval) {
        return builder(name, data, bucket, uploadInterval).build();
    }

    private static StorageConfig.Builder builder(String name, Path data, Path bucket, Duration uploadInterval) {
        return StorageConfig.builder()
                .nodeId(1)
                .dataDir(data)
                .wal("mem://" + name + "?capacity=96MiB")
                .objectStore(bucket.toUri() + "?reserveBytes=" + RESERVE)
                .logCacheBytes(64L << 20)
                .blockCacheBytes(4L << 20)
                .uploadThresholdBytes(2L << 20)
                .maxBatchBytes(1 << 20)
                .uploadInterval(uploadInterval)
                .objectDeletionGracePeriod(Duration.ofSeconds(1))
                .compactionInterval(Duration.ofMillis(500));
    }

    private static byte[] payload(long stream, long i) {
        byte[] b = new byte[BATCH];
        java.util.Arrays.fill(b, (byte) (stream * 31 + i));
        return b;
    }

    /**
     * Reads {@code [from, to)} of {@code s} and checks each record is the {@link #payload} appended at loop index
     * {@code offset - indexBase}.
     */
    private static void assertReads(Stream s, long from, long to, long indexBase) throws Exception {
        long next = from;
        while (next < to) {
            try (FetchResult r = s.fetch(next, Long.MAX_VALUE, 1 << 20).get(10, TimeUnit.SECONDS)) {
                assertThat(r.batches()).as("a fetch at " + next).isNotEmpty();
                for (StoredBatch b : r.batches()) {
                    byte[] got = new byte[b.payload().remaining()];
                    b.payload().duplicate().get(got);
                    assertThat(got).as("offset " + b.baseOffset())
                            .isEqualTo(payload(s.streamId(), b.baseOffset() - indexBase));
                    next = b.endOffset();
                }
            }
        }
        assertThat(next).isEqualTo(to);
    }

    private static List<CompletableFuture<?>> append(Stream s, int count) {
        List<CompletableFuture<?>> acks = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            acks.add(s.append(RecordBatch.of(1, ByteBuffer.wrap(payload(s.streamId(), i)))));
        }
        return acks;
    }

    @Test
    void destroyingWhatFilledTheDiskFreesItAndTheOtherStreamCarriesOn() throws Exception {
        String name = "full-disk-" + UUID.randomUUID();
        try (SmallFileSystem fs = SmallFileSystem.mount(tmp.resolve("fs"), 64)) {
            Path bucket = Files.createDirectories(fs.path().resolve("bucket"));
            Path data = Files.createDirectories(tmp.resolve("data"));
            StreamStorage storage = open(name, data, bucket);
            Stream big = storage.createStream(StreamOptions.builder().build()).get();
            Stream small = storage.createStream(StreamOptions.builder().build()).get();
            // 40 MiB of the big stream uploaded, then more of both than the disk can take.
            for (CompletableFuture<?> f : append(big, 640)) {
                f.get(30, TimeUnit.SECONDS);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (storage.metrics().uploads().bytes() < (40L << 20) && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertThat(storage.metrics().uploads().bytes()).isGreaterThanOrEqualTo(40L << 20);
            fillLeaving(fs, 6L << 20);
            long uploadedBefore = storage.metrics().uploads().bytes();
            List<CompletableFuture<?>> acks = new ArrayList<>(append(small, 128)); // 8 MiB
            acks.addAll(append(big, 128));
            for (CompletableFuture<?> f : acks) {
                f.get(30, TimeUnit.SECONDS); // acknowledged: durable in the WAL, waiting for upload
            }
            Thread.sleep(2_000); // uploads are failing now
            long freeBefore = fs.usableBytes();

            // The user's first remedy: delete what filled the disk. It completes, and the space comes back.
            big.destroy().get(20, TimeUnit.SECONDS);
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (fs.usableBytes() < freeBefore + (30L << 20) && System.nanoTime() < deadline) {
                Thread.sleep(200);
            }
            assertThat(fs.usableBytes()).as("space of the destroyed stream's objects").isGreaterThan(freeBefore + (30L << 20));

            // The small stream's acknowledged appends get uploaded on their own and survive a restart.
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (storage.metrics().uploads().bytes() < uploadedBefore + (8L << 20) && System.nanoTime() < deadline) {
                Thread.sleep(200);
            }
            assertThat(storage.metrics().uploads().bytes()).isGreaterThanOrEqualTo(uploadedBefore + (8L << 20));
            storage.close();
            MemBackends.clearWal(name); // a restart that needs nothing from the WAL: everything is in objects
            try (StreamStorage again = open(name + "-2", data, bucket)) {
                Stream reopened = again.openStream(small.streamId(), 1).get(10, TimeUnit.SECONDS);
                assertReads(reopened, 0, 128, 0);
            }
        }
    }

    /**
     * Trimming is the other remedy: records trimmed before they were uploaded are left out of the upload that the full
     * disk refuses, so the rest of it goes through; after a crash the WAL's records past the trimmed gap are recovered
     * and the stream continues at its start offset, never reusing an offset.
     */
    @Test
    void trimmingWhatWaitsForUploadLetsTheRestThroughAndSurvivesACrash() throws Exception {
        String name = "full-disk-trim-" + UUID.randomUUID();
        try (SmallFileSystem fs = SmallFileSystem.mount(tmp.resolve("fs"), 64)) {
            Path bucket = Files.createDirectories(fs.path().resolve("bucket"));
            Path data = Files.createDirectories(tmp.resolve("data"));
            // Blocks are sealed by size only (an hour between timed rounds), so the first one is 2 MiB: it holds the
            // small stream's 512 KiB and 1.5 MiB of the big one, and cannot fit in the 1.5 MiB left above the reserve.
            StreamStorage storage = EngineHooks.open(config(name, data, bucket, Duration.ofHours(1)), System::nanoTime);
            Stream big = storage.createStream(StreamOptions.builder().build()).get();
            Stream small = storage.createStream(StreamOptions.builder().build()).get();
            fillLeaving(fs, RESERVE + (3L << 19));
            for (CompletableFuture<?> f : append(small, 8)) {
                f.get(30, TimeUnit.SECONDS);
            }
            for (CompletableFuture<?> f : append(big, 256)) { // 16 MiB, acknowledged: in the WAL
                f.get(30, TimeUnit.SECONDS);
            }
            Thread.sleep(1_500);
            assertThat(storage.metrics().uploads().bytes()).as("nothing fits").isZero();

            big.trim(256).get(10, TimeUnit.SECONDS);
            // Nothing of the big stream is written; the small one's 512 KiB fit, and everything is then uploaded.
            EngineHooks.flush(storage).get(60, TimeUnit.SECONDS);
            assertThat(storage.metrics().uploads().bytes()).isBetween(8L * BATCH, 9L * BATCH);

            // 16 more records of the big stream, acknowledged and not uploaded (the log cache holds them), then a crash.
            for (CompletableFuture<?> f : append(big, 16)) {
                f.get(30, TimeUnit.SECONDS);
            }
            EngineHooks.halt(storage);
            try (var files = Files.list(fs.path())) {
                for (Path p : files.filter(p -> p.getFileName().toString().startsWith("other-files")).toList()) {
                    Files.delete(p);
                }
            }

            try (StreamStorage again = open(name, data, bucket)) {
                Stream reopened = again.openStream(big.streamId(), 1).get(10, TimeUnit.SECONDS);
                assertThat(reopened.startOffset()).isEqualTo(256);
                assertThat(reopened.nextOffset()).as("the 16 records after the trimmed gap were recovered").isEqualTo(272);
                assertReads(reopened, 256, 272, 256); // appended as the 16 records' loop indexes 0..15
                assertThat(reopened.append(RecordBatch.of(1, ByteBuffer.wrap(new byte[10]))).get(10, TimeUnit.SECONDS)
                        .baseOffset()).isEqualTo(272);
                EngineHooks.flush(again).get(30, TimeUnit.SECONDS);
                Stream smallAgain = again.openStream(small.streamId(), 1).get(10, TimeUnit.SECONDS);
                assertThat(smallAgain.nextOffset()).isEqualTo(8);
            }
        }
    }

    /**
     * A full WAL device behind a full disk: nothing can be uploaded, so the WAL (16 MiB here) fills and appends fail
     * with {@link OverCapacityException}, fencing the streams they were for. Destroying the stream that filled it lets
     * the other one's records go up, the WAL is trimmed behind them, and that stream, reopened, takes appends again.
     */
    @Test
    void aFullWalHealsWhenTheStreamThatFilledItIsDestroyed() throws Exception {
        String name = "full-wal-" + UUID.randomUUID();
        try (SmallFileSystem fs = SmallFileSystem.mount(tmp.resolve("fs"), 64)) {
            Path bucket = Files.createDirectories(fs.path().resolve("bucket"));
            Path data = Files.createDirectories(tmp.resolve("data"));
            StorageConfig config = builder(name, data, bucket, Duration.ofHours(1))
                    .wal("mem://" + name + "?capacity=16MiB")
                    .backpressureTimeout(Duration.ofMillis(500))
                    .build();
            StreamStorage storage = StreamStorage.open(config);
            Stream big = storage.createStream(StreamOptions.builder().build()).get();
            Stream small = storage.createStream(StreamOptions.builder().build()).get();
            fillLeaving(fs, RESERVE + (3L << 19));
            for (CompletableFuture<?> f : append(small, 8)) {
                f.get(30, TimeUnit.SECONDS);
            }
            Throwable full = null;
            for (int i = 0; i < 512 && full == null; i++) {
                try {
                    big.append(RecordBatch.of(1, ByteBuffer.wrap(payload(big.streamId(), i)))).get(30, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    full = e.getCause();
                }
            }
            assertThat(full).as("the WAL fills: 16 MiB, nothing uploaded").isInstanceOf(OverCapacityException.class)
                    .hasMessageContaining("is full");
            Throwable refused = small.append(RecordBatch.of(1, ByteBuffer.wrap(payload(small.streamId(), 8))))
                    .handle((r, e) -> e).get(30, TimeUnit.SECONDS);
            assertThat(refused).as("the other stream cannot append either").isNotNull();

            big.destroy().get(20, TimeUnit.SECONDS);
            // The small stream's records go up (512 KiB fit), the WAL is trimmed behind them: appends work again on
            // the stream reopened (the refused append fenced its handle, so that it never has a hole).
            EngineHooks.flush(storage).get(60, TimeUnit.SECONDS);
            Stream reopened = storage.openStream(small.streamId(), 1).get(10, TimeUnit.SECONDS);
            long next = reopened.nextOffset();
            assertThat(next).as("the 8 acknowledged records, and nothing of the refused one").isEqualTo(8);
            reopened.append(RecordBatch.of(1, ByteBuffer.wrap(payload(small.streamId(), 8)))).get(10, TimeUnit.SECONDS);
            storage.close();
            try (StreamStorage again = StreamStorage.open(config)) {
                assertReads(again.openStream(small.streamId(), 2).get(10, TimeUnit.SECONDS), 0, 9, 0);
            }
        }
    }

    /**
     * Other files take all but {@code leave} bytes. The engine may be writing at the same moment (an upload, a
     * compaction output), so a write that finds the space gone is measured again and retried.
     */
    private static void fillLeaving(SmallFileSystem fs, long leave) throws Exception {
        java.nio.file.Path filler = fs.path().resolve("other-files");
        for (int attempt = 0; ; attempt++) {
            try {
                Files.write(filler, new byte[(int) Math.max(0, fs.usableBytes() - leave)]);
                return;
            } catch (java.io.IOException e) {
                Files.deleteIfExists(filler);
                if (attempt == 20) {
                    throw e;
                }
                Thread.sleep(50);
            }
        }
    }
}
