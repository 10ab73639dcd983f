package io.s3stream.internal.tool;

import io.netty.buffer.ByteBuf;
import io.s3stream.internal.format.IndexEntry;
import io.s3stream.internal.format.LeakWatch;
import io.s3stream.internal.format.ObjectReader;
import io.s3stream.internal.format.TestObjects;
import io.s3stream.internal.format.TestObjects.BatchSpec;
import io.s3stream.internal.format.TestObjects.Model;
import io.s3stream.internal.format.TestObjects.StreamSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Tests of {@link ObjectDumpTool} on a good object, a damaged block, a damaged footer and bad arguments. */
class ObjectDumpToolTest {

    /** Three blocks: stream 1 [0, 5) in two blocks (target 70 bytes), stream 2 [100, 102) in one. */
    private static final Model MODEL = new Model(List.of(
            new StreamSpec(1, 0, List.of(new BatchSpec(2, bytes(10)), new BatchSpec(1, bytes(10)),
                    new BatchSpec(2, bytes(30)))),
            new StreamSpec(2, 100, List.of(new BatchSpec(2, bytes(5))))), 70);

    @TempDir
    Path dir;

    @BeforeAll
    static void watchLeaks() {
        LeakWatch.install();
    }

    @AfterAll
    static void noLeaks() throws InterruptedException {
        LeakWatch.assertNoLeaks();
    }

    private static byte[] bytes(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i + n);
        }
        return b;
    }

    private record Run(int exitCode, String out, String err) {
    }

    private static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = ObjectDumpTool.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static byte[] object() {
        ByteBuf object = TestObjects.build(MODEL);
        try {
            return TestObjects.bytes(object);
        } finally {
            object.release();
        }
    }

    private static List<IndexEntry> entries(byte[] object) {
        ByteBuf buf = TestObjects.direct(object);
        try {
            return ObjectReader.of(buf, "x").index().entries();
        } finally {
            buf.release();
        }
    }

    @Test
    void dumpsAGoodObject() throws IOException {
        byte[] object = object();
        Path file = Files.write(dir.resolve("good.obj"), object);
        Run r = run(file.toString(), "--batches");
        assertThat(r.exitCode()).as(r.out()).isZero();
        assertThat(r.err()).isEmpty();
        assertThat(r.out()).contains(
                "object " + file + ": " + object.length + " bytes",
                "footer: version=1 indexPosition=",
                "entries=3",
                "block 0: stream=1 offsets=[0, 3) records=3 position=0 size=",
                " crc=OK batches=2",
                "  batch baseOffset=0 count=2 payloadBytes=10",
                "  batch baseOffset=2 count=1 payloadBytes=10",
                "block 1: stream=1 offsets=[3, 5) records=2",
                "  batch baseOffset=3 count=2 payloadBytes=30",
                "block 2: stream=2 offsets=[100, 102) records=2",
                "  batch baseOffset=100 count=2 payloadBytes=5",
                "summary: 3 blocks, 0 bad");
        assertThat(r.out()).doesNotContain("BAD");

        Run brief = run(file.toString());
        assertThat(brief.exitCode()).isZero();
        assertThat(brief.out()).contains("block 2: stream=2").doesNotContain("batch baseOffset");
    }

    @Test
    void reportsACorruptBlockAndStillDumpsTheOthers() throws IOException {
        byte[] object = object();
        IndexEntry middle = entries(object).get(1);
        object[(int) middle.position() + 40] ^= 0x10;   // inside the payload of block 1
        Path file = Files.write(dir.resolve("bad-block.obj"), object);
        Run r = run(file.toString(), "--batches");
        assertThat(r.exitCode()).isEqualTo(ObjectDumpTool.EXIT_CORRUPT);
        String[] lines = r.out().split("\n");
        assertThat(r.out()).contains(
                "  batch baseOffset=0 count=2 payloadBytes=10",
                "  batch baseOffset=100 count=2 payloadBytes=5",
                "summary: 3 blocks, 1 bad");
        assertThat(List.of(lines)).anySatisfy(l -> assertThat(l).startsWith("block 0:").endsWith("crc=OK batches=2"));
        assertThat(List.of(lines)).anySatisfy(l -> assertThat(l).startsWith("block 1:").endsWith("crc=BAD"));
        assertThat(List.of(lines)).anySatisfy(l -> assertThat(l).startsWith("block 2:").endsWith("crc=OK batches=1"));
        assertThat(r.out()).contains("corrupt object '" + file + "' at byte " + (middle.endPosition() - 4)
                + ": block CRC32C expected");
        assertThat(r.out()).doesNotContain("batch baseOffset=3");
    }

    @Test
    void reportsADamagedFooter() throws IOException {
        byte[] object = object();
        object[object.length - 1] ^= 1;
        Path file = Files.write(dir.resolve("bad-footer.obj"), object);
        Run r = run(file.toString());
        assertThat(r.exitCode()).isEqualTo(ObjectDumpTool.EXIT_CORRUPT);
        assertThat(r.out()).contains("BAD corrupt object '" + file + "' at byte " + (object.length - 8)
                + ": footer magic expected");
    }

    @Test
    void usageErrors() {
        assertThat(run().exitCode()).isEqualTo(ObjectDumpTool.EXIT_USAGE);
        assertThat(run("--batches").err()).contains("usage: ObjectDumpTool <object-file> [--batches]");
        assertThat(run(dir.resolve("missing").toString()).exitCode()).isEqualTo(ObjectDumpTool.EXIT_USAGE);
    }
}
