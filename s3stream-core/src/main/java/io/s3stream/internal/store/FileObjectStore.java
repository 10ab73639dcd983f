package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.internal.store.common.StoreSupport;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectNotFoundException;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An {@link ObjectStore} kept in a local directory ({@code file:///absolute/dir}): each key is a relative path under
 * the directory, so {@code data/1a2b/0000000000000007} is the file {@code <dir>/data/1a2b/0000000000000007}.
 *
 * <h2>Durability</h2>
 * Every write goes to a temporary file in the target's directory, is forced to the device, and is then published
 * in one atomic step, after which the directory is forced too: {@link #put} renames the temporary file over the
 * target ({@code rename(2)} replaces atomically, so readers see the old or the new bytes), and {@link #putIfAbsent}
 * hard-links it to the target ({@code link(2)} fails if the target exists, so among concurrent creators exactly one
 * wins, also across processes sharing the directory). A crash leaves at most a temporary file behind; temporary and
 * staging files carry the reserved name prefix {@value #RESERVED_PREFIX}, which no key segment may use, so they are
 * never visible through {@link #get} or {@link #list}. Newly created directories are forced into their parents. Data
 * objects leave a {@link SpaceReserve} of the file system free, so that a full disk can still take manifest commits.
 * Object bytes bypass the page cache ({@code O_DIRECT}) where the file system allows it; see {@link ObjectFileIo}.
 *
 * <h2>Keys</h2>
 * Keys must be safe relative paths; {@link FileKeys} states the rules and maps keys to file names. Unlike S3, a
 * directory cannot hold both an object {@code a/b} and an object {@code a/b/c}; the second write fails with a message
 * that says so. Deleting the last object of a directory removes the emptied directories.
 *
 * <h2>Concurrency</h2>
 * The store holds no mutable state about objects; the file system is the single owner. Blocking IO runs on a
 * virtual-thread-per-task executor owned by the store, never on the caller's thread. {@link #close()} waits for the
 * operations in flight and refuses new ones.
 *
 * <h2>Multipart uploads</h2>
 * An upload stages in {@code <dir>/.s3stream-multipart/<uploadId>/}. Parts that arrive in number order are written in
 * place, each at its offset in one file that becomes the object, which {@code complete} publishes without copying a
 * byte; any other part (out of order, uploaded again, or after a part out of order) is a file of its own, and
 * {@code complete} then concatenates all parts in number order into a new file ({@link FileMultipartUpload} has the
 * details). As on S3, every part but the last must hold at least
 * {@link #minPartSizeBytes()} bytes. Opening the store deletes the staging directories of uploads a crashed process
 * abandoned: those unchanged for {@link AbandonedUploads#ABANDONED_AFTER} (S3 needs a lifecycle rule for the same),
 * and, in the background, the temporary files of puts a crash interrupted, once unchanged for as long.
 */
public final class FileObjectStore implements ObjectStore {
    /** Names starting with this are the store's own (temporary files, staging) and never keys. */
    static final String RESERVED_PREFIX = ".s3stream-";
    /** Prefix of temporary files, created beside their target. */
    static final String TEMP_PREFIX = RESERVED_PREFIX + "tmp-";
    /** Directory (under the root) holding the parts of multipart uploads in progress. */
    static final String STAGING_DIR = RESERVED_PREFIX + "multipart";
    /** Prefix of the file an open creates and deletes in the root to prove the directory writable. */
    static final String PROBE_PREFIX = RESERVED_PREFIX + "probe-";
    /** Prefix of the file {@link ObjectFileIo} creates and deletes in the root to find out whether O_DIRECT works. */
    static final String DIRECT_PROBE_PREFIX = RESERVED_PREFIX + "direct-probe-";
    /**
     * A write into a directory that a concurrent delete just removed (because it was empty) is retried this many
     * times; each retry needs a delete to slip in between creating the directory and the file in it.
     */
    private static final int DIRECTORY_RACE_ATTEMPTS = 100;

    private final Path root;
    /** Writes (in forced slices) and reads files' content; object bytes through O_DIRECT where it works. */
    final ObjectFileIo fileIo;
    private final String description;
    private final int minPartSizeBytes;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final SpaceReserve reserve;
    private final FileListing listing;
    /** The open's background deletion of abandoned scratch files: how many it deleted (tests wait for it). */
    private CompletableFuture<Integer> scratchReclaimed;

    private FileObjectStore(Path root, int minPartSizeBytes, long reserveBytes, boolean directWrites)
            throws IOException {
        this.root = root;
        this.fileIo = ObjectFileIo.open(root, directWrites);
        this.description = "file://" + root;
        this.minPartSizeBytes = minPartSizeBytes;
        this.reserve = SpaceReserve.of(description, root, reserveBytes);
        this.listing = new FileListing(root, description);
    }

    /**
     * Opens a store in {@code directory}, creating it if missing.
     *
     * @throws ObjectStoreException naming the path when it is not a directory or not writable
     */
    public static FileObjectStore open(Path directory, int minPartSizeBytes) {
        return open(directory, minPartSizeBytes, -1);
    }

    /**
     * Opens a store in {@code directory} that keeps {@code reserveBytes} of its file system free for metadata (see
     * {@link SpaceReserve}; negative: the default, 1/32 of the file system and at most 16 MiB).
     */
    public static FileObjectStore open(Path directory, int minPartSizeBytes, long reserveBytes) {
        return open(directory, minPartSizeBytes, reserveBytes, true);
    }

    /**
     * {@link #open(Path, int, long)}, writing object bytes through {@code O_DIRECT} when {@code directWrites} is set
     * and the file system takes it (see {@link ObjectFileIo}).
     */
    public static FileObjectStore open(Path directory, int minPartSizeBytes, long reserveBytes,
                                       boolean directWrites) {
        Path root = directory.toAbsolutePath().normalize();
        if (Files.exists(root) && !Files.isDirectory(root)) {
            throw new ObjectStoreException("file object store: " + root + " exists but is not a directory", false);
        }
        try {
            Files.createDirectories(root);
        } catch (IOException e) {
            throw new ObjectStoreException("file object store: cannot create directory " + root + ": " + e, e, false);
        }
        if (!Files.isWritable(root)) {
            throw new ObjectStoreException("file object store: directory " + root + " is not writable", false);
        }
        // Permission bits do not tell about read-only mounts or a superuser; a real write does.
        Path probe = root.resolve(PROBE_PREFIX + UUID.randomUUID());
        try {
            Files.createFile(probe);
            Files.delete(probe);
        } catch (IOException e) {
            throw new ObjectStoreException("file object store: directory " + root + " is not writable: " + e, e, false);
        }
        Instant opened = Instant.now();
        AbandonedUploads.reclaim(root.resolve(STAGING_DIR), opened);
        FileObjectStore store;
        try {
            store = new FileObjectStore(root, minPartSizeBytes, reserveBytes, directWrites);
        } catch (IOException e) {
            throw new ObjectStoreException("file object store: cannot read the free space of " + root + ": " + e, e,
                    false);
        }
        // Walks every directory, so off the opener's thread; close() waits for it, and it stops at close.
        store.scratchReclaimed = store.submit("reclaim", "abandoned temporary files",
                () -> AbandonedUploads.reclaimScratch(root, opened, store.closed::get));
        return store;
    }

    /** Whether a file name is one of the store's scratch files: a put's temporary file or an open's probe. */
    static boolean isScratchFile(String name) {
        return name.startsWith(TEMP_PREFIX) || name.startsWith(PROBE_PREFIX) || name.startsWith(DIRECT_PROBE_PREFIX);
    }

    /** Completes when the open's reclaim of abandoned temporary files ends, with how many it deleted. */
    CompletableFuture<Integer> scratchReclaimed() {
        return scratchReclaimed;
    }

    /** The directory holding the objects. */
    public Path root() {
        return root;
    }

    @Override
    public CompletableFuture<Void> put(String key, ByteBuf data) {
        Path target;
        try {
            target = resolve(key);
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        // Hold the bytes until the write finishes even if the caller gives up (a timeout) and releases its buffer.
        ByteBuf bytes = data.retainedSlice();
        return this.<Void>submit("put", key, () -> {
            publishByRename(key, target, writeTemp(key, target.getParent(), true, bytes.readableBytes(),
                    (channel, file) -> fileIo.writeAll(bytes, channel, file)));
            return null;
        }).whenComplete((v, e) -> bytes.release());
    }

    @Override
    public CompletableFuture<Boolean> putIfAbsent(String key, ByteBuf data) {
        Path target;
        try {
            target = resolve(key);
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        ByteBuf bytes = data.retainedSlice();
        return this.submit("putIfAbsent", key, () -> {
            if (Files.exists(target, LinkOption.NOFOLLOW_LINKS) && !Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
                return false; // cheap early answer; the link below is what decides
            }
            Path dir = target.getParent();
            Path temp = writeTemp(key, dir, true, bytes.readableBytes(),
                    (channel, file) -> fileIo.writeAll(bytes, channel, file));
            try {
                Files.createLink(target, temp);
            } catch (FileAlreadyExistsException e) {
                if (Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
                    throw keyIsDirectory(key);
                }
                return false;
            } finally {
                deleteQuietly(temp);
            }
            forceDirectory(dir);
            return true;
        }).whenComplete((v, e) -> bytes.release());
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key, long position, int length) {
        Path target;
        try {
            target = resolve(key);
            StoreSupport.checkRangeArguments(description, key, position, length);
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        return submit("get", key, () -> read(key, target, position, length, false));
    }

    /** Reads each range straight into a buffer of its own: no copy out of one large buffer. */
    @Override
    public CompletableFuture<List<ByteBuf>> getSplit(String key, long position, int[] lengths) {
        Path target;
        int total;
        try {
            target = resolve(key);
            total = ObjectStore.splitLength(description, key, position, lengths);
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        int[] ranges = lengths.clone();
        return submit("get", key, () -> readSplit(key, target, position, total, ranges));
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key) {
        Path target;
        try {
            target = resolve(key);
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        return submit("get", key, () -> read(key, target, 0, Integer.MAX_VALUE, true));
    }

    @Override
    public CompletableFuture<Optional<ObjectInfo>> head(String key) {
        Path target;
        try {
            target = resolve(key);
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        return submit("head", key, () -> {
            BasicFileAttributes attributes;
            try {
                attributes = Files.readAttributes(target, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            } catch (NoSuchFileException e) {
                return Optional.empty();
            } catch (FileSystemException e) {
                if (blockedByObject(target)) {
                    return Optional.empty();
                }
                throw e;
            }
            if (!attributes.isRegularFile()) {
                return Optional.empty();
            }
            return Optional.of(new ObjectInfo(key, attributes.size(), attributes.lastModifiedTime().toMillis()));
        });
    }

    @Override
    public CompletableFuture<List<ObjectInfo>> list(String prefix) {
        Path start;
        try {
            start = listing.start(prefix);
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        return submit("list", prefix, () -> listing.walk(prefix, start));
    }

    @Override
    public CompletableFuture<Void> delete(Collection<String> keys) {
        List<Path> targets = new ArrayList<>(keys.size());
        try {
            for (String key : keys) {
                targets.add(resolve(key));
            }
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e); // refuse the whole batch before deleting anything
        }
        return submit("delete", keys.size() + " keys", () -> {
            Set<Path> touched = new LinkedHashSet<>();
            for (Path target : targets) {
                if (Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
                    continue; // a key prefix, not an object
                }
                boolean deleted;
                try {
                    deleted = Files.deleteIfExists(target);
                } catch (FileSystemException e) {
                    if (blockedByObject(target)) {
                        continue;
                    }
                    throw e;
                }
                if (deleted) {
                    touched.add(removeEmptyDirectories(target.getParent()));
                }
            }
            for (Path dir : touched) {
                forceDirectory(dir);
            }
            return null;
        });
    }

    @Override
    public CompletableFuture<MultipartUpload> startMultipart(String key) {
        Path target;
        try {
            target = resolve(key);
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        String uploadId = UUID.randomUUID().toString();
        Path staging = root.resolve(STAGING_DIR).resolve(uploadId);
        return submit("startMultipart", key, () -> {
            Files.createDirectories(staging);
            return new FileMultipartUpload(this, key, target, staging, uploadId);
        });
    }

    @Override
    public int minPartSizeBytes() {
        return minPartSizeBytes;
    }

    /** A part copy reads the source and writes the part on this machine's file system. */
    @Override
    public boolean copiesOnThisNode() {
        return true;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            executor.close(); // waits for the operations in flight
        }
    }

    @Override
    public String toString() {
        return description;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Keys and paths

    /** Maps a key to its path, refusing anything that could escape the root or collide with the store's own files. */
    Path resolve(String key) {
        String problem = FileKeys.keyProblem(key);
        if (problem != null) {
            throw new ObjectStoreException(description + ": unsafe key '" + FileKeys.printable(key) + "': " + problem, false);
        }
        return root.resolve(FileKeys.encodePath(key));
    }

    /** Whether some ancestor of {@code target} below the root is an object (a regular file), hiding the target. */
    private boolean blockedByObject(Path target) {
        for (Path p = target.getParent(); p != null && p.startsWith(root) && !p.equals(root); p = p.getParent()) {
            if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
                return true;
            }
        }
        return false;
    }

    private ObjectStoreException keyIsDirectory(String key) {
        return new ObjectStoreException(description + ": cannot write '" + key + "': other keys start with '" + key
                + "/', and a file store cannot hold an object and a key prefix of the same name", false);
    }

    private ObjectStoreException parentIsObject(String key, Path dir) {
        return new ObjectStoreException(description + ": cannot write '" + key + "': the object '" + listing.keyOf(dir)
                + "' exists, and a file store cannot hold an object and a key prefix of the same name", false);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // IO

    /** A write of a temporary file's content. */
    @FunctionalInterface
    interface ContentWriter {
        void write(FileChannel channel, Path file) throws IOException;
    }

    /** A blocking operation run on the store's executor. */
    @FunctionalInterface
    interface IoTask<T> {
        T run() throws IOException;
    }

    <T> CompletableFuture<T> submit(String operation, String subject, IoTask<T> task) {
        CompletableFuture<T> future = new CompletableFuture<>();
        if (closed.get()) {
            future.completeExceptionally(closedException(operation, subject));
            return future;
        }
        try {
            executor.execute(() -> {
                try {
                    future.complete(task.run());
                } catch (Throwable t) {
                    future.completeExceptionally(translate(operation, subject, t));
                }
            });
        } catch (RejectedExecutionException e) {
            future.completeExceptionally(closedException(operation, subject));
        }
        return future;
    }

    private ObjectStoreException closedException(String operation, String subject) {
        return new ObjectStoreException(description + ": " + operation + " '" + subject + "' refused: store is closed",
                false);
    }

    private Throwable translate(String operation, String subject, Throwable t) {
        if (t instanceof ObjectStoreException) {
            return t;
        }
        if (t instanceof Error error) {
            return error;
        }
        // A full file system goes away when space is freed (the operator deletes data, retention runs, compaction
        // deletes its inputs): retrying is the point, and a manifest commit (a topic deletion, the remedy) must get
        // through once a few bytes are back. Any other local disk error does not go away by itself; repeating the
        // request would only hide it.
        return new ObjectStoreException(description + ": " + operation + " '" + subject + "' failed: " + t, t,
                SpaceReserve.isOutOfSpace(t));
    }

    /**
     * Writes a new temporary file in {@code dir} and forces it to the device. When {@code createParents} is set the
     * directory is created (and forced into its parent) if missing, and a race with a delete that removes it again
     * is retried. A data object's {@code length} bytes must leave the {@link SpaceReserve} free.
     */
    Path writeTemp(String key, Path dir, boolean createParents, long length, ContentWriter writer) throws IOException {
        try (SpaceReserve.Claim _ = reserve.claim("write", key, length)) {
            return writeTemp(key, dir, createParents, writer);
        }
    }

    private Path writeTemp(String key, Path dir, boolean createParents, ContentWriter writer) throws IOException {
        for (int attempt = 1; ; attempt++) {
            Path temp = dir.resolve(TEMP_PREFIX + UUID.randomUUID());
            FileChannel channel;
            try {
                if (createParents) {
                    ensureDirectory(key, dir);
                }
                channel = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
            } catch (NoSuchFileException e) {
                if (createParents && attempt < DIRECTORY_RACE_ATTEMPTS) {
                    continue; // a concurrent delete removed the emptied directory
                }
                throw e;
            }
            try (channel) {
                writer.write(channel, temp);
                channel.force(true);
            } catch (IOException | RuntimeException e) {
                deleteQuietly(temp);
                throw e;
            }
            return temp;
        }
    }

    /**
     * Writes into {@code file} (created if missing, in an existing directory) through {@code writer} and forces its
     * data: a part written in place into its multipart upload's object. The {@code length} bytes must leave the
     * {@link SpaceReserve} free.
     */
    void writeInto(String key, Path file, long length, ContentWriter writer) throws IOException {
        try (SpaceReserve.Claim _ = reserve.claim("write", key, length);
             FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            writer.write(channel, file);
            channel.force(false);
        }
    }

    /**
     * Links {@code file} under a temporary name in {@code dir}, creating the directory as {@link #writeTemp} does, so
     * that {@link #publishByRename} can publish it while {@code file} keeps its own name until the caller removes it.
     */
    Path linkTemp(String key, Path dir, Path file) throws IOException {
        for (int attempt = 1; ; attempt++) {
            Path temp = dir.resolve(TEMP_PREFIX + UUID.randomUUID());
            try {
                ensureDirectory(key, dir);
                Files.createLink(temp, file);
                return temp;
            } catch (NoSuchFileException e) {
                if (attempt < DIRECTORY_RACE_ATTEMPTS && Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
                    continue; // a concurrent delete removed the emptied directory
                }
                throw e;
            }
        }
    }

    /** Renames a forced temporary file over the target, then forces the directory; removes the temp on failure. */
    void publishByRename(String key, Path target, Path temp) throws IOException {
        try {
            Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            deleteQuietly(temp);
            if (Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
                throw keyIsDirectory(key);
            }
            throw e;
        }
        forceDirectory(target.getParent());
    }

    private void ensureDirectory(String key, Path dir) throws IOException {
        if (Files.isDirectory(dir)) {
            return;
        }
        Path existing = dir.getParent();
        while (existing != null && !existing.equals(root) && !Files.isDirectory(existing, LinkOption.NOFOLLOW_LINKS)) {
            existing = existing.getParent();
        }
        try {
            for (int attempt = 0; ; attempt++) {
                try {
                    Files.createDirectories(dir);
                    break;
                } catch (FileAlreadyExistsException e) {
                    // Also thrown when a directory on the path was there at create and gone at the check that
                    // followed (a delete emptied and removed it): only a regular file really blocks the key.
                    Path blocker = Path.of(e.getFile());
                    if (Files.isRegularFile(blocker, LinkOption.NOFOLLOW_LINKS) || attempt >= 100) {
                        throw parentIsObject(key, blocker);
                    }
                }
            }
        } catch (FileSystemException e) {
            for (Path p = dir; p != null && !p.equals(root); p = p.getParent()) {
                if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
                    throw parentIsObject(key, p);
                }
            }
            throw e;
        }
        // Make the new directory entries durable: each lives in its parent, from the deepest existing one down.
        for (Path p = dir.getParent(); p != null; p = p.getParent()) {
            forceDirectory(p);
            if (p.equals(existing) || p.equals(root)) {
                break;
            }
        }
    }

    private static void forceDirectory(Path dir) throws IOException {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (NoSuchFileException e) {
            // removed concurrently (emptied by a delete): nothing left in it to make durable
        }
    }

    static void deleteQuietly(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            // best effort: a leftover temporary file is invisible to readers
        }
    }

    /** Removes directories emptied by a delete, up to the root; returns the directory whose entries changed. */
    private Path removeEmptyDirectories(Path dir) {
        while (!dir.equals(root)) {
            try {
                Files.delete(dir);
            } catch (IOException e) {
                break; // not empty (DirectoryNotEmptyException), already gone, or in use: stop here
            }
            dir = dir.getParent();
        }
        return dir;
    }

    private ByteBuf read(String key, Path target, long position, int length, boolean whole) throws IOException {
        // Size and bytes come from one open file, so a read racing an overwrite returns the old object or the new one.
        // A ranged read large enough for direct IO opens the file with O_DIRECT at once; a whole read opens it through
        // the page cache to learn its size, and a large object once more, with O_DIRECT, taking its size again there.
        boolean openDirect = !whole && fileIo.readsDirect(length);
        while (true) {
            try (FileChannel channel = openForRead(key, target, openDirect)) {
                long size = channel.size();
                int count;
                if (whole) {
                    if (size > Integer.MAX_VALUE - 8) {
                        throw new ObjectStoreException(description + ": '" + key + "' has " + size
                                + " bytes, too many for one buffer; read it in ranges", false);
                    }
                    count = (int) size;
                } else {
                    count = StoreSupport.clipRange(description, key, size, position, length);
                }
                if (openDirect) {
                    return complete(key, fileIo.readDirect(channel, position, count), size, position, count);
                }
                if (!whole || !fileIo.readsDirect(count)) {
                    return readRange(key, channel, size, position, count);
                }
            }
            openDirect = true;
        }
    }

    /** {@code bytes}, read directly, if it holds all {@code count} bytes asked for; otherwise released, and an error. */
    private ByteBuf complete(String key, ByteBuf bytes, long size, long position, int count) {
        if (bytes.readableBytes() < count) {
            bytes.release();
            throw new ObjectStoreException(description + ": '" + key + "' ended at " + (position + bytes.readableBytes())
                    + " while being read; it was expected to hold " + size + " bytes", false);
        }
        return bytes;
    }

    private List<ByteBuf> readSplit(String key, Path target, long position, int total, int[] lengths)
            throws IOException {
        boolean openDirect = fileIo.readsDirect(total);
        try (FileChannel channel = openForRead(key, target, openDirect)) {
            long size = channel.size();
            if (position + total > size) {
                throw new ObjectStoreException(description + ": '" + key + "' has " + size + " bytes, it ends before "
                        + "the split read [" + position + ", " + (position + total) + ")", false);
            }
            List<ByteBuf> parts = new ArrayList<>(lengths.length);
            ByteBuf direct = openDirect ? fileIo.readDirect(channel, position, total) : null;
            try {
                if (direct != null) {
                    complete(key, direct, size, position, total); // one read of the whole span, cut into the parts
                    for (int length : lengths) {
                        parts.add(direct.readRetainedSlice(length));
                    }
                    return parts;
                }
                long at = position;
                for (int length : lengths) {
                    parts.add(readRange(key, channel, size, at, length));
                    at += length;
                }
                return parts;
            } catch (IOException | RuntimeException e) {
                parts.forEach(ByteBuf::release);
                throw e;
            } finally {
                if (direct != null && direct.refCnt() > 0) {
                    direct.release(); // the parts hold their own references
                }
            }
        }
    }

    private FileChannel openForRead(String key, Path target, boolean direct) throws IOException {
        if (Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
            throw notFound(key);
        }
        try {
            return fileIo.openForRead(target, direct);
        } catch (NoSuchFileException e) {
            throw notFound(key);
        } catch (FileSystemException e) {
            if (blockedByObject(target)) {
                throw notFound(key);
            }
            throw e;
        }
    }

    /** Reads {@code count} bytes at {@code position} of an object of {@code size} bytes into a new direct buffer. */
    private ByteBuf readRange(String key, FileChannel channel, long size, long position, int count) throws IOException {
        ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(count, count);
        try {
            long at = position;
            int remaining = count;
            while (remaining > 0) {
                int n = buf.writeBytes(channel, at, remaining);
                if (n < 0) {
                    throw new ObjectStoreException(description + ": '" + key + "' ended at " + at
                            + " while being read; it was expected to hold " + size + " bytes", false);
                }
                at += n;
                remaining -= n;
            }
            return buf;
        } catch (IOException | RuntimeException e) {
            buf.release();
            throw e;
        }
    }

    ObjectNotFoundException notFound(String key) {
        return new ObjectNotFoundException(description + ": no object '" + key + "'");
    }

    static void deleteRecursively(Path dir) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try {
                Files.walkFileTree(dir, new SimpleFileVisitor<>() {
                    @Override
                    public FileVisitResult visitFile(Path file, BasicFileAttributes attributes) throws IOException {
                        Files.deleteIfExists(file);
                        return FileVisitResult.CONTINUE;
                    }

                    @Override
                    public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                        if (e instanceof NoSuchFileException) {
                            return FileVisitResult.CONTINUE;
                        }
                        throw e;
                    }

                    @Override
                    public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                        if (e != null && !(e instanceof NoSuchFileException)) {
                            throw e;
                        }
                        Files.deleteIfExists(d);
                        return FileVisitResult.CONTINUE;
                    }
                });
                return;
            } catch (NoSuchFileException e) {
                return;
            } catch (DirectoryNotEmptyException e) {
                if (attempt >= DIRECTORY_RACE_ATTEMPTS) {
                    throw e; // a part upload keeps adding files
                }
            }
        }
    }
}
