package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.s3stream.internal.store.common.StoreSupport;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectNotFoundException;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An {@link ObjectStore} in memory ({@code mem://name}), for tests: objects are immutable byte arrays in a map.
 *
 * <p>Named buckets live in a JVM-wide registry, so every store opened on {@code mem://x} sees the same objects: two
 * engines in one JVM can take over from each other, and an engine closed and reopened finds its data again. Closing
 * a store closes that handle only; {@link #clear(String)} drops a bucket (call it between tests).
 *
 * <p>Design note: the bucket is a {@link ConcurrentSkipListMap} ordered like S3 lists keys (by code point), so a
 * prefix listing is a range scan. Every operation completes before it returns (the future is already done), which
 * keeps tests deterministic; callers must not assume a different thread. Bytes are copied in on write and out on
 * read: stored arrays are never shared with a caller, and returned buffers belong to the caller. Multipart uploads
 * follow S3's rules (part numbers 1 to 10,000, every part but the last at least {@link #minPartSizeBytes()}).
 */
public final class MemObjectStore implements ObjectStore {
    private static final ConcurrentMap<String, ConcurrentNavigableMap<String, StoredObject>> BUCKETS =
            new ConcurrentHashMap<>();

    private final String name;
    private final String description;
    private final int minPartSizeBytes;
    private final ConcurrentNavigableMap<String, StoredObject> objects;
    private final AtomicBoolean closed = new AtomicBoolean();

    private MemObjectStore(String name, int minPartSizeBytes) {
        this.name = name;
        this.description = "mem://" + name;
        this.minPartSizeBytes = minPartSizeBytes;
        this.objects = BUCKETS.computeIfAbsent(name, n -> new ConcurrentSkipListMap<>(StoreSupport.KEY_ORDER));
    }

    /** Opens a handle on the named bucket, creating the bucket if it does not exist. */
    public static MemObjectStore open(String name, int minPartSizeBytes) {
        if (name == null || name.isEmpty()) {
            throw new ObjectStoreException("mem object store: a name is required, as in mem://name", false);
        }
        return new MemObjectStore(name, minPartSizeBytes);
    }

    /**
     * Drops the named bucket and its objects, for test isolation. Handles opened before keep a detached, empty
     * bucket of their own; open new ones.
     */
    public static void clear(String name) {
        ConcurrentNavigableMap<String, StoredObject> objects = BUCKETS.remove(name);
        if (objects != null) {
            objects.clear();
        }
    }

    /** The bucket's name. */
    public String name() {
        return name;
    }

    @Override
    public CompletableFuture<Void> put(String key, ByteBuf data) {
        return run(key, () -> {
            checkKey(key);
            objects.put(key, new StoredObject(StoreSupport.copyReadable(data), System.currentTimeMillis()));
            return null;
        });
    }

    @Override
    public CompletableFuture<Boolean> putIfAbsent(String key, ByteBuf data) {
        return run(key, () -> {
            checkKey(key);
            StoredObject object = new StoredObject(StoreSupport.copyReadable(data), System.currentTimeMillis());
            return objects.putIfAbsent(key, object) == null;
        });
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key, long position, int length) {
        return run(key, () -> {
            checkKey(key);
            StoreSupport.checkRangeArguments(description, key, position, length);
            byte[] bytes = require(key).bytes;
            int count = StoreSupport.clipRange(description, key, bytes.length, position, length);
            return Unpooled.copiedBuffer(bytes, (int) position, count);
        });
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key) {
        return run(key, () -> Unpooled.copiedBuffer(require(key).bytes));
    }

    @Override
    public CompletableFuture<List<ByteBuf>> getSplit(String key, long position, int[] lengths) {
        return run(key, () -> {
            checkKey(key);
            int total = ObjectStore.splitLength(description, key, position, lengths);
            byte[] bytes = require(key).bytes;
            if (position + total > bytes.length) {
                throw new ObjectStoreException(description + ": '" + key + "' has " + bytes.length + " bytes, it ends "
                        + "before the split read [" + position + ", " + (position + total) + ")", false);
            }
            List<ByteBuf> parts = new ArrayList<>(lengths.length);
            int at = (int) position;
            for (int length : lengths) {
                parts.add(Unpooled.copiedBuffer(bytes, at, length));
                at += length;
            }
            return parts;
        });
    }

    @Override
    public CompletableFuture<Optional<ObjectInfo>> head(String key) {
        return run(key, () -> {
            checkKey(key);
            StoredObject object = objects.get(key);
            return Optional.ofNullable(object).map(o -> new ObjectInfo(key, o.bytes.length, o.lastModifiedMs));
        });
    }

    @Override
    public CompletableFuture<List<ObjectInfo>> list(String prefix) {
        return run(prefix, () -> {
            List<ObjectInfo> found = new ArrayList<>();
            for (Map.Entry<String, StoredObject> e : objects.tailMap(prefix, true).entrySet()) {
                if (!e.getKey().startsWith(prefix)) {
                    break; // keys sharing a prefix are contiguous in code point order
                }
                found.add(new ObjectInfo(e.getKey(), e.getValue().bytes.length, e.getValue().lastModifiedMs));
            }
            return found;
        });
    }

    @Override
    public CompletableFuture<Void> delete(Collection<String> keys) {
        return run(keys.size() + " keys", () -> {
            for (String key : keys) {
                checkKey(key);
            }
            for (String key : keys) {
                objects.remove(key);
            }
            return null;
        });
    }

    @Override
    public CompletableFuture<MultipartUpload> startMultipart(String key) {
        return run(key, () -> new MemMultipartUpload(key));
    }

    @Override
    public int minPartSizeBytes() {
        return minPartSizeBytes;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public void close() {
        closed.set(true);
    }

    @Override
    public String toString() {
        return description;
    }

    private StoredObject require(String key) {
        StoredObject object = objects.get(key);
        if (object == null) {
            throw new ObjectNotFoundException(description + ": no object '" + key + "'");
        }
        return object;
    }

    private void checkKey(String key) {
        if (key == null || key.isEmpty()) {
            throw new ObjectStoreException(description + ": a key must not be empty", false);
        }
    }

    /** An operation on the bucket. */
    @FunctionalInterface
    private interface Operation<T> {
        T run();
    }

    private <T> CompletableFuture<T> run(String subject, Operation<T> operation) {
        if (closed.get()) {
            return StoreSupport.failed(description + ": request on '" + subject + "' refused: store is closed");
        }
        try {
            if (subject == null) {
                throw new ObjectStoreException(description + ": a key or prefix must not be null", false);
            }
            return CompletableFuture.completedFuture(operation.run());
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(new ObjectStoreException(description + ": request on '" + subject
                    + "' failed: " + e, e, false));
        }
    }

    /**
     * An immutable stored object.
     *
     * @param bytes          content; never handed to a caller
     * @param lastModifiedMs when it was written
     */
    private record StoredObject(byte[] bytes, long lastModifiedMs) {
    }

    /** A multipart upload whose parts are held by the upload until it completes. */
    private final class MemMultipartUpload implements MultipartUpload {
        private final String key;
        private final ConcurrentSkipListMap<Integer, byte[]> parts = new ConcurrentSkipListMap<>();
        private String finished; // "completed" or "aborted"; guarded by this

        MemMultipartUpload(String key) {
            this.key = key;
            checkKey(key);
        }

        @Override
        public String key() {
            return key;
        }

        @Override
        public CompletableFuture<Void> uploadPart(int partNumber, ByteBuf data) {
            return run(key, () -> {
                StoreSupport.checkPartNumber(description, key, partNumber);
                byte[] bytes = StoreSupport.copyReadable(data);
                storePart(partNumber, bytes);
                return null;
            });
        }

        @Override
        public CompletableFuture<Void> uploadPartCopy(int partNumber, String sourceKey, long position, long length) {
            return run(key, () -> {
                StoreSupport.checkPartNumber(description, key, partNumber);
                byte[] source = require(sourceKey).bytes;
                StoreSupport.checkCopyRange(description, sourceKey, source.length, position, length);
                byte[] bytes = new byte[(int) length];
                System.arraycopy(source, (int) position, bytes, 0, (int) length);
                storePart(partNumber, bytes);
                return null;
            });
        }

        @Override
        public CompletableFuture<Void> complete() {
            return run(key, () -> {
                synchronized (this) {
                    if ("completed".equals(finished)) {
                        return null;
                    }
                    checkOpen("complete");
                    if (parts.isEmpty()) {
                        throw new ObjectStoreException(description + ": cannot complete multipart upload of '" + key
                                + "' without parts", false);
                    }
                    long total = 0;
                    Integer last = parts.lastKey();
                    for (Map.Entry<Integer, byte[]> part : parts.entrySet()) {
                        int size = part.getValue().length;
                        if (!part.getKey().equals(last) && size < minPartSizeBytes) {
                            throw new ObjectStoreException(description + ": part " + part.getKey()
                                    + " of multipart upload of '" + key + "' has " + size + " bytes; every part but"
                                    + " the last needs at least " + minPartSizeBytes, false);
                        }
                        total += size;
                    }
                    if (total > Integer.MAX_VALUE - 8) {
                        throw new ObjectStoreException(description + ": multipart upload of '" + key + "' holds "
                                + total + " bytes, more than an in-memory object can", false);
                    }
                    byte[] bytes = new byte[(int) total];
                    int at = 0;
                    for (byte[] part : parts.values()) {
                        System.arraycopy(part, 0, bytes, at, part.length);
                        at += part.length;
                    }
                    objects.put(key, new StoredObject(bytes, System.currentTimeMillis()));
                    finished = "completed";
                    parts.clear();
                    return null;
                }
            });
        }

        @Override
        public CompletableFuture<Void> abort() {
            return run(key, () -> {
                synchronized (this) {
                    if (finished == null) {
                        finished = "aborted";
                        parts.clear();
                    }
                    return null;
                }
            });
        }

        private synchronized void storePart(int partNumber, byte[] bytes) {
            checkOpen("upload a part to");
            parts.put(partNumber, bytes); // a part uploaded again (a retry) replaces the earlier one, as on S3
        }

        private void checkOpen(String operation) {
            if (finished != null) {
                throw new ObjectStoreException(description + ": cannot " + operation + " multipart upload of '" + key
                        + "': it was " + finished, false);
            }
        }
    }
}
