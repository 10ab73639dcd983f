package io.s3stream.testing;

import io.s3stream.RecordBatch;
import io.s3stream.StorageConfig;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * The forked writer of {@link EngineCrashHarness} (the WAL under test comes as the last argument): opens {@link StreamStorage} on a data dir (recovering whatever
 * the previous, killed process left), creates the test's streams on the first run or opens them at the given epoch,
 * then appends deterministic batches from several threads, many in flight, until it is killed. Every acknowledged
 * append is written as one whole line {@code "stream baseOffset count epoch\n"} to the ack log with a single
 * {@code write} on a file (not a pipe: output in a pipe can be lost when the process is killed; a write into a file's
 * page cache survives the kill of the process). Progress goes to a status file the same way.
 *
 * <p>Every batch is a function of (seed, stream, baseOffset) for its count and size and of (seed, stream, baseOffset,
 * writer epoch) for its bytes, so the parent can check any batch it reads back, acknowledged or not, and tell a batch
 * of an older writer from a newer one.
 */
public final class EngineCrashChild {
    public static final String STREAMS_KEY = "crash-test/streams";

    private EngineCrashChild() {
    }

    /**
     * The engine settings of parent and child: small budgets so uploads, WAL wrap-around and trims happen every cycle.
     * The upload threshold and interval vary per process: a large threshold leaves megabytes for recovery, a short
     * interval makes the upload ticker fire while recovery is still running.
     */
    public static StorageConfig config(Path dataDir, String walUri, long uploadThresholdBytes, long uploadIntervalMs) {
        return StorageConfig.builder()
                .nodeId(1)
                .dataDir(dataDir)
                .wal(walUri)
                .logCacheBytes(16L << 20)
                .blockCacheBytes(8L << 20)
                .uploadThresholdBytes(uploadThresholdBytes)
                .uploadInterval(Duration.ofMillis(uploadIntervalMs))
                .streamObjectThresholdBytes(256L << 10)
                .objectBlockSizeBytes(64 << 10)
                .maxBatchBytes(64 << 10)
                .backpressureTimeout(Duration.ofSeconds(30))
                .compactionEnabled(false)
                .costLogInterval(Duration.ZERO)
                .build();
    }

    // ---------------------------------------------------------------- deterministic batches

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    private static long shape(long seed, long stream, long offset) {
        return mix(seed ^ mix(stream * 0x9E3779B97F4A7C15L + mix(offset)));
    }

    /** Records the batch at {@code offset} stands for: 1 to 64. */
    public static int count(long seed, long stream, long offset) {
        return 1 + (int) ((shape(seed, stream, offset) >>> 8) & 63);
    }

    /** Payload size of the batch at {@code offset}: 1 B to 64 KiB, mostly small. */
    public static int size(long seed, long stream, long offset) {
        long h = shape(seed, stream, offset);
        int cls = (int) (h & 0xff);
        long r = h >>> 20;
        if (cls < 128) {
            return 1 + (int) (r % 512);
        }
        if (cls < 230) {
            return 512 + (int) (r % (8 * 1024 - 512));
        }
        return 8 * 1024 + (int) (r % (56 * 1024 + 1)); // up to 64 KiB inclusive
    }

    /** The payload of the batch at {@code offset} written at {@code epoch}. */
    public static byte[] payload(long seed, long stream, long offset, long epoch) {
        byte[] b = new byte[size(seed, stream, offset)];
        long x = mix(shape(seed, stream, offset) ^ mix(epoch + 0x5DEECE66DL)) | 1;
        int i = 0;
        while (i < b.length) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            for (int k = 0; k < 8 && i < b.length; k++, i++) {
                b[i] = (byte) (x >>> (8 * k));
            }
        }
        return b;
    }

    // ---------------------------------------------------------------- the writer

    /** One file written in whole lines, one {@code write} per line. */
    static final class LineLog implements AutoCloseable {
        private final FileChannel channel;

        LineLog(Path file) throws IOException {
            channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.APPEND);
        }

        synchronized void line(String text) {
            ByteBuffer buf = ByteBuffer.wrap((text + "\n").getBytes(StandardCharsets.UTF_8));
            try {
                while (buf.hasRemaining()) {
                    channel.write(buf);
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }

    /**
     * Args: dataDir epoch seed statusFile ackFile streams threads bytesPerSecond uploadThresholdBytes uploadIntervalMs
     * walUri.
     */
    public static void main(String[] args) throws Exception {
        Path dataDir = Path.of(args[0]);
        long epoch = Long.parseLong(args[1]);
        long seed = Long.parseLong(args[2]);
        LineLog status = new LineLog(Path.of(args[3]));
        LineLog acks = new LineLog(Path.of(args[4]));
        int streamCount = Integer.parseInt(args[5]);
        int threads = Integer.parseInt(args[6]);
        long bytesPerSecond = Long.parseLong(args[7]) / threads;

        status.line("STARTING");
        long t0 = System.nanoTime();
        // Recovers what the killed process left.
        StreamStorage storage = StreamStorage.open(config(dataDir, args[10], Long.parseLong(args[8]),
                Long.parseLong(args[9])));
        status.line("RECOVERED " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));

        List<Stream> streams = new ArrayList<>();
        Optional<byte[]> ids = storage.keyValues().get(STREAMS_KEY).get(30, TimeUnit.SECONDS);
        if (ids.isEmpty()) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < streamCount; i++) {
                Stream s = storage.createStream(StreamOptions.defaults()).get(30, TimeUnit.SECONDS);
                streams.add(s);
                sb.append(i == 0 ? "" : ",").append(s.streamId());
            }
            storage.keyValues().put(STREAMS_KEY, sb.toString().getBytes(StandardCharsets.UTF_8)).get(30, TimeUnit.SECONDS);
            status.line("CREATED " + sb);
        } else {
            for (String id : new String(ids.get(), StandardCharsets.UTF_8).split(",")) {
                streams.add(storage.openStream(Long.parseLong(id), epoch).get(30, TimeUnit.SECONDS));
            }
        }
        StringBuilder starts = new StringBuilder("READY");
        for (Stream s : streams) {
            starts.append(' ').append(s.streamId()).append('@').append(s.confirmedOffset());
        }
        status.line(starts.toString());

        List<Thread> writers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            List<Stream> mine = new ArrayList<>();
            for (int i = t; i < streams.size(); i += threads) {
                mine.add(streams.get(i));
            }
            Random random = new Random(seed ^ mix(epoch * 31 + t));
            writers.add(Thread.ofPlatform().name("crash-writer-" + t).start(() -> write(mine, seed, random, status, acks, bytesPerSecond)));
        }
        for (Thread w : writers) {
            w.join();
        }
        status.line("STOPPED"); // only after an error: the parent fails the test
        System.exit(3);
    }

    /** Appends to streams this thread alone writes, so it knows each batch's offset before appending it. */
    private static void write(List<Stream> mine, long seed, Random random, LineLog status, LineLog acks,
                              long bytesPerSecond) {
        long[] next = new long[mine.size()];
        for (int i = 0; i < mine.size(); i++) {
            next[i] = mine.get(i).nextOffset();
        }
        Semaphore window = new Semaphore(16);
        java.util.concurrent.atomic.AtomicBoolean failed = new java.util.concurrent.atomic.AtomicBoolean();
        long started = System.nanoTime();
        long sent = 0;
        try {
            while (!failed.get()) {
                // A steady rate (not the disk's best) keeps each cycle's volume, and the recovery after it, bounded.
                long aheadNanos = sent * 1_000_000_000L / bytesPerSecond - (System.nanoTime() - started);
                if (aheadNanos > 0) {
                    Thread.sleep(aheadNanos / 1_000_000, (int) (aheadNanos % 1_000_000));
                }
                window.acquire();
                int i = random.nextInt(mine.size());
                Stream stream = mine.get(i);
                long id = stream.streamId();
                long offset = next[i];
                int count = count(seed, id, offset);
                next[i] = offset + count;
                long epoch = stream.epoch();
                byte[] data = payload(seed, id, offset, epoch);
                sent += data.length;
                stream.append(RecordBatch.of(count, ByteBuffer.wrap(data))).whenComplete((r, error) -> {
                    window.release();
                    if (error != null) {
                        failed.set(true);
                        status.line("ERROR append " + id + " " + offset + ": " + error);
                    } else if (r.baseOffset() != offset) {
                        failed.set(true);
                        status.line("ERROR append " + id + " expected offset " + offset + " got " + r.baseOffset());
                    } else {
                        acks.line(id + " " + offset + " " + count + " " + epoch);
                    }
                });
            }
        } catch (Throwable t) {
            status.line("ERROR writer: " + t);
        }
    }
}
