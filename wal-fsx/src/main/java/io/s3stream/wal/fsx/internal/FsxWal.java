package io.s3stream.wal.fsx.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.InvalidConfigException;
import io.s3stream.NodeFencedException;
import io.s3stream.StorageIOException;
import io.s3stream.StreamClosedException;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.wal.blockdev.internal.BlockDeviceWal;
import io.s3stream.wal.blockdev.internal.BlockDeviceWalConfig;
import io.s3stream.wal.blockdev.internal.BlockIoException;
import io.s3stream.wal.blockdev.internal.NativeBlockIo;
import io.s3stream.wal.blockdev.internal.RingScanner;
import io.s3stream.wal.blockdev.internal.WalDescriptor;
import io.s3stream.wal.blockdev.internal.WalTarget;
import io.s3stream.wal.fsx.internal.OwnerFile.Generation;
import io.s3stream.wal.fsx.internal.OwnerFile.Owner;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

import static io.s3stream.wal.blockdev.internal.WalDescriptor.BLOCK_BYTES;

/**
 * A write-ahead log on a shared file system ({@code fsx://}): the blockdev ring, run over preallocated segment files
 * in {@code <dir>/<nodeId>/}, with an owner file that lets another node take the log over while its owner may still be
 * running. The full argument is in {@code docs/0004-wal-fsx.md}; in short:
 *
 * <h2>Generations</h2>
 * Each owner session writes a <em>generation</em> of its own: {@code gen-<id>/seg-0000 …}, created and pre-written at
 * recovery and never written by anyone else. Recovery (by the restarted owner or by a node taking over) never appends
 * to an older generation: it scans it read-only, records where its valid records end ({@code sealedEnd}) in the owner
 * file, and ignores anything beyond that end forever. So a zombie owner, which may keep writing its generation after
 * it was fenced, can only write bytes nobody will read, and never damages a record another owner wrote. Positions grow
 * across generations (each starts past every earlier one), so they stay one totally ordered space for the engine.
 *
 * <h2>Fencing</h2>
 * The owner file holds the owner's node epoch; recovery writes it first, durably, and only then scans. The owner asks
 * the owner file (one read) after its writes became durable and before it acknowledges them, and after every ring
 * header write before it reuses space. If a new owner fenced it before that read, it acknowledges nothing more; if the
 * read still shows it as owner, the new owner's fence came later, so its scan — which starts after the fence — finds
 * every acknowledged record. Acknowledged data therefore never hides from a takeover. This needs reads that see every
 * completed write (direct IO, or close-to-open consistency on NFS); it does not need locks or leases.
 *
 * <h2>Hot path</h2>
 * An append is a group-commit {@code pwrite} into a pre-written file ({@code O_DIRECT|O_DSYNC} where the file system
 * accepts it, otherwise {@code pwrite} + {@code fdatasync}) plus the ownership read before the acknowledgement: two
 * round trips to the file server, no metadata operation. Trims rewrite the ring header and, when a whole older
 * generation is trimmed, the owner file, and delete that generation's files.
 */
public final class FsxWal implements WriteAheadLog {
    private static final System.Logger LOG = System.getLogger(FsxWal.class.getName());
    private static final int SCAN_CHUNK_BYTES = 4 * 1024 * 1024;

    private final FsxWalConfig config;
    private final WalContext context;
    private final Path nodeDir;
    private final boolean direct;
    private final OwnerFile ownerFile;
    private final String description;
    private final Object lock = new Object();
    private Owner owner;                 // the record this WAL wrote last; guarded by lock
    private BlockDeviceWal active;       // null when opened for takeover
    private boolean recovered;
    private volatile boolean closed;

    private FsxWal(FsxWalConfig config, WalContext context, boolean direct) {
        this.config = config;
        this.context = context;
        this.nodeDir = config.nodeDirectory(context.nodeId());
        this.direct = direct;
        this.ownerFile = new OwnerFile(nodeDir.resolve("owner"), direct);
        this.description = config.uri() + " (node " + context.nodeId() + "'s WAL in " + nodeDir + ", "
                + (direct ? "direct IO" : "buffered IO + fdatasync") + ", " + config.capacityBytes() + " bytes)";
    }

    /**
     * Opens node {@code context.nodeId()}'s WAL in the configured directory: creates the node's directory (not for a
     * takeover) and finds out whether the file system accepts direct IO.
     */
    public static FsxWal open(FsxWalConfig config, WalContext context) {
        Path nodeDir = config.nodeDirectory(context.nodeId());
        if (!Files.isDirectory(config.directory())) {
            throw new InvalidConfigException(config.uri() + ": " + config.directory() + " is not a directory; mount "
                    + "the shared file system and create it first");
        }
        boolean exists = Files.isDirectory(nodeDir);
        if (!exists && !context.takeover()) {
            try {
                Files.createDirectories(nodeDir);
                NativeBlockIo.syncDirectory(config.directory().toString());
            } catch (IOException | BlockIoException e) {
                throw new InvalidConfigException(config.uri() + ": cannot create " + nodeDir + ": " + e, e);
            }
            exists = true;
        }
        boolean direct = exists && directIo(config, nodeDir);
        FsxWal wal = new FsxWal(config, context, direct);
        LOG.log(System.Logger.Level.INFO, "fsx WAL for node {0} in {1}: {2}, {3} bytes in {4} segment files",
                context.nodeId(), nodeDir, direct ? "direct IO (O_DIRECT|O_DSYNC)"
                        : "buffered IO (pwrite + fdatasync)" + (config.directIo() == FsxWalConfig.DirectIo.OFF
                        ? ", directIo=off" : ": the file system refused O_DIRECT"),
                config.capacityBytes(), config.capacityBytes() / config.segmentBytes());
        return wal;
    }

    private static boolean directIo(FsxWalConfig config, Path nodeDir) {
        if (config.directIo() == FsxWalConfig.DirectIo.OFF) {
            return false;
        }
        boolean accepted;
        try {
            accepted = NativeBlockIo.acceptsDirectIo(nodeDir.toString());
        } catch (BlockIoException e) {
            throw new InvalidConfigException(config.uri() + ": cannot write in " + nodeDir + ": " + e.getMessage(), e);
        }
        if (!accepted && config.directIo() == FsxWalConfig.DirectIo.ON) {
            throw new InvalidConfigException(config.uri() + ": the file system under " + nodeDir + " refuses O_DIRECT, "
                    + "and directIo=on was requested (use directIo=auto to fall back to pwrite + fdatasync)");
        }
        return accepted;
    }

    /** Whether writes bypass the page cache ({@code O_DIRECT|O_DSYNC}). */
    public boolean directIo() {
        return direct;
    }

    // ------------------------------------------------------------------------------------------------ recovery

    @Override
    public RecoveryResult recover(RecordHandler handler) {
        synchronized (lock) {
            if (recovered) {
                throw new IllegalStateException("recover() was already called on " + description);
            }
            recovered = true;
            if (context.takeover() && !Files.isDirectory(nodeDir)) {
                return new RecoveryResult(0, 0, 0, false, "node " + context.nodeId() + " has no fsx WAL in "
                        + config.directory());
            }
            try {
                return doRecover(handler);
            } catch (BlockIoException e) {
                throw new StorageIOException(description + " failed during recovery: " + e.getMessage(), e);
            }
        }
    }

    private RecoveryResult doRecover(RecordHandler handler) {
        ownerFile.ensureExists();
        Owner previous = ownerFile.read();
        if (previous != null && previous.nodeId() != context.nodeId()) {
            throw new InvalidConfigException(ownerFile.path() + " belongs to node " + previous.nodeId() + ", not node "
                    + context.nodeId());
        }
        if (previous != null && previous.epoch() > context.nodeEpoch()) {
            throw new NodeFencedException(description + " is owned by node epoch " + previous.epoch() + ", newer than "
                    + "this node's epoch " + context.nodeEpoch());
        }
        if (previous == null) {
            previous = new Owner(context.nodeId(), -1, 0, 0, 0, List.of());
        }
        // 1. Fence: from this durable write on, an older owner acknowledges nothing more.
        owner = writeOwner(previous.next(context.nodeEpoch(), previous.generations(), previous.nextGeneration(),
                previous.nextBase()));
        pruneUnlisted(owner.generations());
        // 2. Scan every generation, read-only, and seal the ones still open at their last valid record.
        long floor = Math.max(0, context.committedPosition());
        List<Generation> sealed = new ArrayList<>();
        long records = 0;
        long bytes = 0;
        long end = owner.nextBase();
        boolean torn = false;
        StringBuilder detail = new StringBuilder();
        for (Generation g : owner.generations()) {
            ScanResult scan = scan(g, floor, handler);
            records += scan.records;
            bytes += scan.bytes;
            torn |= scan.torn;
            end = Math.max(end, scan.end);
            sealed.add(g.active() ? g.sealedAt(scan.end) : g);
            detail.append(g.directoryName()).append(": ").append(scan.detail).append("; ");
        }
        List<Generation> kept = new ArrayList<>();
        List<Generation> retired = new ArrayList<>();
        for (Generation g : sealed) {
            (g.sealedEnd() <= floor ? retired : kept).add(g);
        }
        long nextBase = WalDescriptor.alignUp(Math.max(end, floor), BLOCK_BYTES);
        owner = writeOwner(owner.next(context.nodeEpoch(), kept, owner.nextGeneration(), nextBase));
        deleteGenerations(retired);
        if (context.takeover()) {
            return new RecoveryResult(records, bytes, nextBase, torn, detail + "taken over at node epoch "
                    + context.nodeEpoch());
        }
        // 3. A generation of this session's own, past every position recovered.
        Generation fresh = new Generation(owner.nextGeneration(), nextBase, -1,
                (int) (config.capacityBytes() / config.segmentBytes()), config.segmentBytes());
        active = startGeneration(fresh);
        owner = writeOwner(owner.next(context.nodeEpoch(), concat(kept, fresh), fresh.id() + 1, nextBase));
        RecoveryResult own = active.recover((position, next, record) -> {
            record.release();
            throw new IllegalStateException("a new generation held a record at " + position);
        });
        return new RecoveryResult(records, bytes, own.nextPosition(), torn, detail + "writing " + fresh.directoryName()
                + " from position " + nextBase);
    }

    private Owner writeOwner(Owner next) {
        ownerFile.write(next);
        Owner now = ownerFile.read();
        if (now != null && now.newerThan(next)) {
            throw new NodeFencedException(description + ": node epoch " + now.epoch() + " took the WAL over while "
                    + "this node (epoch " + next.epoch() + ") was recovering it");
        }
        return next;
    }

    private static List<Generation> concat(List<Generation> gens, Generation g) {
        List<Generation> out = new ArrayList<>(gens);
        out.add(g);
        return out;
    }

    private record ScanResult(long records, long bytes, long end, boolean torn, String detail) {
    }

    /** Delivers the records of one generation in {@code [max(floor, trim point), sealedEnd)}. */
    private ScanResult scan(Generation g, long floor, RecordHandler handler) {
        Path dir = nodeDir.resolve(g.directoryName());
        if (!Files.isDirectory(dir)) {
            throw new InvalidConfigException(description + ": generation " + dir + " is listed in " + ownerFile.path()
                    + " but missing; its records cannot be recovered (was it deleted by hand?)");
        }
        long capacity = g.segments() * g.segmentBytes();
        long ringBytes = capacity - WalDescriptor.RING_OFFSET;
        try (SegmentedFileIo io = SegmentedFileIo.open(dir, g.segments(), g.segmentBytes(), false, direct);
             Arena arena = Arena.ofConfined()) {
            WalDescriptor.Header header = newestHeader(io, arena, dir);
            if (header == null) {
                return new ScanResult(0, 0, g.active() ? g.base() : g.sealedEnd(), false, "no ring header yet");
            }
            long from = Math.max(floor, header.trimPosition());
            long limit = g.active() ? Long.MAX_VALUE : g.sealedEnd();
            long[] counts = new long[2];
            long[] recordsEnd = {header.scanStart()};
            RingScanner.Result result;
            try (RingScanner scanner = new RingScanner(io, ringBytes, header.walId(),
                    WalDescriptor.maxRecordBytes(capacity), SCAN_CHUNK_BYTES)) {
                result = scanner.scan(header.scanStart(), (position, next, session, payload) -> {
                    if (next > limit) {
                        return; // written after the seal: a fenced owner's, never acknowledged
                    }
                    recordsEnd[0] = next;
                    if (position < from) {
                        return;
                    }
                    ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer((int) payload.byteSize());
                    buf.writeBytes(payload.asByteBuffer());
                    counts[0]++;
                    counts[1] += payload.byteSize();
                    handler.onRecord(position, next, buf);
                });
            }
            // A generation is sealed where its last record ends (padding after it belongs to nobody).
            long end = g.active() ? recordsEnd[0] : g.sealedEnd();
            if (!g.active() && recordsEnd[0] < g.sealedEnd()) {
                throw new StorageIOException(description + ": " + dir + " was sealed at position " + g.sealedEnd()
                        + " but its records now end at " + recordsEnd[0] + " (" + result.detail() + "); "
                        + "acknowledged records are damaged", null);
            }
            return new ScanResult(counts[0], counts[1], end, result.torn(), result.detail());
        }
    }

    private static WalDescriptor.Header newestHeader(SegmentedFileIo io, Arena arena, Path dir) {
        MemorySegment block = arena.allocate(BLOCK_BYTES, BLOCK_BYTES);
        WalDescriptor.Header best = null;
        for (int i = 0; i < WalDescriptor.HEADER_SLOTS; i++) {
            io.read((long) i * BLOCK_BYTES, block);
            WalDescriptor.HeaderRead read = WalDescriptor.decodeHeader(block);
            if (read.valid() && (best == null || read.header().sequence() > best.sequence())) {
                best = read.header();
            }
        }
        return best;
    }

    private BlockDeviceWal startGeneration(Generation g) {
        Path dir = nodeDir.resolve(g.directoryName());
        try {
            Files.createDirectory(dir);
            NativeBlockIo.syncDirectory(nodeDir.toString());
        } catch (IOException e) {
            throw new StorageIOException(description + ": cannot create " + dir + ": " + e, e);
        }
        long capacity = g.segments() * g.segmentBytes();
        SegmentedFileIo io = SegmentedFileIo.create(dir, g.segments(), g.segmentBytes(), direct);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(BLOCK_BYTES, BLOCK_BYTES);
            WalDescriptor.Header header = WalTarget.freshHeader(capacity, g.base());
            WalDescriptor.encodeHeader(block, header);
            io.write(Math.floorMod(header.sequence(), WalDescriptor.HEADER_SLOTS) * (long) BLOCK_BYTES, block);
        } catch (RuntimeException e) {
            io.close();
            throw e;
        }
        BlockDeviceWalConfig ring = new BlockDeviceWalConfig(config.uri(), dir, capacity, config.inflight(),
                config.writeBytes());
        return BlockDeviceWal.open(io, capacity, ring, context, this::lostTo, config.writeTimeout());
    }

    /** The ownership check the ring asks before acknowledging: null while this session's epoch is the newest. */
    private String lostTo() {
        Owner now = ownerFile.read();
        if (now == null) {
            return "the owner file " + ownerFile.path() + " is gone";
        }
        if (now.epoch() > context.nodeEpoch()) {
            return "node epoch " + now.epoch() + " owns " + ownerFile.path() + " (this owner has epoch "
                    + context.nodeEpoch() + ")";
        }
        return null;
    }

    private void pruneUnlisted(List<Generation> listed) {
        List<String> names = listed.stream().map(Generation::directoryName).toList();
        try (Stream<Path> children = Files.list(nodeDir)) {
            for (Path child : children.toList()) {
                String name = child.getFileName().toString();
                if (name.startsWith("gen-") && !names.contains(name)) {
                    deleteTree(child); // a generation a crashed recovery created but never listed: holds nothing
                }
            }
        } catch (IOException e) {
            throw new StorageIOException(description + ": cannot list " + nodeDir + ": " + e, e);
        }
    }

    private void deleteGenerations(List<Generation> gens) {
        for (Generation g : gens) {
            deleteTree(nodeDir.resolve(g.directoryName()));
        }
    }

    private void deleteTree(Path dir) {
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            // Unlisted already: a leftover directory costs space, not correctness; the next recovery removes it.
            LOG.log(System.Logger.Level.WARNING, "{0}: could not delete {1}: {2}", description, dir, e.toString());
        }
    }

    // ------------------------------------------------------------------------------------------------ client API

    @Override
    public CompletableFuture<WalAppendResult> append(ByteBuf record) {
        BlockDeviceWal ring = active;
        if (ring == null) {
            return CompletableFuture.failedFuture(notAppending());
        }
        return ring.append(record);
    }

    @Override
    public void append(ByteBuf record, AppendCallback callback) {
        BlockDeviceWal ring = active;
        if (ring == null) {
            callback.onFailure(notAppending());
            return;
        }
        ring.append(record, callback);
    }

    @Override
    public void append(ByteBuf buffer, int index, int length, AppendCallback callback) {
        BlockDeviceWal ring = active;
        if (ring == null) {
            callback.onFailure(notAppending());
            return;
        }
        ring.append(buffer, index, length, callback);
    }

    /** Why a handle without an active ring refuses appends. */
    private RuntimeException notAppending() {
        return closed ? new StreamClosedException(description + " is closed")
                : new IllegalStateException(recovered ? description + " was opened to take it over and refuses "
                + "appends" : "append before recover() on " + description);
    }

    /**
     * Trims the ring of this session's generation and retires every older generation whose records all lie below
     * {@code walPosition} (the owner file stops listing it, then its files are deleted).
     */
    @Override
    public CompletableFuture<Void> trim(long walPosition) {
        synchronized (lock) {
            if (!recovered) {
                return CompletableFuture.failedFuture(new IllegalStateException("trim before recover() on "
                        + description));
            }
            if (closed) {
                return CompletableFuture.failedFuture(new StreamClosedException(description + " is closed"));
            }
            List<Generation> retired = owner.generations().stream()
                    .filter(g -> !g.active() && g.sealedEnd() <= walPosition).toList();
            if (!retired.isEmpty()) {
                try {
                    String lost = lostTo();
                    if (lost != null) {
                        return CompletableFuture.failedFuture(new NodeFencedException(description + ": " + lost));
                    }
                    List<Generation> kept = new ArrayList<>(owner.generations());
                    kept.removeAll(retired);
                    owner = writeOwner(owner.next(owner.epoch(), kept, owner.nextGeneration(), owner.nextBase()));
                } catch (RuntimeException e) {
                    return CompletableFuture.failedFuture(e instanceof BlockIoException b
                            ? new StorageIOException(description + " failed to update its owner file: "
                            + b.getMessage(), b) : e);
                }
                deleteGenerations(retired);
            }
        }
        BlockDeviceWal ring = active;
        return ring == null ? CompletableFuture.completedFuture(null) : ring.trim(walPosition);
    }

    @Override
    public long capacityBytes() {
        return config.capacityBytes();
    }

    @Override
    public int maxRecordBytes() {
        return WalDescriptor.maxRecordBytes(config.capacityBytes());
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        BlockDeviceWal ring = active;
        if (ring != null) {
            ring.close();
        }
        ownerFile.close();
    }

    /** Test hook: abandons the WAL as a crash would (see {@link BlockDeviceWal#halt()}). */
    public void halt() {
        synchronized (lock) {
            closed = true;
        }
        BlockDeviceWal ring = active;
        if (ring != null) {
            ring.halt();
        }
        ownerFile.close();
    }
}
