package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.UUID;

import static io.s3stream.internal.store.ObjectFileIo.ALIGNMENT;
import static io.s3stream.internal.store.ObjectFileIo.DIRECT_MIN_BYTES;
import static io.s3stream.internal.store.ObjectFileIo.SLICE_BYTES;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Object bytes written and read with {@code O_DIRECT}: padding, lengths, unaligned ranges and the end of the file.
 * The files live under {@code target/}, on the checkout's disk (a {@code @TempDir} may be a tmpfs without direct IO,
 * which would leave the direct paths untested); the disk this project is built on must take {@code O_DIRECT}.
 */
class ObjectFileIoTest {
    private static final long SEED = 0x5EED_F11EL;
    private Path dir;

    @BeforeEach
    void createDirectory() throws IOException {
        dir = Files.createDirectories(Path.of("target", "object-file-io-" + UUID.randomUUID()).toAbsolutePath());
    }

    @AfterEach
    void deleteDirectory() throws IOException {
        FileObjectStore.deleteRecursively(dir);
    }

    @Test
    void theBuildDiskTakesDirectWritesAndTheSettingTurnsThemOff() {
        assertThat(ObjectFileIo.open(dir, true).direct())
                .as("O_DIRECT on %s (ext4 and xfs take it; this test needs a disk that does)", dir).isTrue();
        assertThat(ObjectFileIo.open(dir, false).direct()).isFalse();
        assertThat(dir.toFile().list()).as("the probe file is removed").isEmpty();
    }

    @Test
    void everyLengthComesBackWholeWithTheFileCutToIt() throws IOException {
        Random random = new Random(SEED);
        ObjectFileIo io = ObjectFileIo.open(dir, true);
        int[] lengths = {1, DIRECT_MIN_BYTES - 1, DIRECT_MIN_BYTES, DIRECT_MIN_BYTES + 1, SLICE_BYTES,
            SLICE_BYTES + ALIGNMENT - 1, 3 * SLICE_BYTES + 17, 2 * SLICE_BYTES + ALIGNMENT};
        for (int length : lengths) {
            byte[] content = new byte[length];
            random.nextBytes(content);
            Path file = write(io, "len-" + length, threeComponents(content));
            assertThat(Files.size(file)).as("size of a %d-byte write", length).isEqualTo(length);
            assertThat(Files.readAllBytes(file)).as("content of a %d-byte write", length).isEqualTo(content);
        }
    }

    @Test
    void unalignedRangesAndTheEndOfTheFileReadExactly() throws IOException {
        Random random = new Random(SEED + 1);
        ObjectFileIo io = ObjectFileIo.open(dir, true);
        byte[] content = new byte[2 * SLICE_BYTES + 12_345];
        random.nextBytes(content);
        Path file = write(io, "ranges", Unpooled.wrappedBuffer(content));
        for (int i = 0; i < 200; i++) {
            int position = random.nextInt(content.length - DIRECT_MIN_BYTES);
            int count = DIRECT_MIN_BYTES + random.nextInt(content.length - position - DIRECT_MIN_BYTES + 1);
            ByteBuf read = readDirect(io, file, position, count);
            try {
                assertThat(read.readableBytes()).isEqualTo(count);
                assertThat(bytes(read)).as("[%d, +%d)", position, count)
                        .isEqualTo(Arrays.copyOfRange(content, position, position + count));
            } finally {
                read.release();
            }
        }
        ByteBuf past = readDirect(io, file, content.length - 100_000, 200_000);
        try {
            assertThat(bytes(past)).as("a range past the end holds what the file has")
                    .isEqualTo(Arrays.copyOfRange(content, content.length - 100_000, content.length));
        } finally {
            past.release();
        }
        ByteBuf slices = readDirect(io, file, 5, content.length + 10_000);
        try {
            assertThat(bytes(slices)).as("three slices and the end of the file")
                    .isEqualTo(Arrays.copyOfRange(content, 5, content.length));
        } finally {
            slices.release();
        }
        assertThat(io.readsDirect(DIRECT_MIN_BYTES - 1)).as("small ranges use the page cache").isFalse();
        assertThat(io.readsDirect(DIRECT_MIN_BYTES)).isTrue();
        assertThat(ObjectFileIo.open(dir, false).readsDirect(content.length)).isFalse();
    }

    private static ByteBuf readDirect(ObjectFileIo io, Path file, long position, int count) throws IOException {
        try (FileChannel in = io.openForRead(file, true)) {
            return io.readDirect(in, position, count);
        }
    }

    @Test
    void copiesOfUnalignedRangesOfSeveralFilesComeBackWhole() throws IOException {
        // Part copies (one range of an object) and completions (every part whole) go through one aligned slice: ranges
        // that start and end anywhere, of several files one after the other, lengths around the slice and the page.
        Random random = new Random(SEED + 3);
        byte[][] files = new byte[3][];
        Path[] paths = new Path[files.length];
        ObjectFileIo direct = ObjectFileIo.open(dir, true);
        for (int f = 0; f < files.length; f++) {
            files[f] = new byte[2 * SLICE_BYTES + random.nextInt(SLICE_BYTES)];
            random.nextBytes(files[f]);
            paths[f] = write(direct, "source-" + f, Unpooled.wrappedBuffer(files[f]));
        }
        int[] special = {0, 1, ALIGNMENT - 1, ALIGNMENT, ALIGNMENT + 1, SLICE_BYTES - 1, SLICE_BYTES, SLICE_BYTES + 1};
        for (int round = 0; round < 40; round++) {
            List<ObjectFileIo.CopySource> sources = new java.util.ArrayList<>();
            java.io.ByteArrayOutputStream expected = new java.io.ByteArrayOutputStream();
            for (int k = 1 + random.nextInt(3); k > 0; k--) {
                int f = random.nextInt(files.length);
                int length = random.nextBoolean() ? special[random.nextInt(special.length)]
                        : random.nextInt(files[f].length);
                int position = random.nextInt(files[f].length - length + 1);
                sources.add(new ObjectFileIo.CopySource(paths[f], position, length));
                expected.write(files[f], position, length);
            }
            for (ObjectFileIo io : List.of(direct, ObjectFileIo.open(dir, false))) {
                Path copy = copy(io, "copy-" + round + "-" + io.direct(), sources);
                assertThat(Files.readAllBytes(copy)).as("round %d, direct %s: %s", round, io.direct(), sources)
                        .isEqualTo(expected.toByteArray());
                Files.delete(copy);
            }
        }
        ObjectFileIo.CopySource past = new ObjectFileIo.CopySource(paths[0], files[0].length - 10, 11);
        for (ObjectFileIo io : List.of(direct, ObjectFileIo.open(dir, false))) {
            assertThatThrownBy(() -> copy(io, "past-" + io.direct(), List.of(past)))
                    .isInstanceOf(java.io.EOFException.class)
                    .hasMessageContaining("ended 10 bytes into the 11-byte range");
            assertThatThrownBy(() -> copy(io, "missing-" + io.direct(),
                    List.of(new ObjectFileIo.CopySource(dir.resolve("missing"), 0, 1))))
                    .isInstanceOf(java.nio.file.NoSuchFileException.class);
        }
    }

    @Test
    void writesAndCopiesIntoASharedFileAtAnyOffsetTouchNothingOutsideTheirRange() throws IOException {
        // A part written in place shares its partial first and last pages with its neighbours: whatever the offset and
        // length, the bytes on either side of the range must come back as they were (a direct write would pad them).
        Random random = new Random(SEED + 4);
        byte[] source = new byte[3 * SLICE_BYTES];
        random.nextBytes(source);
        ObjectFileIo direct = ObjectFileIo.open(dir, true);
        Path sourceFile = write(direct, "source", Unpooled.wrappedBuffer(source));
        int[] lengths = {1, ALIGNMENT - 1, ALIGNMENT, ALIGNMENT + 1, DIRECT_MIN_BYTES - 1, DIRECT_MIN_BYTES,
            DIRECT_MIN_BYTES + 1, DIRECT_MIN_BYTES + ALIGNMENT - 3, SLICE_BYTES, SLICE_BYTES + 5};
        for (int round = 0; round < 60; round++) {
            byte[] expected = new byte[2 * SLICE_BYTES + 3 * ALIGNMENT];
            random.nextBytes(expected);
            int length = random.nextBoolean() ? lengths[random.nextInt(lengths.length)]
                    : 1 + random.nextInt(SLICE_BYTES + DIRECT_MIN_BYTES);
            int position = random.nextInt(expected.length - length + 1);
            if (random.nextInt(4) == 0) {
                position -= position % ALIGNMENT; // aligned starts too
            }
            boolean copy = random.nextBoolean();
            int from = random.nextInt(source.length - length + 1);
            for (ObjectFileIo io : List.of(direct, ObjectFileIo.open(dir, false))) {
                Path file = dir.resolve("shared-" + round + "-" + io.direct());
                Files.write(file, expected);
                byte[] content = copy ? Arrays.copyOfRange(source, from, from + length) : randomBytes(random, length);
                try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
                    if (copy) {
                        io.copyAt(List.of(new ObjectFileIo.CopySource(sourceFile, from, length)), channel, file,
                                position);
                    } else {
                        ByteBuf bytes = threeComponents(content);
                        try {
                            io.writeAt(bytes, channel, file, position);
                        } finally {
                            bytes.release();
                        }
                    }
                    channel.force(true);
                }
                byte[] want = expected.clone();
                System.arraycopy(content, 0, want, position, length);
                assertThat(Files.readAllBytes(file)).as("round %d, direct %s, %s of %d bytes at %d", round,
                        io.direct(), copy ? "copy" : "write", length, position).isEqualTo(want);
                Files.delete(file);
            }
        }
    }

    @Test
    void aRangeOfSeveralSourcesIsCutAtTheirBoundaries() {
        Path a = dir.resolve("a");
        Path b = dir.resolve("b");
        List<ObjectFileIo.CopySource> sources = List.of(new ObjectFileIo.CopySource(a, 10, 100),
                new ObjectFileIo.CopySource(b, 0, 50));
        assertThat(ObjectFileIo.range(sources, 0, 0)).isEmpty();
        assertThat(ObjectFileIo.range(sources, 0, 150)).isEqualTo(sources);
        assertThat(ObjectFileIo.range(sources, 90, 20)).containsExactly(new ObjectFileIo.CopySource(a, 100, 10),
                new ObjectFileIo.CopySource(b, 0, 10));
        assertThat(ObjectFileIo.range(sources, 100, 50)).containsExactly(new ObjectFileIo.CopySource(b, 0, 50));
        assertThat(ObjectFileIo.range(sources, 149, 1)).containsExactly(new ObjectFileIo.CopySource(b, 49, 1));
    }

    private static byte[] randomBytes(Random random, int length) {
        byte[] bytes = new byte[length];
        random.nextBytes(bytes);
        return bytes;
    }

    @Test
    void theStoreReadsAndSplitsDirectlyAndRefusesAnUnknownSetting() {
        Random random = new Random(SEED + 2);
        byte[] content = new byte[SLICE_BYTES + 777];
        random.nextBytes(content);
        for (String setting : List.of("", "?directWrites=false")) {
            try (ObjectStore store = ObjectStores.open(dir.resolve("store").toUri() + setting)) {
                store.put("o", Unpooled.wrappedBuffer(content)).join();
                ByteBuf whole = store.get("o").join();
                ByteBuf range = store.get("o", 4_099, 300_001).join();
                List<ByteBuf> parts = store.getSplit("o", 10, new int[] {70_000, 1, 500_000}).join();
                try {
                    assertThat(bytes(whole)).as(setting).isEqualTo(content);
                    assertThat(bytes(range)).isEqualTo(Arrays.copyOfRange(content, 4_099, 304_100));
                    assertThat(bytes(parts.get(0))).isEqualTo(Arrays.copyOfRange(content, 10, 70_010));
                    assertThat(bytes(parts.get(1))).isEqualTo(Arrays.copyOfRange(content, 70_010, 70_011));
                    assertThat(bytes(parts.get(2))).isEqualTo(Arrays.copyOfRange(content, 70_011, 570_011));
                } finally {
                    whole.release();
                    range.release();
                    parts.forEach(ByteBuf::release);
                }
                assertThat(whole.refCnt()).isZero();
                assertThat(parts).allSatisfy(p -> assertThat(p.refCnt()).isZero());
            }
        }
        assertThatThrownBy(() -> ObjectStores.open(dir.resolve("store").toUri() + "?directWrites=sometimes"))
                .isInstanceOf(ObjectStoreException.class)
                .hasMessageContaining("directWrites must be true or false, was 'sometimes'");
    }

    /** Writes {@code content} into a new file as {@link FileObjectStore#writeTemp} does, forced, and releases it. */
    private Path write(ObjectFileIo io, String name, ByteBuf content) throws IOException {
        Path file = dir.resolve(name);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            io.writeAll(content, channel, file);
            channel.force(true);
        } finally {
            content.release();
        }
        return file;
    }

    /** Copies {@code sources} into a new file as {@link FileMultipartUpload} does, forced. */
    private Path copy(ObjectFileIo io, String name, List<ObjectFileIo.CopySource> sources) throws IOException {
        Path file = dir.resolve(name);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            io.copy(sources, channel, file);
            channel.force(true);
        }
        return file;
    }

    /** {@code content} as a composite of three pieces, so that copies into the aligned buffer cross components. */
    private static ByteBuf threeComponents(byte[] content) {
        int a = content.length / 3;
        int b = 2 * content.length / 3;
        CompositeByteBuf composite = Unpooled.compositeBuffer();
        composite.addComponents(true, Unpooled.wrappedBuffer(Arrays.copyOfRange(content, 0, a)),
                Unpooled.directBuffer(b - a).writeBytes(content, a, b - a),
                Unpooled.wrappedBuffer(Arrays.copyOfRange(content, b, content.length)));
        return composite;
    }

    private static byte[] bytes(ByteBuf buf) {
        byte[] out = new byte[buf.readableBytes()];
        buf.getBytes(buf.readerIndex(), out);
        return out;
    }
}
