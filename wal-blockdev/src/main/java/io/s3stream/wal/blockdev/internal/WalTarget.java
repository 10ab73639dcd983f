package io.s3stream.wal.blockdev.internal;

import io.s3stream.InvalidConfigException;
import io.s3stream.StorageIOException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.SecureRandom;

import static io.s3stream.wal.blockdev.internal.WalDescriptor.BLOCK_BYTES;

/**
 * Opens the file or device a WAL URI names, creating and pre-writing a file on first use, and checks its size.
 *
 * <p>Design note: a new file is written in full with zeros (not {@code fallocate}d) because synchronous writes into
 * unwritten extents also commit file-system metadata and were 3 to 8 times slower on this class of machine. It is
 * built under a temporary name and renamed into place, so a crash while creating leaves no half-sized WAL behind.
 */
public final class WalTarget {
    private static final System.Logger LOG = System.getLogger(WalTarget.class.getName());

    private static final int ZERO_CHUNK_BYTES = 1024 * 1024;

    private WalTarget() {
    }

    /** Opens (creating if it is a missing file) the target and returns its IO with the WAL capacity to use. */
    public static Opened open(BlockDeviceWalConfig config) {
        Path path = config.path();
        if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS) && !Files.exists(path)) {
            long capacity = config.capacityBytes() > 0 ? config.capacityBytes()
                    : BlockDeviceWalConfig.DEFAULT_CAPACITY_BYTES;
            checkCapacity(path, capacity, "requested capacity");
            create(path, capacity);
        }
        if (Files.isDirectory(path)) {
            throw new InvalidConfigException(path + " is a directory; a blockdev WAL needs a regular file or a block "
                    + "device (for example " + path.resolve("wal.img") + ")");
        }
        checkFileType(path);
        NativeBlockIo io;
        try {
            io = NativeBlockIo.open(path.toString());
        } catch (BlockIoException e) {
            throw new InvalidConfigException("cannot open the WAL target " + path + ": " + e.getMessage(), e);
        }
        try {
            long size = io.sizeBytes();
            String kind = io.isBlockDevice() ? "block device" : "file";
            if (size % BLOCK_BYTES != 0) {
                throw new InvalidConfigException("WAL " + kind + " " + path + " has a size of " + size
                        + " bytes, not a multiple of " + BLOCK_BYTES + " (unaligned)");
            }
            long capacity;
            if (io.isBlockDevice()) {
                capacity = config.capacityBytes() > 0 ? config.capacityBytes() : size;
                if (capacity > size) {
                    throw new InvalidConfigException("WAL block device " + path + " has " + size + " bytes, less than "
                            + "the requested capacity of " + capacity + " bytes");
                }
            } else {
                capacity = size;
                if (config.capacityBytes() > 0 && config.capacityBytes() != size) {
                    throw new InvalidConfigException("WAL file " + path + " exists with a capacity of " + size
                            + " bytes, but capacity=" + config.capacityBytes() + " bytes was requested; a WAL file's "
                            + "capacity is fixed once created (use capacity=" + size + ", or remove the file after "
                            + "its data has been uploaded)");
                }
            }
            checkCapacity(path, capacity, kind + " size");
            return new Opened(io, capacity);
        } catch (RuntimeException e) {
            io.close();
            throw e;
        }
    }

    /** Refuses early, with a clear message, what open(O_DIRECT) would refuse with a bare EINVAL. */
    private static void checkFileType(Path path) {
        int mode;
        try {
            mode = (Integer) Files.getAttribute(path, "unix:mode");
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return; // the fstat after open checks again
        }
        String type = switch (mode & 0xF000) {
            case 0x8000, 0x6000 -> null;
            case 0x2000 -> "a character device";
            case 0x1000 -> "a FIFO";
            case 0xC000 -> "a socket";
            default -> "of file type 0" + Integer.toOctalString(mode & 0xF000);
        };
        if (type != null) {
            throw new InvalidConfigException(path + " is " + type + ", neither a regular file nor a block device; "
                    + "a blockdev WAL needs one of those");
        }
    }

    /** A target opened for the WAL. */
    public record Opened(BlockIo io, long capacityBytes) {
    }

    static void checkCapacity(Path path, long capacity, String what) {
        if (capacity % BLOCK_BYTES != 0) {
            throw new InvalidConfigException("WAL " + path + ": " + what + " " + capacity + " is not a multiple of "
                    + BLOCK_BYTES + " bytes");
        }
        if (capacity < WalDescriptor.MIN_CAPACITY_BYTES) {
            throw new InvalidConfigException("WAL " + path + ": " + what + " of " + capacity + " bytes is too small; "
                    + "the smallest WAL is " + WalDescriptor.MIN_CAPACITY_BYTES + " bytes");
        }
    }

    private static void create(Path path, long capacity) {
        Path parent = path.toAbsolutePath().getParent();
        boolean newDirectory = !Files.isDirectory(parent);
        Path tmp = parent.resolve(path.getFileName() + ".creating");
        try {
            Files.createDirectories(parent);
            Files.deleteIfExists(tmp);
        } catch (IOException e) {
            throw new InvalidConfigException("cannot create the WAL file " + path + ": " + e, e);
        }
        NativeBlockIo io;
        try {
            io = NativeBlockIo.create(tmp.toString());
        } catch (BlockIoException e) {
            throw new InvalidConfigException("cannot create the WAL file " + path + ": " + e.getMessage(), e);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment zeros = arena.allocate(ZERO_CHUNK_BYTES, BLOCK_BYTES);
            for (long off = 0; off < capacity; off += ZERO_CHUNK_BYTES) {
                io.write(off, zeros.asSlice(0, Math.min(ZERO_CHUNK_BYTES, capacity - off)));
            }
            MemorySegment block = arena.allocate(BLOCK_BYTES, BLOCK_BYTES);
            WalDescriptor.encodeHeader(block, freshHeader(capacity, 0));
            io.write(BLOCK_BYTES, block);
            io.sync();
        } catch (BlockIoException e) {
            io.close();
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException ignored) {
                // reported below
            }
            throw new StorageIOException("cannot pre-write the WAL file " + path + " (" + capacity + " bytes): "
                    + e.getMessage(), e);
        }
        io.close();
        try {
            Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE);
            NativeBlockIo.syncDirectory(parent.toString());
        } catch (IOException | BlockIoException e) {
            throw new InvalidConfigException("cannot create the WAL file " + path + ": " + e, e);
        }
        // A first start, or a wrong path: either way the operator should see that a new, empty WAL was made.
        LOG.log(System.Logger.Level.INFO, "created a new WAL file " + path.toAbsolutePath() + " of " + capacity
                + " bytes" + (newDirectory ? " (and its directory " + parent + ")" : "") + "; it holds no records");
    }

    /**
     * The header of a freshly formatted WAL: owned by nobody, empty, with a new random id, its first record at
     * {@code basePosition} (a multiple of the block size; a WAL made of several rings gives each a base past the
     * previous one's positions).
     */
    public static WalDescriptor.Header freshHeader(long capacity, long basePosition) {
        if (basePosition < 0 || basePosition % BLOCK_BYTES != 0) {
            throw new IllegalArgumentException("base position " + basePosition + " is not a non-negative multiple of "
                    + BLOCK_BYTES);
        }
        int walId;
        do {
            walId = new SecureRandom().nextInt();
        } while (walId == 0);
        return new WalDescriptor.Header(capacity, 1, basePosition, basePosition, -1, -1, walId, 0);
    }
}
