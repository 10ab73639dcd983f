package io.s3stream.wal.fsx.internal;

import io.s3stream.InvalidConfigException;
import io.s3stream.wal.blockdev.internal.BlockIoException;
import io.s3stream.wal.blockdev.internal.NativeBlockIo;
import io.s3stream.wal.blockdev.internal.WalDescriptor;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The {@code owner} file of one node's fsx WAL: who owns it (node epoch) and which generations of segment files hold
 * its records. It is the WAL's fencing point and its only mutable metadata; it is written at recovery, at takeover and
 * when a trim retires a generation, never per append.
 *
 * <h2>Layout</h2>
 * 16 slots of 4 KiB (64 KiB). A record of epoch {@code e} and sequence {@code s} goes into slot
 * {@code (e mod 8) × 2 + (s mod 2)}; the newest valid record (highest epoch, then highest sequence) is the owner.
 * Alternating two slots per epoch means a torn write leaves that epoch's previous record intact; giving each epoch its
 * own pair means two recoveries racing with different epochs (a restarted node and a node taking it over) never
 * overwrite each other's record, so each sees the other's and the lower epoch yields. Slot contents, little-endian:
 * <pre>
 *  magic "S3FSXOWN" (8) | version (4) | count (4) | nodeId (8) | epoch (8) | sequence (8) | nextGeneration (8)
 *  | nextBase (8) | count × [id (8) | base (8) | sealedEnd (8) | segments (4) | pad (4) | segmentBytes (8)] | crc32c (4)
 * </pre>
 */
final class OwnerFile {
    static final int SLOT_BYTES = WalDescriptor.BLOCK_BYTES;
    static final int EPOCH_PAIRS = 8;
    static final int SLOTS = 2 * EPOCH_PAIRS;
    static final long FILE_BYTES = (long) SLOTS * SLOT_BYTES;
    static final int MAX_GENERATIONS = 64;
    private static final long MAGIC = 0x4e574f5853463353L; // "S3FSXOWN" little-endian
    private static final int VERSION = 1;
    private static final int FIXED_BYTES = 56;
    private static final int GENERATION_BYTES = 40;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** One generation: a set of segment files holding positions from {@code base}. */
    record Generation(long id, long base, long sealedEnd, int segments, long segmentBytes) {
        /** Still written by its owner: its end is found by scanning. */
        boolean active() {
            return sealedEnd < 0;
        }

        Generation sealedAt(long end) {
            return new Generation(id, base, end, segments, segmentBytes);
        }

        String directoryName() {
            return "gen-" + id;
        }
    }

    /** One owner record. */
    record Owner(long nodeId, long epoch, long sequence, long nextGeneration, long nextBase,
                 List<Generation> generations) {
        Owner {
            generations = List.copyOf(generations);
            if (generations.size() > MAX_GENERATIONS) {
                throw new IllegalStateException(generations.size() + " generations of node " + nodeId + "'s WAL are "
                        + "not yet trimmed; at most " + MAX_GENERATIONS + " fit the owner file (the node restarted "
                        + "many times without uploading: check that its uploads commit)");
            }
        }

        Owner next(long epoch, List<Generation> generations, long nextGeneration, long nextBase) {
            long seq = epoch == this.epoch ? sequence + 1 : 1;
            return new Owner(nodeId, epoch, seq, nextGeneration, nextBase, generations);
        }

        boolean newerThan(Owner other) {
            return other == null || epoch > other.epoch || (epoch == other.epoch && sequence > other.sequence);
        }
    }

    private final Path path;
    private final boolean direct;
    private boolean closed;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment slot = arena.allocate(SLOT_BYTES, SLOT_BYTES);
    /** With direct IO, one descriptor serves every read (each read goes to the server); null otherwise. */
    private volatile NativeBlockIo reader;

    OwnerFile(Path path, boolean direct) {
        this.path = path;
        this.direct = direct;
    }

    Path path() {
        return path;
    }

    /**
     * Creates the file at its full size if it does not exist yet. Extending never shrinks a file another node may
     * have just written a slot into, so two nodes racing here lose nothing.
     */
    void ensureExists() {
        try (RandomAccessFile file = new RandomAccessFile(path.toFile(), "rw")) {
            if (file.length() < FILE_BYTES) {
                file.setLength(FILE_BYTES);
                file.getFD().sync();
                NativeBlockIo.syncDirectory(path.getParent().toString());
            }
        } catch (IOException e) {
            throw new BlockIoException("cannot create the owner file " + path + ": " + e.getMessage(),
                    io.s3stream.wal.blockdev.internal.Errno.EIO);
        }
    }

    /**
     * Reads every slot and returns the newest valid record, or null when the file is missing or holds none. With direct
     * IO every read bypasses the page cache and goes to the file system, through one descriptor kept open (one round
     * trip per read); without it, each call opens the file afresh, relying on close-to-open consistency (NFS).
     *
     * @throws InvalidConfigException when slots carry the magic but none is valid (a damaged owner file)
     */
    Owner read() {
        try (Arena local = Arena.ofConfined()) {
            MemorySegment buffer = local.allocate(FILE_BYTES, SLOT_BYTES);
            return readInto(buffer);
        }
    }

    private Owner readInto(MemorySegment buffer) {
        NativeBlockIo kept = reader;
        if (kept != null) {
            kept.read(0, buffer); // pread: several checks may read at once
        } else {
            if (!Files.exists(path)) {
                return null;
            }
            NativeBlockIo io = NativeBlockIo.open(path.toString(), false, direct);
            boolean keep = false;
            try {
                if (io.sizeBytes() < FILE_BYTES) {
                    return null; // being created by a recovery that has written nothing yet
                }
                io.read(0, buffer);
                keep = direct;
            } finally {
                if (keep) {
                    keepReader(io);
                } else {
                    io.close();
                }
            }
        }
        Owner newest = null;
        int damaged = 0;
        for (int i = 0; i < SLOTS; i++) {
            MemorySegment s = buffer.asSlice((long) i * SLOT_BYTES, SLOT_BYTES);
            if (s.get(LONG, 0) != MAGIC) {
                continue;
            }
            Owner o = decode(s);
            if (o == null) {
                damaged++;
            } else if (o.newerThan(newest)) {
                newest = o;
            }
        }
        if (newest == null && damaged > 0) {
            throw new InvalidConfigException(path + " holds " + damaged + " damaged owner record(s) and no valid one; "
                    + "refusing to guess who owns this WAL");
        }
        return newest;
    }

    private synchronized void keepReader(NativeBlockIo io) {
        if (reader == null && !closed) {
            reader = io;
        } else {
            io.close();
        }
    }

    /** Writes {@code owner} into its slot; durable when this returns. */
    synchronized void write(Owner owner) {
        slot.fill((byte) 0);
        encode(slot, owner);
        long offset = slotOf(owner.epoch(), owner.sequence()) * (long) SLOT_BYTES;
        try (NativeBlockIo io = NativeBlockIo.open(path.toString(), true, direct)) {
            io.write(offset, slot);
        }
    }

    static int slotOf(long epoch, long sequence) {
        return (int) (Math.floorMod(epoch, (long) EPOCH_PAIRS) * 2 + Math.floorMod(sequence, 2L));
    }

    private static void encode(MemorySegment s, Owner o) {
        List<Generation> gens = o.generations();
        s.set(LONG, 0, MAGIC);
        s.set(INT, 8, VERSION);
        s.set(INT, 12, gens.size());
        s.set(LONG, 16, o.nodeId());
        s.set(LONG, 24, o.epoch());
        s.set(LONG, 32, o.sequence());
        s.set(LONG, 40, o.nextGeneration());
        s.set(LONG, 48, o.nextBase());
        long at = FIXED_BYTES;
        for (Generation g : gens) {
            s.set(LONG, at, g.id());
            s.set(LONG, at + 8, g.base());
            s.set(LONG, at + 16, g.sealedEnd());
            s.set(INT, at + 24, g.segments());
            s.set(LONG, at + 32, g.segmentBytes());
            at += GENERATION_BYTES;
        }
        s.set(INT, at, crc(s, at));
    }

    private static Owner decode(MemorySegment s) {
        if (s.get(INT, 8) != VERSION) {
            return null;
        }
        int count = s.get(INT, 12);
        if (count < 0 || count > MAX_GENERATIONS) {
            return null;
        }
        long crcAt = FIXED_BYTES + (long) count * GENERATION_BYTES;
        if (s.get(INT, crcAt) != crc(s, crcAt)) {
            return null;
        }
        List<Generation> gens = new ArrayList<>(count);
        long at = FIXED_BYTES;
        for (int i = 0; i < count; i++) {
            gens.add(new Generation(s.get(LONG, at), s.get(LONG, at + 8), s.get(LONG, at + 16), s.get(INT, at + 24),
                    s.get(LONG, at + 32)));
            at += GENERATION_BYTES;
        }
        return new Owner(s.get(LONG, 16), s.get(LONG, 24), s.get(LONG, 32), s.get(LONG, 40), s.get(LONG, 48), gens);
    }

    private static int crc(MemorySegment s, long length) {
        CRC32C crc = new CRC32C();
        crc.update(s.asSlice(0, length).asByteBuffer());
        return (int) crc.getValue();
    }

    synchronized void close() {
        closed = true;
        if (reader != null) {
            reader.close();
            reader = null;
        }
        arena.close();
    }
}
