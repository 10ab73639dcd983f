package io.s3stream.testing;

import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamStorage;
import io.s3stream.internal.engine.EngineHooks;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Engine-level crash test, run by each WAL module with its WAL ({@link #walUri}): a forked JVM
 * ({@link EngineCrashChild}) appends to many streams through {@link StreamStorage} on that WAL and a {@code file://}
 * object store, logging every
 * acknowledged append to a file; the test kills it with SIGKILL at a random moment, then reopens the storage in this
 * JVM (recovery with upload) and checks that
 * <ul>
 *   <li>every acknowledged batch is readable byte for byte at its offset, with its count;</li>
 *   <li>each stream is contiguous from offset 0 to its confirmed offset, and every batch there, acknowledged or
 *       not, is one a writer wrote, intact (an unacknowledged tail may be present or absent, never corrupt), and
 *       what was once recovered stays;</li>
 *   <li>the next append gets the offset right after the recovered confirmed offset.</li>
 * </ul>
 * Some cycles crash twice: the second child is killed while {@code StreamStorage.open} is still recovering the
 * first one's WAL. The verifier leaves its own appends in the WAL (halting like a crash) on some cycles, so children
 * also recover and upload on startup. Small budgets make uploads, WAL wrap-around and trims happen every cycle;
 * upload threshold and interval vary per process, and the verifier's 20 ms interval makes the upload ticker fire
 * during its recovery (which once lost acknowledged appends: the uploader raced recovery).
 *
 * <p>{@code -Ds3stream.crash.cycles=N} runs more cycles (default 20), {@code -Ds3stream.crash.seed=S} replays a seed.
 */
public abstract class EngineCrashHarness {
    /** The capacity a subclass gives its WAL: small, so that it wraps around (or needs trims) every cycle. */
    protected static final String WAL_CAPACITY = "8MiB";
    /** Append rate of a child: about one WAL capacity per second, so the ring wraps within most cycles. */
    private static final long CHILD_BYTES_PER_SECOND = 10L << 20;
    private static final int STREAMS = 12;
    private static final int THREADS = 3;

    private record Known(int count, long epoch) {
    }

    private final Map<Long, TreeMap<Long, Known>> known = new HashMap<>(); // stream -> base -> batch, acked or recovered
    private final Map<Long, Long> verifiedEnd = new HashMap<>(); // stream -> content verified below this
    private final Set<Long> epochs = new LinkedHashSet<>(List.of(0L)); // every writer epoch handed out
    private long seed;
    private long epoch;
    private int runs;
    private long ackedBatches;
    private long ackedBytes;
    private long recoveredUnacked;
    private long recoveryUploads;
    private String context = "";

    /** The WAL under test for a node whose data directory is {@code dataDir}, with capacity {@link #WAL_CAPACITY}. */
    protected abstract String walUri(Path dataDir);

    @Test
    void acknowledgedAppendsSurviveSigkill() throws Exception {
        int cycles = Integer.getInteger("s3stream.crash.cycles", 20);
        seed = Long.getLong("s3stream.crash.seed", System.nanoTime());
        Random random = new Random(seed);
        String name = getClass().getSimpleName();
        String banner = name + ": seed " + seed + " (-Ds3stream.crash.seed=" + seed + "), " + cycles
                + " cycles";
        System.out.println(banner);
        System.err.println(banner);
        Path dataDir = Path.of("target").toAbsolutePath().resolve("engine-crash-" + UUID.randomUUID());
        Files.createDirectories(dataDir.resolve("logs"));
        long started = System.nanoTime();
        int recoveryKills = 0;
        int recoveryKillsMidUpload = 0;
        boolean passed = false;
        try {
            for (int cycle = 0; cycle < cycles; cycle++) {
                context = " (seed " + seed + ", cycle " + cycle + ", data " + dataDir + ")";
                long cycleStart = System.nanoTime();
                long ackedBefore = ackedBytes;
                ChildRun run = runChild(dataDir, 300 + random.nextInt(1201), -1);
                assertThat(run.reachedReady).as("the child started appending" + context + run.tail()).isTrue();
                if (cycle % 5 == 3) {
                    // Crash again while the next process is still recovering what this one left in the WAL.
                    for (int attempt = 0; attempt < 3; attempt++) {
                        long before = countFiles(dataDir.resolve("objects/data"));
                        // Half of these kills wait for recovery's first data object (killing between its upload
                        // and the WAL trim), the others land at a random moment of the recovery.
                        ChildRun second = runChild(dataDir, -1, cycle % 10 == 3 ? -1 : random.nextInt(150));
                        if (!second.recovered) {
                            recoveryKills++;
                            if (countFiles(dataDir.resolve("objects/data")) > before) {
                                recoveryKillsMidUpload++; // it had written data objects of its recovery already
                            }
                            break;
                        }
                    }
                }
                long verifyStart = System.nanoTime();
                verify(dataDir, false, random.nextBoolean());
                System.out.println("cycle " + cycle + ": child open " + run.openMs + " ms, acked "
                        + ((ackedBytes - ackedBefore) >> 10) + " KiB, verify "
                        + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - verifyStart) + " ms, cycle "
                        + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cycleStart) + " ms");
            }
            context = " (seed " + seed + ", final full check, data " + dataDir + ")";
            verify(dataDir, true, false);
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);
            String summary = name + ": seed " + seed + ", " + cycles + " cycles, " + runs
                    + " child runs in " + seconds + " s; " + ackedBatches + " acknowledged batches (" + (ackedBytes >> 20)
                    + " MiB, " + ackedBytes / parseCapacity() + " times the WAL capacity), " + recoveredUnacked
                    + " unacknowledged batches recovered, " + recoveryUploads + " objects uploaded by the verifier's "
                    + "recoveries, " + recoveryKills + " kills during recovery (" + recoveryKillsMidUpload
                    + " after it had written objects), " + countFiles(dataDir.resolve("objects/data")) + " data objects";
            System.out.println(summary);
            System.err.println(summary);
            assertThat(ackedBatches).as("acknowledged appends" + context).isGreaterThan(cycles * 10L);
            assertThat(ackedBytes).as("the WAL wrapped around" + context).isGreaterThan(2 * parseCapacity());
            assertThat(recoveryKills).as("kills landed during recovery" + context).isGreaterThan(cycles >= 5 ? 0 : -1);
            passed = true;
        } finally {
            if (passed && !Boolean.getBoolean("s3stream.crash.keep")) {
                TempDirs.deleteTree(dataDir);
            } else {
                System.err.println(name + ": kept " + dataDir + " (seed " + seed + ")");
            }
        }
    }

    // ---------------------------------------------------------------- children

    private static final class ChildRun {
        boolean reachedReady;
        boolean recovered;
        long openMs = -1;
        List<String> status = List.of();
        Path stderr;

        String tail() {
            String err = "";
            try {
                List<String> lines = Files.readAllLines(stderr);
                err = String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
            } catch (IOException e) {
                err = e.toString();
            }
            return "\nchild status: " + status + "\nchild stderr (tail):\n" + err;
        }
    }

    /**
     * Starts a child and SIGKILLs it either {@code runMs} after it started appending or, with {@code runMs < 0},
     * {@code killAfterStartMs} after the engine logged that it opens the WAL (that is, during recovery: scanning the
     * WAL, uploading what it found, trimming), or with {@code killAfterStartMs < 0} as soon as a new data object
     * appears after that (within 2 s). Then ingests its acks.
     */
    private ChildRun runChild(Path dataDir, long runMs, long killAfterStartMs) throws Exception {
        int n = runs++;
        long uploadThreshold = (n % 2 == 0 ? 1L : 4L) << 20;
        long uploadIntervalMs = new long[]{20, 200, 1000}[n % 3];
        long childEpoch = ++epoch;
        epochs.add(childEpoch);
        Path status = dataDir.resolve("logs/status-" + n + ".txt");
        Path ackLog = dataDir.resolve("logs/ack-" + n + ".log");
        Path stderr = dataDir.resolve("logs/stderr-" + n + ".txt");
        String java = ProcessHandle.current().info().command()
                .orElseThrow(() -> new AssertionError("cannot find this JVM's java command to fork a child"));
        Process child = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx256m",
                "-XX:MaxDirectMemorySize=256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.util.logging.SimpleFormatter.format=%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n",
                "-cp", System.getProperty("java.class.path"), EngineCrashChild.class.getName(),
                dataDir.toString(), Long.toString(childEpoch), Long.toString(seed), status.toString(),
                ackLog.toString(), Integer.toString(STREAMS), Integer.toString(THREADS),
                Long.toString(CHILD_BYTES_PER_SECOND), Long.toString(uploadThreshold), Long.toString(uploadIntervalMs),
                walUri(dataDir))
                .redirectErrorStream(true).redirectOutput(stderr.toFile()).start();
        ChildRun run = new ChildRun();
        run.stderr = stderr;
        try {
            String waitFor = runMs >= 0 ? "READY" : "opening WAL";
            Path watched = runMs >= 0 ? status : stderr; // the engine's log line, flushed per record
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!readStatus(watched).contains(waitFor)) {
                if (!child.isAlive() || System.nanoTime() > deadline) {
                    run.status = statusLines(status);
                    fail("the child did not reach " + waitFor + context + run.tail());
                }
                Thread.sleep(2);
            }
            if (runMs < 0 && killAfterStartMs < 0) {
                long objects = countFiles(dataDir.resolve("objects/data"));
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
                while (countFiles(dataDir.resolve("objects/data")) == objects && System.nanoTime() < until) {
                    Thread.sleep(1);
                }
            } else {
                Thread.sleep(runMs >= 0 ? runMs : killAfterStartMs);
            }
            String before = readStatus(status);
            if (before.contains("ERROR") || before.contains("STOPPED")) {
                run.status = statusLines(status);
                fail("the child reported an error" + context + run.tail());
            }
        } finally {
            child.destroyForcibly(); // SIGKILL
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).as("the killed child exited").isTrue();
        }
        run.status = statusLines(status);
        run.reachedReady = run.status.stream().anyMatch(l -> l.startsWith("READY"));
        for (String line : run.status) {
            if (line.startsWith("RECOVERED ")) {
                run.recovered = true;
                run.openMs = Long.parseLong(line.substring("RECOVERED ".length()).trim());
            }
            assertThat(line).as("child status" + context + run.tail()).doesNotStartWith("ERROR");
        }
        ingestAcks(ackLog);
        return run;
    }

    private static String readStatus(Path status) throws IOException {
        return Files.exists(status) ? Files.readString(status) : "";
    }

    /** Whole lines only: a line cut by the kill has no newline yet. */
    private static List<String> statusLines(Path file) throws IOException {
        return wholeLines(readStatus(file));
    }

    private static List<String> wholeLines(String text) {
        int end = text.lastIndexOf('\n');
        return end < 0 ? List.of() : List.of(text.substring(0, end).split("\n"));
    }

    private void ingestAcks(Path ackLog) throws IOException {
        if (!Files.exists(ackLog)) {
            return;
        }
        for (String line : wholeLines(Files.readString(ackLog, StandardCharsets.UTF_8))) {
            String[] f = line.split(" ");
            assertThat(f).as("ack line '" + line + "'" + context).hasSize(4);
            long stream = Long.parseLong(f[0]);
            long base = Long.parseLong(f[1]);
            int count = Integer.parseInt(f[2]);
            long writer = Long.parseLong(f[3]);
            assertThat(count).as("count of acked batch " + stream + "@" + base + context)
                    .isEqualTo(EngineCrashChild.count(seed, stream, base));
            Known previous = known.computeIfAbsent(stream, s -> new TreeMap<>()).put(base, new Known(count, writer));
            if (previous != null && previous.epoch() != writer) {
                fail("stream " + stream + " offset " + base + " was acknowledged at epoch " + writer
                        + " but already held a durable batch of epoch " + previous.epoch() + context);
            }
            ackedBatches++;
            ackedBytes += EngineCrashChild.size(seed, stream, base);
        }
    }

    // ---------------------------------------------------------------- verification

    /**
     * Reopens the storage here (recovering the WAL), checks every stream from where the last check stopped (from 0
     * when {@code full}), appends one batch per stream at the recovered end, then closes or halts like a crash.
     */
    private void verify(Path dataDir, boolean full, boolean halt) throws Exception {
        long verifierEpoch = ++epoch;
        epochs.add(verifierEpoch);
        StreamStorage storage = StreamStorage.open(EngineCrashChild.config(dataDir, walUri(dataDir), 1L << 20, 20));
        boolean halted = false;
        try {
            recoveryUploads += storage.metrics().uploads().objects();
            Optional<byte[]> ids = storage.keyValues().get(EngineCrashChild.STREAMS_KEY).get(30, TimeUnit.SECONDS);
            assertThat(ids).as("stream ids in the key-value space" + context).isPresent();
            for (String idText : new String(ids.get(), StandardCharsets.UTF_8).split(",")) {
                long id = Long.parseLong(idText);
                Stream stream = storage.openStream(id, verifierEpoch).get(30, TimeUnit.SECONDS);
                verifyStream(stream, full);
            }
            if (halt) {
                // The engine's crash hook: stops without uploading, so the batches just appended stay in the WAL for
                // the next child to recover.
                EngineHooks.halt(storage);
                halted = true;
            }
        } finally {
            if (!halted) {
                storage.close();
            }
        }
    }

    private void verifyStream(Stream stream, boolean full) throws Exception {
        long id = stream.streamId();
        TreeMap<Long, Known> batches = known.computeIfAbsent(id, s -> new TreeMap<>());
        String where = " of stream " + id + context;
        long confirmed = stream.confirmedOffset();
        assertThat(stream.startOffset()).as("start offset" + where).isZero();
        assertThat(stream.nextOffset()).as("next offset after reopening" + where).isEqualTo(confirmed);
        if (!batches.isEmpty()) {
            var last = batches.lastEntry();
            assertThat(confirmed).as("confirmed offset covers every acknowledged or recovered batch" + where)
                    .isGreaterThanOrEqualTo(last.getKey() + last.getValue().count());
        }
        long from = full ? 0 : verifiedEnd.getOrDefault(id, 0L);
        assertThat(confirmed).as("confirmed offset" + where).isGreaterThanOrEqualTo(from);
        Set<Long> seen = new HashSet<>();
        long expected = from;
        long lastEpoch = -1;
        while (expected < confirmed) {
            try (FetchResult result = stream.fetch(expected, confirmed, 4 << 20).get(60, TimeUnit.SECONDS)) {
                assertThat(result.batches()).as("fetch at " + expected + where).isNotEmpty();
                for (StoredBatch b : result.batches()) {
                    long base = b.baseOffset();
                    String at = " at offset " + base + where;
                    assertThat(base).as("contiguous batches: base offset" + at).isEqualTo(expected);
                    assertThat(b.count()).as("count" + at).isEqualTo(EngineCrashChild.count(seed, id, base));
                    byte[] actual = new byte[b.payload().remaining()];
                    b.payload().duplicate().get(actual);
                    assertThat(actual.length).as("payload size" + at).isEqualTo(EngineCrashChild.size(seed, id, base));
                    Known k = batches.get(base);
                    if (k != null) {
                        assertThat(k.count()).as("acknowledged count" + at).isEqualTo(b.count());
                        if (!java.util.Arrays.equals(actual, EngineCrashChild.payload(seed, id, base, k.epoch()))) {
                            fail("acknowledged batch" + at + " (epoch " + k.epoch() + ") differs from what was written"
                                    + (writerOf(id, base, actual, -1) >= 0 ? ": it holds the batch of epoch "
                                    + writerOf(id, base, actual, -1) : ": corrupt"));
                        }
                        lastEpoch = k.epoch();
                    } else {
                        long writer = writerOf(id, base, actual, lastEpoch);
                        if (writer < 0) {
                            fail("unacknowledged batch" + at + " is corrupt: it matches no writer's payload");
                        }
                        batches.put(base, new Known(b.count(), writer)); // durable history from now on
                        recoveredUnacked++;
                        lastEpoch = writer;
                    }
                    seen.add(base);
                    expected = b.endOffset();
                }
            }
        }
        assertThat(expected).as("batches end at the confirmed offset" + where).isEqualTo(confirmed);
        for (var e : batches.subMap(from, true, confirmed, false).entrySet()) {
            if (!seen.contains(e.getKey())) {
                fail("acknowledged batch at offset " + e.getKey() + " (count " + e.getValue().count()
                        + ") is not a batch boundary any more" + where);
            }
        }
        verifiedEnd.put(id, confirmed);

        // Appends continue right after the recovered end.
        int count = EngineCrashChild.count(seed, id, confirmed);
        byte[] data = EngineCrashChild.payload(seed, id, confirmed, stream.epoch());
        long base = stream.append(RecordBatch.of(count, ByteBuffer.wrap(data))).get(60, TimeUnit.SECONDS).baseOffset();
        assertThat(base).as("offset of the first append after recovery" + where).isEqualTo(confirmed);
        assertThat(stream.confirmedOffset()).as("confirmed offset after that append" + where).isEqualTo(confirmed + count);
        batches.put(base, new Known(count, stream.epoch()));
        ackedBatches++;
        ackedBytes += data.length;
    }

    /** The writer epoch whose payload for (stream, base) equals {@code actual}, or -1; tries {@code hint} first. */
    private long writerOf(long stream, long base, byte[] actual, long hint) {
        if (hint >= 0 && java.util.Arrays.equals(actual, EngineCrashChild.payload(seed, stream, base, hint))) {
            return hint;
        }
        List<Long> all = new ArrayList<>(epochs);
        for (int i = all.size() - 1; i >= 0; i--) {
            if (java.util.Arrays.equals(actual, EngineCrashChild.payload(seed, stream, base, all.get(i)))) {
                return all.get(i);
            }
        }
        return -1;
    }

    // ---------------------------------------------------------------- helpers

    private static long parseCapacity() {
        return Long.parseLong(WAL_CAPACITY.replace("MiB", "")) << 20;
    }

    /**
     * Regular files under {@code dir}, counted while the child writes there: a file or directory that vanishes under
     * the walk (a temporary file renamed into place, an object deleted) starts the count over.
     */
    private static long countFiles(Path dir) throws IOException {
        for (int attempt = 0; ; attempt++) {
            if (!Files.exists(dir)) {
                return 0;
            }
            try (var files = Files.walk(dir)) {
                return files.filter(Files::isRegularFile).count();
            } catch (java.io.UncheckedIOException | java.nio.file.NoSuchFileException e) {
                if (attempt == 100) {
                    throw e;
                }
            }
        }
    }
}
