package io.s3stream.wal.blockdev.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@link BlockIo} over Linux system calls made through the FFM API: {@code open(O_DIRECT|O_DSYNC)}, {@code pwrite},
 * {@code pread}, {@code fdatasync}, {@code fstat} and {@code ioctl(BLKGETSIZE64)}, with errno captured per call.
 *
 * <p>Design note: {@code O_DSYNC} makes every {@code pwrite} durable before it returns: the kernel sends the write
 * with FUA, or follows it with a cache flush when the device has a volatile cache but no FUA. That is the same
 * guarantee as {@code fdatasync} after each write, in one system call. {@code O_DIRECT} keeps the page cache (and its
 * copies and write-back) off the path. The flag values differ between architectures; only x86_64 and aarch64 Linux
 * are supported, and anything else is refused when the class loads.
 */
public final class NativeBlockIo implements BlockIo {
    static final int O_RDONLY = 0;
    static final int O_RDWR = 2;
    static final int O_CREAT = 0x40;
    static final int O_EXCL = 0x80;
    static final int O_DSYNC = 0x1000;
    static final int O_CLOEXEC = 0x80000;
    static final int O_DIRECT;
    static final int O_DIRECTORY;
    private static final int STAT_MODE_OFFSET;
    private static final int STAT_SIZE_OFFSET = 48;
    private static final int STAT_BYTES = 256;
    private static final int S_IFMT = 0xF000;
    private static final int S_IFREG = 0x8000;
    private static final int S_IFBLK = 0x6000;
    /** {@code _IOR(0x12, 114, size_t)}: the size of a block device in bytes. */
    private static final long BLKGETSIZE64 = 0x80081272L;

    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final ThreadLocal<MemorySegment> CAPTURE =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CAPTURE_LAYOUT));

    private static final MethodHandle OPEN;
    private static final MethodHandle PWRITE;
    private static final MethodHandle PREAD;
    private static final MethodHandle FDATASYNC;
    private static final MethodHandle FSYNC;
    private static final MethodHandle FSTAT;
    private static final MethodHandle IOCTL;
    private static final MethodHandle CLOSE;

    static {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        if (!os.contains("linux")) {
            throw new UnsupportedOperationException("the blockdev WAL needs Linux (O_DIRECT, O_DSYNC), not " + os);
        }
        switch (arch) {
            case "amd64", "x86_64" -> {
                O_DIRECT = 0x4000;
                O_DIRECTORY = 0x10000;
                STAT_MODE_OFFSET = 24;
            }
            case "aarch64" -> {
                O_DIRECT = 0x10000;
                O_DIRECTORY = 0x4000;
                STAT_MODE_OFFSET = 16;
            }
            default -> throw new UnsupportedOperationException("the blockdev WAL knows the open(2) flags of x86_64 and "
                    + "aarch64 Linux only, not " + arch);
        }
        Linker linker = Linker.nativeLinker();
        Linker.Option errno = Linker.Option.captureCallState("errno");
        OPEN = downcall(linker, "open", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), errno, Linker.Option.firstVariadicArg(2));
        PWRITE = downcall(linker, "pwrite", FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG), errno);
        PREAD = downcall(linker, "pread", FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG), errno);
        FDATASYNC = downcall(linker, "fdatasync", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
                errno);
        FSYNC = downcall(linker, "fsync", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), errno);
        FSTAT = downcall(linker, "fstat", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS), errno);
        IOCTL = downcall(linker, "ioctl", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                ValueLayout.JAVA_LONG, ValueLayout.ADDRESS), errno, Linker.Option.firstVariadicArg(2));
        CLOSE = downcall(linker, "close", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), errno);
    }

    @SuppressWarnings("restricted") // the whole point of this class: native calls through the FFM linker
    private static MethodHandle downcall(Linker linker, String name, FunctionDescriptor fd, Linker.Option... options) {
        MemorySegment symbol = linker.defaultLookup().find(name)
                .orElseThrow(() -> new UnsupportedOperationException("libc has no symbol " + name));
        return linker.downcallHandle(symbol, fd, options);
    }

    private final String path;
    private final int fd;
    private final long sizeBytes;
    private final boolean blockDevice;
    private final boolean direct;
    private final AtomicBoolean closed = new AtomicBoolean();

    private NativeBlockIo(String path, int fd, long sizeBytes, boolean blockDevice, boolean direct) {
        this.path = path;
        this.fd = fd;
        this.sizeBytes = sizeBytes;
        this.blockDevice = blockDevice;
        this.direct = direct;
    }

    /**
     * Opens an existing regular file or block device for direct, synchronous reading and writing.
     *
     * @throws BlockIoException when {@code open} or {@code fstat} fails, or the path is neither a regular file nor
     *                          a block device ({@code errno} {@link Errno#EINVAL} then)
     */
    public static NativeBlockIo open(String path) {
        return open(path, true);
    }

    /** Opens an existing file or block device, read-only when {@code writable} is false (for offline tools). */
    public static NativeBlockIo open(String path, boolean writable) {
        return open(path, writable, true);
    }

    /**
     * Opens an existing file or block device. With {@code direct}, IO bypasses the page cache ({@code O_DIRECT}) and
     * every write is synchronous ({@code O_DSYNC}); without it (a file system that refuses {@code O_DIRECT}), IO goes
     * through the page cache and every {@link #write} is followed by {@code fdatasync} before it returns, so the
     * durability contract is the same.
     */
    public static NativeBlockIo open(String path, boolean writable, boolean direct) {
        int fd = openRaw(path, (writable ? O_RDWR | (direct ? O_DSYNC : 0) : O_RDONLY) | (direct ? O_DIRECT : 0)
                | O_CLOEXEC, 0);
        try {
            long[] modeAndSize = fstat(fd, path);
            int type = (int) modeAndSize[0] & S_IFMT;
            long size;
            boolean block;
            if (type == S_IFREG) {
                size = modeAndSize[1];
                block = false;
            } else if (type == S_IFBLK) {
                size = blockDeviceSize(fd, path);
                block = true;
            } else {
                throw new BlockIoException(path + " is neither a regular file nor a block device (file type 0"
                        + Integer.toOctalString(type) + ")", Errno.EINVAL);
            }
            return new NativeBlockIo(path, fd, size, block, direct);
        } catch (RuntimeException e) {
            closeQuietly(fd);
            throw e;
        }
    }

    /** Creates a new file ({@code O_EXCL}) opened for direct, synchronous IO; its length is zero. */
    public static NativeBlockIo create(String path) {
        return create(path, true);
    }

    /** Creates a new file ({@code O_EXCL}), for direct IO or (without {@code direct}) buffered IO as in {@link #open}. */
    public static NativeBlockIo create(String path, boolean direct) {
        int fd = openRaw(path, O_RDWR | O_CREAT | O_EXCL | (direct ? O_DIRECT | O_DSYNC : 0) | O_CLOEXEC, 0644);
        return new NativeBlockIo(path, fd, 0, false, direct);
    }

    /**
     * Whether {@code open(O_DIRECT)} is accepted for a file in {@code dir}: creates, opens and removes a probe file.
     * False when the file system refuses the flag ({@code EINVAL}); other errors are thrown.
     */
    public static boolean acceptsDirectIo(String dir) {
        String probe = dir + "/.direct-io-probe-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        NativeBlockIo io;
        try {
            io = create(probe, true);
        } catch (BlockIoException e) {
            if (e.errno() == Errno.EINVAL) {
                deleteQuietly(probe);
                return false;
            }
            throw e;
        }
        io.close();
        deleteQuietly(probe);
        return true;
    }

    private static void deleteQuietly(String path) {
        try {
            java.nio.file.Files.deleteIfExists(java.nio.file.Path.of(path));
        } catch (java.io.IOException ignored) {
            // a leftover probe file is harmless
        }
    }

    /** fsyncs a directory, making a rename or create in it durable. */
    public static void syncDirectory(String dir) {
        int fd = openRaw(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        try {
            MemorySegment capture = CAPTURE.get();
            int rc = (int) FSYNC.invokeExact(capture, fd);
            if (rc != 0) {
                throw new BlockIoException("fsync", dir, -1, errno(capture));
            }
        } catch (BlockIoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native fsync failed", t);
        } finally {
            closeQuietly(fd);
        }
    }

    private static int openRaw(String path, int flags, int mode) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cPath = arena.allocateFrom(path);
            MemorySegment capture = CAPTURE.get();
            int fd;
            do {
                fd = (int) OPEN.invokeExact(capture, cPath, flags, mode);
            } while (fd < 0 && errno(capture) == Errno.EINTR);
            if (fd < 0) {
                throw new BlockIoException("open", path, -1, errno(capture));
            }
            return fd;
        } catch (BlockIoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native open failed", t);
        }
    }

    private static long[] fstat(int fd, String path) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment stat = arena.allocate(STAT_BYTES, 8);
            MemorySegment capture = CAPTURE.get();
            int rc = (int) FSTAT.invokeExact(capture, fd, stat);
            if (rc != 0) {
                throw new BlockIoException("fstat", path, -1, errno(capture));
            }
            return new long[]{Integer.toUnsignedLong(stat.get(ValueLayout.JAVA_INT, STAT_MODE_OFFSET)),
                    stat.get(ValueLayout.JAVA_LONG, STAT_SIZE_OFFSET)};
        } catch (BlockIoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native fstat failed", t);
        }
    }

    private static long blockDeviceSize(int fd, String path) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment size = arena.allocate(ValueLayout.JAVA_LONG);
            MemorySegment capture = CAPTURE.get();
            int rc = (int) IOCTL.invokeExact(capture, fd, BLKGETSIZE64, size);
            if (rc != 0) {
                throw new BlockIoException("ioctl(BLKGETSIZE64)", path, -1, errno(capture));
            }
            return size.get(ValueLayout.JAVA_LONG, 0);
        } catch (BlockIoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native ioctl failed", t);
        }
    }

    private static int errno(MemorySegment capture) {
        return (int) ERRNO.get(capture, 0L);
    }

    private static void closeQuietly(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(CAPTURE.get(), fd);
            assert ignored == 0 || ignored == -1;
        } catch (Throwable ignored) {
            // best effort on an error path
        }
    }

    @Override
    public void write(long offset, MemorySegment source) {
        long done = 0;
        long length = source.byteSize();
        MemorySegment capture = CAPTURE.get();
        try {
            while (done < length) {
                long n = (long) PWRITE.invokeExact(capture, fd, source.asSlice(done), length - done, offset + done);
                if (n < 0) {
                    int e = errno(capture);
                    if (e == Errno.EINTR) {
                        continue;
                    }
                    throw new BlockIoException("pwrite of " + length + " bytes", path, offset, e);
                }
                if (n == 0) {
                    throw new BlockIoException("pwrite of " + length + " bytes (wrote nothing)", path, offset,
                            Errno.ENOSPC);
                }
                done += n;
            }
        } catch (BlockIoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native pwrite failed", t);
        }
        if (!direct) {
            sync();
        }
    }

    /** Whether IO bypasses the page cache ({@code O_DIRECT|O_DSYNC}) rather than {@code pwrite} + {@code fdatasync}. */
    public boolean direct() {
        return direct;
    }

    @Override
    public void read(long offset, MemorySegment target) {
        long done = 0;
        long length = target.byteSize();
        MemorySegment capture = CAPTURE.get();
        try {
            while (done < length) {
                long n = (long) PREAD.invokeExact(capture, fd, target.asSlice(done), length - done, offset + done);
                if (n < 0) {
                    int e = errno(capture);
                    if (e == Errno.EINTR) {
                        continue;
                    }
                    throw new BlockIoException("pread of " + length + " bytes", path, offset, e);
                }
                if (n == 0) {
                    throw new BlockIoException("pread of " + length + " bytes hit the end of the target", path,
                            offset, Errno.ENXIO);
                }
                done += n;
            }
        } catch (BlockIoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native pread failed", t);
        }
    }

    @Override
    public void sync() {
        MemorySegment capture = CAPTURE.get();
        try {
            int rc = (int) FDATASYNC.invokeExact(capture, fd);
            if (rc != 0) {
                throw new BlockIoException("fdatasync", path, -1, errno(capture));
            }
        } catch (BlockIoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native fdatasync failed", t);
        }
    }

    @Override
    public long sizeBytes() {
        return sizeBytes;
    }

    @Override
    public boolean isBlockDevice() {
        return blockDevice;
    }

    @Override
    public String path() {
        return path;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            closeQuietly(fd);
        }
    }
}
