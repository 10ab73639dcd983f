package io.s3stream.wal.blockdev.internal;

import io.netty.buffer.ByteBuf;
import io.s3stream.spi.WalAppendResult;
import org.junit.jupiter.api.Test;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Out-of-process crash test at the WAL level: a forked JVM appends records with known content (many in flight, with
 * trims that wrap the ring) and prints each acknowledged position; the test kills it with SIGKILL at a random moment,
 * recovers in-process, and checks that every acknowledged, untrimmed record is there byte for byte and that every
 * recovered record is one the child wrote, intact. At least 20 cycles, bounded in time.
 */
class BlockDeviceWalCrashTest {
    private static final long CAPACITY = 8L * 1024 * 1024;
    private static final int CYCLES = 20;

    @Test
    void acknowledgedRecordsSurviveSigkill() throws Exception {
        Path file = Path.of("target").toAbsolutePath().resolve("wal-crash-" + UUID.randomUUID() + ".img");
        long seed = System.nanoTime();
        Random random = new Random(seed);
        TreeMap<Long, Integer> acked = new TreeMap<>(); // position -> payload length, across cycles
        long trimRequested = 0;
        long totalAcked = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(150);
        try {
            for (int cycle = 0; cycle < CYCLES; cycle++) {
                assertThat(System.nanoTime()).as("crash test time budget (seed " + seed + ")").isLessThan(deadline);
                String java = ProcessHandle.current().info().command().orElse("java");
                // The child's stdout goes to a file, not a pipe: a pipe read can be cut short when the process dies,
                // losing lines that were written, and a lost TRIM line would look like lost data.
                Path log = Path.of(file + ".cycle" + cycle + ".log");
                Process child = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx128m",
                        "-cp", System.getProperty("java.class.path"), Child.class.getName(), file.toString(),
                        Long.toString(CAPACITY), Long.toString(2L * cycle + 1), Long.toString(random.nextLong()))
                        .redirectError(ProcessBuilder.Redirect.INHERIT).redirectOutput(log.toFile()).start();
                long killAfterMs = 300 + random.nextInt(900);
                // Kill only once the child is appending, so every cycle crashes mid-write.
                long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (System.nanoTime() < waitUntil && !(Files.exists(log) && Files.readString(log).contains("READY"))) {
                    Thread.sleep(5);
                }
                Thread.sleep(killAfterMs);
                child.destroyForcibly();
                assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
                List<String> lines = Files.readAllLines(log);
                Files.deleteIfExists(log);
                assertThat(lines).as("child started (seed " + seed + ")").contains("READY");
                for (String line : lines) {
                    String[] f = line.split(" ");
                    switch (f[0]) {
                        case "ACK" -> {
                            if (f.length == 3) { // the last line may be cut by the kill
                                acked.put(Long.parseLong(f[1]), Integer.parseInt(f[2]));
                                totalAcked++;
                            }
                        }
                        case "TRIM" -> trimRequested = Math.max(trimRequested, Long.parseLong(f[1]));
                        default -> {
                        }
                    }
                }
                acked.headMap(trimRequested).clear();

                BlockDeviceWal wal = TestWals.open(TestWals.config(file, CAPACITY, 2), 2L * cycle + 2);
                TreeMap<Long, byte[]> recovered = new TreeMap<>();
                var result = wal.recover((p, n, buf) -> {
                    try {
                        byte[] b = new byte[buf.readableBytes()];
                        buf.getBytes(buf.readerIndex(), b);
                        assertThat(recovered.put(p, b)).isNull();
                    } finally {
                        buf.release();
                    }
                });
                wal.close();
                String info = " (seed " + seed + ", cycle " + cycle + ", trimRequested " + trimRequested
                        + ", recovered " + (recovered.isEmpty() ? "none" : recovered.firstKey() + ".." + recovered.lastKey())
                        + ", " + result + ")";
                for (var e : recovered.entrySet()) {
                    assertThat(Child.isIntact(e.getValue())).as("recovered record at " + e.getKey() + " is intact" + info)
                            .isTrue();
                }
                for (var e : acked.entrySet()) {
                    assertThat(recovered).as("acknowledged record at " + e.getKey() + info).containsKey(e.getKey());
                    assertThat(recovered.get(e.getKey())).hasSize(e.getValue());
                }
                // What is recovered is now durable history too: the next cycle must keep it unless it trims it.
                for (var e : recovered.entrySet()) {
                    acked.put(e.getKey(), e.getValue().length);
                }
            }
            assertThat(totalAcked).as("the children acknowledged appends (seed " + seed + ")").isGreaterThan(CYCLES);
            Files.deleteIfExists(file);
        } catch (AssertionError e) {
            System.err.println("kept " + file + " for WalTool");
            throw e;
        }
    }

    /** The forked writer: appends self-checking records and prints ACK/TRIM lines. */
    public static final class Child {
        private Child() {
        }

        /** A record: [length-4][seed-8][crc of the rest? no: bytes derived from the seed]. */
        static byte[] make(Random random) {
            int size = 12 + random.nextInt(random.nextInt(20) == 0 ? 200_000 : 4_000);
            long s = random.nextLong();
            byte[] b = new byte[size];
            ByteBuffer.wrap(b).putInt(size).putLong(s);
            Random content = new Random(s);
            for (int i = 12; i < size; i++) {
                b[i] = (byte) content.nextInt();
            }
            return b;
        }

        static boolean isIntact(byte[] b) {
            if (b.length < 12) {
                return false;
            }
            ByteBuffer bb = ByteBuffer.wrap(b);
            if (bb.getInt() != b.length) {
                return false;
            }
            Random content = new Random(bb.getLong());
            for (int i = 12; i < b.length; i++) {
                if (b[i] != (byte) content.nextInt()) {
                    return false;
                }
            }
            return true;
        }

        public static void main(String[] args) throws Exception {
            Path file = Path.of(args[0]);
            long capacity = Long.parseLong(args[1]);
            long epoch = Long.parseLong(args[2]);
            Random random = new Random(Long.parseLong(args[3]));
            PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
            BlockDeviceWal wal = TestWals.open(TestWals.config(file, capacity, 2), epoch);
            List<WalAppendResult> live = new ArrayList<>();
            long[] liveBytes = {0};
            wal.recover((p, n, buf) -> {
                buf.release();
                synchronized (live) {
                    live.add(new WalAppendResult(p, n));
                    liveBytes[0] += n - p;
                }
            });
            out.println("READY");
            Semaphore window = new Semaphore(64);
            while (true) {
                window.acquire();
                byte[] data = make(random);
                ByteBuf buf = TestWals.buffer(data);
                CompletableFuture<WalAppendResult> f = wal.append(buf);
                f.whenComplete((r, err) -> {
                    buf.release();
                    window.release();
                    if (r != null) {
                        out.println("ACK " + r.walPosition() + " " + data.length);
                        synchronized (live) {
                            live.add(r);
                            liveBytes[0] += r.nextPosition() - r.walPosition();
                        }
                    }
                });
                synchronized (live) {
                    if (liveBytes[0] > capacity / 2) {
                        WalAppendResult upTo = live.get(live.size() / 2);
                        out.println("TRIM " + upTo.nextPosition());
                        wal.trim(upTo.nextPosition());
                        List<WalAppendResult> rest = new ArrayList<>(live.subList(live.size() / 2 + 1, live.size()));
                        live.clear();
                        live.addAll(rest);
                        liveBytes[0] = rest.stream().mapToLong(x -> x.nextPosition() - x.walPosition()).sum();
                    }
                }
            }
        }
    }
}
