package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Writes and reads the content of a {@link FileObjectStore}'s files: large content written in slices forced one at a
 * time, and object bytes written and read through {@code O_DIRECT} when the file system accepts it.
 *
 * <h2>Slices</h2>
 * Content larger than {@link #SLICE_BYTES} goes in slices, each forced but the last (the caller forces the end), one
 * slice of the store at a time: a store on the WAL's disk must not leave a whole object dirty for one flush at the
 * end, nor let compaction's concurrent part copies flush several at once, because the device then writes tens of MiB
 * in one go and every WAL write queued behind waits for it (measured: producer p99.9 49–86 ms instead of 12–19 ms in a
 * round meeting compaction at 10,000 rec/s; benchmarks/README.md). A direct read of more than a slice likewise goes
 * one slice per request, taking the same turns, and so do the reads of a copy ({@link #copy}: a part copy or a
 * multipart completion), which through the page cache came with the kernel's read-ahead, two 4 MiB requests at a
 * time ahead of the WAL's writes.
 *
 * <h2>Direct IO</h2>
 * A buffered write copies every byte into the page cache, and the objects of a node are written once and read, if at
 * all, through the block cache: on the machine of benchmarks/README.md that copy was a quarter of a broker's CPU under
 * unthrottled produce. Object bytes ({@link #writeAll} of at least {@link #DIRECT_MIN_BYTES}) are therefore copied
 * into one page-aligned buffer a slice at a time and written with {@code O_DIRECT}; the last slice is padded to the
 * alignment and the file cut back to its length before the caller forces it, so durability is unchanged (the force
 * still flushes the device's cache and the file's size). A file system that refuses {@code O_DIRECT} (older tmpfs,
 * some FUSE file systems) is found by a probe at open and written through the page cache, as is everything with
 * {@code directWrites=false}. Ranges of at least {@link #DIRECT_MIN_BYTES} are read the same way ({@link #readDirect}:
 * the aligned pages around the range, into one pooled buffer), so catch-up reads do not fill the page cache either,
 * and copies read their sources' pages and write their target's slices directly, through two such buffers;
 * a reader of a file written through the page cache (before this, or by a store with direct IO off) still reads the
 * same bytes, since the kernel keeps direct and cached IO of one file coherent.
 *
 * <h2>Shared files</h2>
 * The parts of a multipart upload are written in place, concurrently, into one file ({@link #writeAt},
 * {@link #copyAt}), at whatever offsets their lengths put them. A direct write covers whole pages, so a part that
 * starts or ends inside a page would pad over its neighbour's bytes of that page. Such a part therefore writes only
 * its whole pages with {@code O_DIRECT} and its partial first and last page (under a page each) through the page
 * cache: two writers of one page then both go through the page cache, which merges them, and no page is ever written
 * both ways at once. The caller's force flushes the cached edges with the rest.
 */
final class ObjectFileIo {
    /** Bytes of a large write between forces, and of a large direct read per request (see "Slices"). */
    static final int SLICE_BYTES = 1 << 20;
    /** Alignment of a direct write's memory, file position and length: the largest logical block size in use. */
    static final int ALIGNMENT = 4096;
    /** Content and ranges smaller than this (manifests, leases, indexes, footers) go through the page cache. */
    static final int DIRECT_MIN_BYTES = 64 << 10;

    /**
     * {@code com.sun.nio.file.ExtendedOpenOption.DIRECT}, looked up rather than named: javac reports every use of a
     * {@code jdk.unsupported} type as a warning no annotation silences. Null on a JDK without it (no direct writes).
     */
    private static final OpenOption DIRECT = directOption();

    /** Held while one slice of a large write or copy reaches the device (see "Slices"). */
    private final ReentrantLock bulkSlices = new ReentrantLock(true);
    private final boolean direct;

    private ObjectFileIo(boolean direct) {
        this.direct = direct;
    }

    /**
     * The file IO of the store in {@code root}; with {@code directWrites}, object bytes are written and read with
     * {@code O_DIRECT} if a probe file in {@code root} takes an aligned direct write.
     */
    static ObjectFileIo open(Path root, boolean directWrites) {
        return new ObjectFileIo(directWrites && directWritesWork(root));
    }

    /** Whether object bytes are written and read with {@code O_DIRECT}. */
    boolean direct() {
        return direct;
    }

    private static OpenOption directOption() {
        try {
            return (OpenOption) Class.forName("com.sun.nio.file.ExtendedOpenOption").getField("DIRECT").get(null);
        } catch (ReflectiveOperationException | LinkageError | ClassCastException e) {
            return null;
        }
    }

    private static boolean directWritesWork(Path root) {
        if (DIRECT == null) {
            return false;
        }
        Path probe = root.resolve(FileObjectStore.DIRECT_PROBE_PREFIX + UUID.randomUUID());
        ByteBuf memory = PooledByteBufAllocator.DEFAULT.directBuffer(2 * ALIGNMENT);
        try (FileChannel channel = FileChannel.open(probe, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                DIRECT)) {
            ByteBuffer page = aligned(memory, ALIGNMENT);
            while (page.hasRemaining()) {
                channel.write(page, page.position());
            }
            return true;
        } catch (IOException | UnsupportedOperationException e) {
            return false; // EINVAL from open or write: the file system has no direct IO
        } finally {
            memory.release();
            try {
                Files.deleteIfExists(probe);
            } catch (IOException ignored) {
                // a probe left behind carries the reserved prefix: never a key
            }
        }
    }

    /** Writes {@code bytes} at the start of the new file {@code file}, open as {@code channel}. */
    void writeAll(ByteBuf bytes, FileChannel channel, Path file) throws IOException {
        write(bytes, channel, file, 0, true);
    }

    /**
     * Writes {@code bytes} at {@code position} of {@code file}, open as {@code channel}, a file whose other ranges
     * other writers may be filling at the same time: a part written in place into its multipart upload's object. Any
     * position works; nothing outside the range is written (see "Shared files").
     */
    void writeAt(ByteBuf bytes, FileChannel channel, Path file, long position) throws IOException {
        write(bytes, channel, file, position, false);
    }

    /**
     * Writes {@code bytes} at {@code position}; {@code cut}: a new file written from its start, whose last page may be
     * padded and then cut back, instead of a shared one whose partial pages go through the page cache.
     */
    private void write(ByteBuf bytes, FileChannel channel, Path file, long position, boolean cut) throws IOException {
        int index = bytes.readerIndex();
        int length = bytes.readableBytes();
        if (!direct || length < DIRECT_MIN_BYTES) {
            writeCached(bytes, index, length, channel, position);
            return;
        }
        Edges edges = cut ? Edges.NONE : Edges.of(position, length);
        writeCached(bytes, index, edges.head(), channel, position);
        int middle = length - edges.head() - edges.tail();
        if (middle > 0) {
            try (DirectSink sink = new DirectSink(file, position + edges.head(), middle)) {
                int done = 0;
                while (done < middle) {
                    int n = Math.min(sink.room(), middle - done);
                    sink.put(bytes, index + edges.head() + done, n);
                    done += n;
                }
                sink.finish(channel, cut);
            }
        }
        writeCached(bytes, index + length - edges.tail(), edges.tail(), channel, position + length - edges.tail());
    }

    /** Writes {@code length} bytes of {@code bytes} from {@code index} at {@code position}, through the page cache. */
    private void writeCached(ByteBuf bytes, int index, int length, FileChannel channel, long position)
            throws IOException {
        transferSliced(channel, length,
                (done, max) -> bytes.getBytes(index + (int) done, channel, position + done, (int) max));
    }

    /**
     * The partial pages at the ends of a range written into a shared file: {@code head} bytes up to the first page
     * boundary, {@code tail} bytes after the last; the rest, whole pages, is written directly.
     */
    private record Edges(int head, int tail) {
        static final Edges NONE = new Edges(0, 0);

        static Edges of(long position, long length) {
            int head = (int) Math.min(length, (ALIGNMENT - position % ALIGNMENT) % ALIGNMENT);
            return new Edges(head, (int) ((length - head) % ALIGNMENT));
        }
    }

    /** A range of a file to copy: {@code length} bytes from {@code position} of {@code path}. */
    record CopySource(Path path, long position, long length) {
    }

    /**
     * Writes the sources' ranges one after the other at the start of the new file {@code file}, open as
     * {@code channel}: a part copy (one range of an object) or a multipart completion (its parts). With direct
     * IO the ranges are read and the file written with {@code O_DIRECT}, a slice per request, one slice of the store
     * at a time, as a large write and a large direct read are: a copy through the page cache would read its source
     * with the kernel's read-ahead (4 MiB requests, two at a time on the machine of benchmarks/README.md), holding the
     * device for milliseconds ahead of every WAL write, and would fill the page cache with data nobody reads again.
     *
     * @throws EOFException        if a source ends before its range does
     * @throws NoSuchFileException if a source does not exist
     */
    void copy(List<CopySource> sources, FileChannel channel, Path file) throws IOException {
        copy(sources, channel, file, 0, true);
    }

    /**
     * {@link #copy}, into {@code position} of a file that other writers may share, under the terms of
     * {@link #writeAt}.
     */
    void copyAt(List<CopySource> sources, FileChannel channel, Path file, long position) throws IOException {
        copy(sources, channel, file, position, false);
    }

    /** {@link #write}'s terms, {@code cut} included, for the bytes of {@code sources}. */
    private void copy(List<CopySource> sources, FileChannel channel, Path file, long position, boolean cut)
            throws IOException {
        long length = 0;
        for (CopySource source : sources) {
            length += source.length();
        }
        if (!direct) {
            copyCached(sources, channel, position);
            return;
        }
        Edges edges = cut ? Edges.NONE : Edges.of(position, length);
        copyCached(range(sources, 0, edges.head()), channel, position);
        long middle = length - edges.head() - edges.tail();
        if (middle > 0 || cut) {
            boolean sliced = middle > SLICE_BYTES;
            try (DirectSink sink = new DirectSink(file, position + edges.head(), middle)) {
                // The pages around a range of at most a slice: one page more than the slice.
                ByteBuf memory = PooledByteBufAllocator.DEFAULT.directBuffer(sink.sliceBytes() + 2 * ALIGNMENT);
                try {
                    copy(range(sources, edges.head(), middle), sink, aligned(memory, sink.sliceBytes() + ALIGNMENT),
                            sliced);
                } finally {
                    memory.release();
                }
                sink.finish(channel, cut);
            }
        }
        copyCached(range(sources, length - edges.tail(), edges.tail()), channel, position + length - edges.tail());
    }

    /** Writes the bytes of {@code sources} at {@code position} of {@code channel}, through the page cache. */
    private void copyCached(List<CopySource> sources, FileChannel channel, long position) throws IOException {
        channel.position(position); // transferTo writes at the channel's position
        for (CopySource source : sources) {
            try (FileChannel in = FileChannel.open(source.path(), StandardOpenOption.READ)) {
                transferSliced(channel, source.length(), (done, max) -> {
                    long n = in.transferTo(source.position() + done, max, channel);
                    if (n <= 0) {
                        throw ended(source, done);
                    }
                    return n;
                });
            }
        }
    }

    /** The ranges of {@code sources} that hold bytes {@code [from, from + length)} of their concatenation. */
    static List<CopySource> range(List<CopySource> sources, long from, long length) {
        List<CopySource> range = new ArrayList<>(1);
        long start = 0; // of the current source in the concatenation
        for (CopySource source : sources) {
            long end = start + source.length();
            long first = Math.max(from, start);
            long last = Math.min(from + length, end);
            if (first < last) {
                range.add(new CopySource(source.path(), source.position() + first - start, last - first));
            }
            start = end;
        }
        return range;
    }

    private void copy(List<CopySource> sources, DirectSink sink, ByteBuffer pages, boolean sliced) throws IOException {
        for (CopySource source : sources) {
            try (FileChannel in = FileChannel.open(source.path(), StandardOpenOption.READ, DIRECT)) {
                long done = 0;
                while (done < source.length()) {
                    int n = (int) Math.min(sink.room(), source.length() - done);
                    long position = source.position() + done;
                    long start = position & -ALIGNMENT;
                    int offset = (int) (position - start);
                    pages.clear().limit(roundUp(offset + n));
                    int read = readPages(in, start, pages, pages.capacity(), sliced);
                    if (read < offset + n) {
                        throw ended(source, done + Math.max(0, read - offset));
                    }
                    sink.put(pages.limit(offset + n).position(offset));
                    done += n;
                }
            }
        }
    }

    private static EOFException ended(CopySource source, long present) {
        return new EOFException(source.path() + " ended " + present + " bytes into the " + source.length()
                + "-byte range at " + source.position() + " being copied");
    }

    /**
     * Reads the pages from {@code start} into {@code pages} (aligned, a multiple of the alignment long) with the
     * direct channel {@code in}, at most {@code requestBytes} per request and, if {@code sliced}, one request of the
     * store at a time; returns how many bytes it read, fewer than asked only at the end of the file.
     */
    private int readPages(FileChannel in, long start, ByteBuffer pages, int requestBytes, boolean sliced)
            throws IOException {
        int span = pages.limit();
        int base = pages.position();
        while (pages.hasRemaining()) {
            pages.limit(Math.min(span, pages.position() + requestBytes));
            int n;
            if (sliced) {
                bulkSlices.lock();
            }
            try {
                n = in.read(pages, start + pages.position() - base);
            } finally {
                if (sliced) {
                    bulkSlices.unlock();
                }
            }
            if (n <= 0 || pages.position() % ALIGNMENT != 0) {
                break; // the end of the file: a direct read stops short only there
            }
            pages.limit(span);
        }
        return pages.position() - base;
    }

    /** Whether a range of {@code count} bytes is read with {@code O_DIRECT}, from a file opened {@code direct}. */
    boolean readsDirect(long count) {
        return direct && count >= DIRECT_MIN_BYTES;
    }

    /**
     * Opens {@code file} to read, with {@code O_DIRECT} if {@code direct}, as {@link #readDirect(FileChannel, long,
     * int)} needs.
     */
    FileChannel openForRead(Path file, boolean direct) throws IOException {
        return direct ? FileChannel.open(file, StandardOpenOption.READ, DIRECT)
                : FileChannel.open(file, StandardOpenOption.READ);
    }

    /**
     * Reads {@code count} bytes at {@code position} of the file {@code in}, opened with {@link #openForRead
     * openForRead(file, true)}, into one pooled buffer. The aligned pages around the range are read; the buffer
     * returned holds the range only, and fewer readable bytes than {@code count} if the file ended first. The caller
     * reads the size of the file through the same channel, so the two belong to the same object.
     */
    ByteBuf readDirect(FileChannel in, long position, int count) throws IOException {
        long start = position & -ALIGNMENT;
        long end = (position + count + ALIGNMENT - 1) & -ALIGNMENT;
        int span = Math.toIntExact(end - start);
        ByteBuf memory = PooledByteBufAllocator.DEFAULT.directBuffer(span + ALIGNMENT);
        try {
            int base = alignedOffset(memory);
            // A large read goes one slice per request, one slice of the store at a time, like a large write: a
            // 16 MiB compaction read in one request would hold the device's queue for ~15 ms ahead of the WAL.
            int pages = readPages(in, start, memory.nioBuffer(base, span), SLICE_BYTES, span > SLICE_BYTES);
            int offset = base + (int) (position - start);
            int read = (int) Math.min(count, Math.max(0, start + pages - position));
            return memory.retainedSlice(offset, read);
        } finally {
            memory.release();
        }
    }

    /** Moves up to {@code max} bytes into the target at position {@code done}; returns how many it moved (> 0). */
    @FunctionalInterface
    interface SliceTransfer {
        long transfer(long done, long max) throws IOException;
    }

    /** Moves {@code length} bytes into {@code out} through {@code transfer}, in slices as "Slices" above describes. */
    void transferSliced(FileChannel out, long length, SliceTransfer transfer) throws IOException {
        boolean sliced = length > SLICE_BYTES;
        long done = 0;
        while (done < length) {
            long end = Math.min(length, done + SLICE_BYTES);
            if (sliced) {
                bulkSlices.lock();
            }
            try {
                while (done < end) {
                    long moved = transfer.transfer(done, end - done);
                    if (moved <= 0) {
                        throw new IOException("no progress with " + (length - done) + " bytes left to write");
                    }
                    done += moved;
                }
                if (sliced && done < length) {
                    out.force(false);
                }
            } finally {
                if (sliced) {
                    bulkSlices.unlock();
                }
            }
        }
    }

    /**
     * Object bytes on their way into a file with {@code O_DIRECT} from an aligned position on, put at most
     * {@link #room()} at a time: each full slice is written at its aligned position and, but the last, forced, holding
     * the store's slice turn while it reaches the device (see "Slices"); {@link #finish} writes the rest padded to the
     * alignment and, for a new file, cuts the file back to its length, which the caller then forces.
     */
    private final class DirectSink implements AutoCloseable {
        private final long position;
        private final long length;
        private final boolean sliced;
        private final ByteBuf memory;
        private final ByteBuffer slice;
        private final FileChannel out;
        private long written;

        DirectSink(Path file, long position, long length) throws IOException {
            if (position % ALIGNMENT != 0) {
                throw new IllegalArgumentException("direct write at " + position + ", not a multiple of " + ALIGNMENT);
            }
            this.position = position;
            this.length = length;
            this.sliced = length > SLICE_BYTES;
            // A slice, or the length rounded up to the alignment if smaller.
            int capacity = (int) Math.min(SLICE_BYTES, Math.max(ALIGNMENT, (length + ALIGNMENT - 1) & -ALIGNMENT));
            this.memory = PooledByteBufAllocator.DEFAULT.directBuffer(capacity + ALIGNMENT);
            this.slice = aligned(memory, capacity);
            try {
                this.out = FileChannel.open(file, StandardOpenOption.WRITE, DIRECT);
            } catch (IOException | RuntimeException e) {
                memory.release();
                throw e;
            }
        }

        /** Bytes of a slice of this file. */
        int sliceBytes() {
            return slice.capacity();
        }

        /** Bytes the current slice has room for (never 0 before the length is reached). */
        int room() {
            return slice.remaining();
        }

        /** Puts {@code n} (at most {@link #room()}) bytes of {@code bytes} from {@code index}. */
        void put(ByteBuf bytes, int index, int n) throws IOException {
            bytes.getBytes(index, slice.duplicate().limit(slice.position() + n));
            slice.position(slice.position() + n);
            writeIfFull();
        }

        /** Puts the remaining bytes (at most {@link #room()}) of {@code bytes}. */
        void put(ByteBuffer bytes) throws IOException {
            slice.put(bytes);
            writeIfFull();
        }

        private void writeIfFull() throws IOException {
            if (!slice.hasRemaining()) {
                write(written + slice.capacity() < length);
            }
        }

        /** Writes what is left, padded, and if {@code cut} cuts the file given as {@code channel} back to the length. */
        void finish(FileChannel channel, boolean cut) throws IOException {
            if (slice.position() > 0) {
                int padded = roundUp(slice.position());
                while (slice.position() < padded) {
                    slice.put((byte) 0);
                }
                slice.limit(padded);
                write(false);
            }
            if (cut && channel.size() != position + length) {
                channel.truncate(position + length); // the padding of the last page
            }
        }

        private void write(boolean force) throws IOException {
            slice.flip();
            if (sliced) {
                bulkSlices.lock();
            }
            try {
                while (slice.hasRemaining()) {
                    out.write(slice, position + written + slice.position());
                }
                if (force) {
                    out.force(false);
                }
            } finally {
                if (sliced) {
                    bulkSlices.unlock();
                }
            }
            written += slice.limit();
            slice.clear();
        }

        @Override
        public void close() throws IOException {
            try {
                out.close();
            } finally {
                memory.release();
            }
        }
    }

    private static int roundUp(int bytes) {
        return (bytes + ALIGNMENT - 1) & -ALIGNMENT;
    }

    /** A {@code length}-byte view at an aligned address of {@code memory}, which has room for it plus the alignment. */
    private static ByteBuffer aligned(ByteBuf memory, int length) {
        return memory.nioBuffer(alignedOffset(memory), length);
    }

    /** The first index of {@code memory} at an aligned address. */
    private static int alignedOffset(ByteBuf memory) {
        int misalignment = memory.nioBuffer(0, memory.capacity()).alignmentOffset(0, ALIGNMENT);
        return misalignment == 0 ? 0 : ALIGNMENT - misalignment;
    }
}
