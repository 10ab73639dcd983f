package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.testing.ChildOutput;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SIGKILL of a process in the middle of {@link FileObjectStore#put}s: every acknowledged object reads back whole, the
 * one in flight is either absent or whole, and the temporary file the kill left behind is invisible and deleted by a
 * later open once it is old enough ({@link AbandonedUploads#reclaimScratch}).
 */
class FileStoreCrashTest {
    private static final int OBJECT_BYTES = 32 << 20;
    private static final int ROUNDS = 3;

    @TempDir
    Path dir;

    @Test
    void aPutKilledMidWriteLosesNoAcknowledgedObjectAndItsTemporaryFileIsReclaimed() throws Exception {
        Path root = dir.resolve("objects");
        int roundsLeavingScratch = 0;
        for (int round = 0; round < ROUNDS; round++) {
            Path out = dir.resolve("child-" + round + ".out");
            Process child = new ProcessBuilder(ProcessHandle.current().info().command().orElse("java"),
                    "-cp", System.getProperty("java.class.path"), Worker.class.getName(), root.toString(),
                    Integer.toString(round))
                    .redirectOutput(out.toFile()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (ChildOutput.last(out, "WRITING ") < 2) {
                assertThat(child.isAlive()).as("child alive").isTrue();
                assertThat(System.nanoTime()).as("child started its third put in time").isLessThan(deadline);
                Thread.sleep(1);
            }
            Thread.sleep(3); // into the put: its temporary file is being written (tens of milliseconds for 32 MiB)
            child.destroyForcibly(); // SIGKILL
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
            long acked = ChildOutput.last(out, "ACK ");

            List<Path> scratch = scratchFiles(root);
            if (!scratch.isEmpty()) {
                roundsLeavingScratch++;
            }
            try (FileObjectStore store = FileObjectStore.open(root, 5 << 20)) {
                assertThat(store.scratchReclaimed().join()).as("fresh leftovers may be another process's writes")
                        .isZero();
                List<ObjectInfo> objects = store.list("r" + round + "/").join();
                assertThat((long) objects.size() - 1).as("every acknowledged put, at most the one in flight more")
                        .isBetween(acked, acked + 1);
                for (int n = 0; n < objects.size(); n++) {
                    assertThat(objects.get(n).key()).isEqualTo(key(round, n));
                    ByteBuf read = store.get(key(round, n)).join();
                    try {
                        assertThat(ByteBufUtil.getBytes(read)).as("%s whole", key(round, n))
                                .isEqualTo(content(round, n));
                    } finally {
                        read.release();
                    }
                }
            }
            FileTime dayAndHourAgo = FileTime.from(Instant.now().minus(AbandonedUploads.ABANDONED_AFTER)
                    .minusSeconds(3600));
            for (Path file : scratch) {
                Files.setLastModifiedTime(file, dayAndHourAgo);
            }
            try (FileObjectStore store = FileObjectStore.open(root, 5 << 20)) {
                assertThat(store.scratchReclaimed().join()).isEqualTo(scratch.size());
                assertThat(scratchFiles(root)).isEmpty();
                assertThat(store.list("r" + round + "/").join()).hasSizeBetween((int) acked + 1, (int) acked + 2);
            }
        }
        assertThat(roundsLeavingScratch).as("a kill landed inside a put in at least one of %d rounds", ROUNDS)
                .isPositive();
    }

    /** The store's scratch files under {@code root}, staging excepted (none here: no multipart uploads). */
    private static List<Path> scratchFiles(Path root) throws IOException {
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(f -> FileObjectStore.isScratchFile(f.getFileName().toString())).toList();
        }
    }

    static String key(int round, int n) {
        return String.format("r%d/%06d", round, n);
    }

    /** Object {@code n} of a round: seeded bytes with its number in the first eight, so no two objects are equal. */
    static byte[] content(int round, int n) {
        byte[] bytes = pattern(round);
        ByteBuffer.wrap(bytes).putLong(n);
        return bytes;
    }

    private static byte[] pattern(int round) {
        byte[] bytes = new byte[OBJECT_BYTES];
        new SplittableRandom(round).nextBytes(bytes);
        return bytes;
    }

    /** The child: puts objects of {@link #OBJECT_BYTES} until killed, saying when each starts and is acknowledged. */
    public static final class Worker {
        public static void main(String[] args) {
            Path root = Path.of(args[0]);
            int round = Integer.parseInt(args[1]);
            PrintStream out = System.out;
            byte[] bytes = pattern(round); // made once: the time between puts is the rename, not the filling
            try (FileObjectStore store = FileObjectStore.open(root, 5 << 20)) {
                for (int n = 0; ; n++) {
                    ByteBuffer.wrap(bytes).putLong(n);
                    out.println("WRITING " + n);
                    out.flush();
                    store.put(key(round, n), Unpooled.wrappedBuffer(bytes)).join();
                    out.println("ACK " + n);
                    out.flush();
                }
            }
        }
    }
}
