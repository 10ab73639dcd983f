package io.s3stream.internal.manifest;

import io.s3stream.AppendResult;
import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamFencedException;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.internal.wal.InMemoryWal;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The engine on its default metadata store: with no {@code metadata} URI configured, {@link StreamStorage} uses the
 * manifest in its object store, so a new engine on the same {@code file://} directory finds its streams, and two
 * engines on one directory hand a stream over with epoch fencing.
 */
class ManifestEngineTest {

    @TempDir
    Path dir;
    private final String name = "me-" + UUID.randomUUID();
    private final List<StreamStorage> open = new ArrayList<>();

    private StreamStorage engine(long nodeId) throws Exception {
        Path data = Files.createDirectories(dir.resolve("node-" + nodeId));
        StreamStorage s = StreamStorage.open(StorageConfig.builder()
                .nodeId(nodeId)
                .dataDir(data)
                .wal("mem://" + name + "-wal-" + nodeId + "?capacity=64MiB")
                .objectStore(Files.createDirectories(dir.resolve("bucket")).toUri().toString())
                // metadata deliberately not set: the manifest is the default
                .logCacheBytes(8L * 1024 * 1024)
                .blockCacheBytes(4L * 1024 * 1024)
                .uploadThresholdBytes(1024 * 1024)
                .uploadInterval(Duration.ofSeconds(30))
                .streamObjectThresholdBytes(512 * 1024)
                .objectBlockSizeBytes(64 * 1024)
                .maxBatchBytes(256 * 1024)
                .backpressureTimeout(Duration.ofSeconds(2))
                .build());
        open.add(s);
        return s;
    }

    @AfterEach
    void closeAll() {
        for (StreamStorage s : open) {
            s.close();
        }
        InMemoryWal.clear(name + "-wal-1");
        InMemoryWal.clear(name + "-wal-2");
    }

    private static byte[] payload(int i) {
        byte[] b = new byte[100 + i % 50];
        for (int j = 0; j < b.length; j++) {
            b[j] = (byte) (i * 31 + j);
        }
        return b;
    }

    private static void append(Stream s, int i) throws Exception {
        AppendResult r = s.append(RecordBatch.of(1, ByteBuffer.wrap(payload(i)))).get(10, TimeUnit.SECONDS);
        assertThat(r.baseOffset()).isEqualTo(i);
    }

    private static void readAll(Stream s, int count) throws Exception {
        long next = 0;
        while (next < count) {
            try (FetchResult r = s.fetch(next, Long.MAX_VALUE, 1 << 20).get(10, TimeUnit.SECONDS)) {
                assertThat(r.batches()).isNotEmpty();
                for (StoredBatch b : r.batches()) {
                    byte[] got = new byte[b.payload().remaining()];
                    b.payload().duplicate().get(got);
                    assertThat(got).as("offset " + b.baseOffset()).isEqualTo(payload((int) b.baseOffset()));
                    next = b.endOffset();
                }
            }
        }
    }

    @Test
    void streamsSurviveARestartOnTheDefaultManifest() throws Exception {
        StreamStorage first = engine(1);
        Stream s = first.createStream(StreamOptions.builder().tags(java.util.Map.of("topic", "t-0")).build()).get();
        for (int i = 0; i < 200; i++) {
            append(s, i);
        }
        first.keyValues().put("t-0", new byte[] {7}).get(10, TimeUnit.SECONDS);
        first.close();
        open.remove(first);
        assertThat(Files.list(dir.resolve("bucket").resolve("manifest").resolve("log")).count())
                .as("the manifest log is in the object store").isPositive();

        StreamStorage second = engine(1); // a new engine: nothing shared with the first but the directory
        Stream again = second.openStream(s.streamId(), 1).get(10, TimeUnit.SECONDS);
        assertThat(again.nextOffset()).isEqualTo(200);
        readAll(again, 200);
        assertThat(second.keyValues().get("t-0").get(10, TimeUnit.SECONDS)).isPresent();
    }

    @Test
    void aKeyValueUpdateIsOneManifestEntryAndSurvivesARestart() throws Exception {
        StreamStorage first = engine(1);
        first.keyValues().put("staged/g/1/t/0", new byte[] {1}).get(10, TimeUnit.SECONDS);
        Path log = dir.resolve("bucket").resolve("manifest").resolve("log");
        long entriesBefore;
        try (var files = Files.list(log)) {
            entriesBefore = files.count();
        }
        java.util.Map<String, byte[]> offsets = new java.util.TreeMap<>();
        for (int p = 0; p < 100; p++) {
            offsets.put("offsets/g/t/" + p, new byte[] {(byte) p});
        }
        first.keyValues().update(offsets, List.of("staged/g/1/t/0")).get(10, TimeUnit.SECONDS);
        try (var files = Files.list(log)) {
            assertThat(files.count()).as("100 puts and a delete in one manifest entry").isEqualTo(entriesBefore + 1);
        }
        first.close();
        open.remove(first);

        StreamStorage second = engine(1);
        assertThat(second.keyValues().list("offsets/g/").get(10, TimeUnit.SECONDS)).hasSize(100);
        assertThat(second.keyValues().get("staged/g/1/t/0").get(10, TimeUnit.SECONDS)).isEmpty();
    }

    @Test
    void twoEnginesHandAStreamOverWithEpochFencing() throws Exception {
        StreamStorage one = engine(1);
        StreamStorage two = engine(2);
        Stream s = one.createStream(StreamOptions.defaults()).get();
        for (int i = 0; i < 50; i++) {
            append(s, i);
        }
        assertThatThrownBy(() -> two.openStream(s.streamId(), 1).get(10, TimeUnit.SECONDS))
                .hasCauseInstanceOf(StreamFencedException.class).hasMessageContaining("node 1");
        s.close().get(10, TimeUnit.SECONDS);

        Stream taken = two.openStream(s.streamId(), 1).get(10, TimeUnit.SECONDS);
        assertThat(taken.nextOffset()).isEqualTo(50);
        readAll(taken, 50);
        append(taken, 50);

        // The old owner cannot come back at its old epoch.
        assertThatThrownBy(() -> one.openStream(s.streamId(), 0).get(10, TimeUnit.SECONDS))
                .hasCauseInstanceOf(StreamFencedException.class);
    }

    private static int counter(java.util.Optional<byte[]> value) {
        return value.map(b -> Integer.parseInt(new String(b, java.nio.charset.StandardCharsets.US_ASCII))).orElse(0);
    }

    private static byte[] counter(int n) {
        return Integer.toString(n).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    }

    @Test
    void computeLosesNoChangeWhenTwoEnginesChangeOneKeyAtOnce() throws Exception {
        List<StreamStorage> engines = List.of(engine(1), engine(2));
        int rounds = 40;
        java.util.Queue<Throwable> failures = new java.util.concurrent.ConcurrentLinkedQueue<>();
        java.util.concurrent.atomic.AtomicInteger applied = new java.util.concurrent.atomic.AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (StreamStorage e : engines) {
            threads.add(Thread.ofPlatform().start(() -> {
                for (int i = 0; i < rounds; i++) {
                    try {
                        e.keyValues().compute("counter", v -> {
                            applied.incrementAndGet();
                            return counter(counter(v) + 1);
                        }, 1_000).get(30, TimeUnit.SECONDS);
                    } catch (Exception ex) {
                        failures.add(ex);
                    }
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        assertThat(failures).isEmpty();
        engines.getFirst().keyValues().sync().get(10, TimeUnit.SECONDS);
        assertThat(counter(engines.getFirst().keyValues().get("counter").get(10, TimeUnit.SECONDS)))
                .as("every increment of both engines (the change applied %d times)", applied.get())
                .isEqualTo(2 * rounds);
    }

    @Test
    void computeDeletesWritesNothingForTheSameValueAndChangesNothingWhenTheChangeFails() throws Exception {
        StreamStorage one = engine(1);
        var kv = one.keyValues();
        assertThat(kv.compute("k", v -> counter(counter(v) + 5), 1).get(10, TimeUnit.SECONDS)).hasValue(counter(5));
        Path log = dir.resolve("bucket").resolve("manifest").resolve("log");
        long entries;
        try (var files = Files.list(log)) {
            entries = files.count();
        }
        assertThat(kv.compute("k", v -> v.orElseThrow().clone(), 1).get(10, TimeUnit.SECONDS)).hasValue(counter(5));
        assertThat(kv.compute("absent", v -> null, 1).get(10, TimeUnit.SECONDS)).isEmpty();
        try (var files = Files.list(log)) {
            assertThat(files.count()).as("no manifest entry for a change that changes nothing").isEqualTo(entries);
        }
        assertThatThrownBy(() -> kv.compute("k", v -> {
            throw new IllegalArgumentException("refused");
        }, 3).get(10, TimeUnit.SECONDS)).hasRootCauseInstanceOf(IllegalArgumentException.class);
        assertThat(kv.get("k").get(10, TimeUnit.SECONDS)).hasValue(counter(5));
        assertThat(kv.compute("k", v -> null, 1).get(10, TimeUnit.SECONDS)).isEmpty();
        assertThat(kv.get("k").get(10, TimeUnit.SECONDS)).isEmpty();
        assertThatThrownBy(() -> kv.compute("k", v -> null, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void computeFailsWhenEveryAttemptLosesToAnotherChange() throws Exception {
        StreamStorage one = engine(1);
        StreamStorage two = engine(2);
        java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
        // Each time the change runs, the other engine changes the key first: every compare-and-set loses.
        assertThatThrownBy(() -> one.keyValues().compute("k", v -> {
            int n = calls.incrementAndGet();
            two.keyValues().put("k", counter(100 + n)).join();
            return counter(counter(v) + 1);
        }, 3).get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(java.util.ConcurrentModificationException.class)
                .hasMessageContaining("key k kept changing");
        assertThat(calls).hasValue(3);
        one.keyValues().sync().get(10, TimeUnit.SECONDS);
        assertThat(one.keyValues().get("k").get(10, TimeUnit.SECONDS)).hasValue(counter(103));
    }
}
