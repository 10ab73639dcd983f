package io.s3stream.wal.fsx.internal;

import io.s3stream.wal.blockdev.internal.BlockIo;
import io.s3stream.wal.blockdev.internal.BlockIoException;
import io.s3stream.wal.blockdev.internal.Errno;
import io.s3stream.wal.blockdev.internal.NativeBlockIo;
import io.s3stream.wal.blockdev.internal.WalDescriptor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * One address space of {@code segmentCount × segmentBytes} bytes over preallocated segment files
 * {@code seg-0000}, {@code seg-0001}, … in one directory: the ring of a generation of the fsx WAL. An IO that crosses a
 * file boundary is split; every write is durable when it returns (direct IO with {@code O_DSYNC}, or {@code pwrite}
 * followed by {@code fdatasync}). The files are pre-written with zeros when created, so appends never extend a file
 * or allocate blocks: no file-system metadata changes on the append path.
 */
final class SegmentedFileIo implements BlockIo {
    private static final int ZERO_CHUNK_BYTES = 1024 * 1024;

    private final Path directory;
    private final long segmentBytes;
    private final List<NativeBlockIo> files;

    private SegmentedFileIo(Path directory, long segmentBytes, List<NativeBlockIo> files) {
        this.directory = directory;
        this.segmentBytes = segmentBytes;
        this.files = files;
    }

    static Path segmentPath(Path directory, int index) {
        return directory.resolve(String.format("seg-%04d", index));
    }

    /** Creates and pre-writes {@code count} segment files in an existing, empty directory, and opens them. */
    static SegmentedFileIo create(Path directory, int count, long segmentBytes, boolean direct) {
        List<NativeBlockIo> files = new ArrayList<>(count);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment zeros = arena.allocate(ZERO_CHUNK_BYTES, WalDescriptor.BLOCK_BYTES);
            for (int i = 0; i < count; i++) {
                NativeBlockIo file = NativeBlockIo.create(segmentPath(directory, i).toString(), direct);
                files.add(file);
                for (long off = 0; off < segmentBytes; off += ZERO_CHUNK_BYTES) {
                    file.write(off, zeros.asSlice(0, Math.min(ZERO_CHUNK_BYTES, segmentBytes - off)));
                }
                file.sync();
            }
            NativeBlockIo.syncDirectory(directory.toString());
            return new SegmentedFileIo(directory, segmentBytes, files);
        } catch (RuntimeException e) {
            files.forEach(NativeBlockIo::close);
            throw e;
        }
    }

    /** Opens the {@code count} segment files of an existing generation, checking each one's size. */
    static SegmentedFileIo open(Path directory, int count, long segmentBytes, boolean writable, boolean direct) {
        List<NativeBlockIo> files = new ArrayList<>(count);
        try {
            for (int i = 0; i < count; i++) {
                NativeBlockIo file = NativeBlockIo.open(segmentPath(directory, i).toString(), writable, direct);
                files.add(file);
                if (file.sizeBytes() != segmentBytes) {
                    throw new BlockIoException("segment file " + file.path() + " has " + file.sizeBytes()
                            + " bytes, not the " + segmentBytes + " its generation was created with", Errno.EINVAL);
                }
            }
            return new SegmentedFileIo(directory, segmentBytes, files);
        } catch (RuntimeException e) {
            files.forEach(NativeBlockIo::close);
            throw e;
        }
    }

    @Override
    public void write(long offset, MemorySegment source) {
        long done = 0;
        while (done < source.byteSize()) {
            long at = offset + done;
            int index = (int) (at / segmentBytes);
            long within = at % segmentBytes;
            long n = Math.min(source.byteSize() - done, segmentBytes - within);
            file(index, at).write(within, source.asSlice(done, n));
            done += n;
        }
    }

    @Override
    public void read(long offset, MemorySegment target) {
        long done = 0;
        while (done < target.byteSize()) {
            long at = offset + done;
            int index = (int) (at / segmentBytes);
            long within = at % segmentBytes;
            long n = Math.min(target.byteSize() - done, segmentBytes - within);
            file(index, at).read(within, target.asSlice(done, n));
            done += n;
        }
    }

    private NativeBlockIo file(int index, long offset) {
        if (index >= files.size()) {
            throw new BlockIoException("IO at " + offset + " beyond the " + files.size() + " segments of "
                    + directory, Errno.ENXIO);
        }
        return files.get(index);
    }

    @Override
    public void sync() {
        for (NativeBlockIo file : files) {
            file.sync();
        }
    }

    @Override
    public long sizeBytes() {
        return segmentBytes * files.size();
    }

    @Override
    public boolean isBlockDevice() {
        return false;
    }

    @Override
    public String path() {
        return directory.toString();
    }

    boolean direct() {
        return files.getFirst().direct();
    }

    @Override
    public void close() {
        files.forEach(NativeBlockIo::close);
    }
}
