package io.s3stream;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * The string-keyed view of {@link StorageConfig}: every setting's key ({@code log.cache.bytes}), kind, meaning and
 * default, and how a string value (a properties file's, kafka-shell's {@code s3stream.<key>}) applies to a
 * {@link StorageConfig.Builder}. {@link StorageConfig#settings()} and {@link StorageConfig.Builder#set} are its public
 * face; validation stays in {@link StorageConfig.Builder#build()}.
 */
final class StorageSettings {
    private StorageSettings() {
    }

    /** Every setting, in a stable order, with the defaults of a fresh builder. */
    static List<StorageConfig.Setting> settings() {
        StorageConfig.Builder defaults = StorageConfig.builder();
        List<StorageConfig.Setting> out = new ArrayList<>(KEYS.size());
        for (Key k : KEYS.values()) {
            out.add(new StorageConfig.Setting(k.key, k.kind, k.defaultValue.apply(defaults), k.description));
        }
        return out;
    }

    /** Applies {@code value} to the setting {@code key} of {@code b}. */
    static void apply(StorageConfig.Builder b, String key, String value) {
        Key k = KEYS.get(key);
        if (k == null) {
            throw new InvalidConfigException("unknown storage setting '" + key + "'; known settings: "
                    + String.join(", ", KEYS.keySet()));
        }
        if (value == null) {
            throw new InvalidConfigException("storage setting '" + key + "' needs a value");
        }
        k.apply.accept(b, value.trim());
    }

    /** A setting's key, kind, meaning, how a string applies to a builder and how its default reads. */
    private record Key(String key, String kind, String description, BiConsumer<StorageConfig.Builder, String> apply,
                       Function<StorageConfig.Builder, String> defaultValue) {
    }

    private static final Map<String, Key> KEYS = keys();

    private static Map<String, Key> keys() {
        Map<String, Key> m = new LinkedHashMap<>();
        key(m, "node.id", "count", "unique among the nodes sharing an object store",
                (b, v) -> b.nodeId(count("node.id", v)), b -> "required");
        key(m, "data.dir", "path", "local directory for the default WAL file and the default object store",
                (b, v) -> b.dataDir(Path.of(v)), b -> "required");
        key(m, "wal", "uri", "WAL: blockdev:///dev/nvme1n1, blockdev:///path/wal.img?capacity=2GiB, fsx:///mnt/shared, "
                + "objectwal://?batchMs=50, mem://name (tests)", StorageConfig.Builder::wal,
                b -> "first WAL module offering a default");
        key(m, "object.store", "uri", "object store: s3://bucket/prefix?region=..., azblob://account/container/prefix, "
                + "file:///dir, mem://name (tests)", StorageConfig.Builder::objectStore, b -> "file://<data.dir>/objects");
        key(m, "metadata", "uri", "metadata store: manifest:default?pollMs=500 (the manifest in the object store), "
                + "mem://name (tests)", StorageConfig.Builder::metadata, b -> "manifest:default");
        key(m, "log.cache.bytes", "bytes", "memory for recent appends; full: appends wait, then OverCapacityException",
                (b, v) -> b.logCacheBytes(bytes("log.cache.bytes", v)),
                b -> "1/4 of the direct-memory limit (64 MiB-1 GiB)");
        key(m, "block.cache.bytes", "bytes", "memory for data blocks read from objects, read-ahead area included",
                (b, v) -> b.blockCacheBytes(bytes("block.cache.bytes", v)),
                b -> "1/8 of the direct-memory limit (32-512 MiB)");
        key(m, "read.ahead.bytes", "bytes", "the block cache's read-ahead area for sequential (catch-up) readers; 0: off",
                (b, v) -> b.readAheadBytes(bytes("read.ahead.bytes", v)), b -> "half the block cache");
        key(m, "read.ahead.max.window.bytes", "bytes", "the largest read-ahead window of one reader",
                (b, v) -> b.readAheadMaxWindowBytes(intBytes("read.ahead.max.window.bytes", v)),
                b -> "min(32 MiB, read.ahead.bytes / 4)");
        key(m, "catch.up.max.in.flight", "count", "object-store reads of catch-up readers in flight",
                (b, v) -> b.catchUpMaxInFlight((int) count("catch.up.max.in.flight", v)),
                b -> String.valueOf(b.catchUpMaxInFlight));
        key(m, "catch.up.bytes.per.second", "bytes", "bandwidth cap of catch-up reads; 0: unlimited",
                (b, v) -> b.catchUpBytesPerSecond(bytes("catch.up.bytes.per.second", v)),
                b -> String.valueOf(b.catchUpBytesPerSecond));
        key(m, "catch.up.cpu.target", "ratio", "machine CPU load above which catch-up reads back off while appends "
                + "are taken; 0: never", (b, v) -> b.catchUpCpuTarget(ratio("catch.up.cpu.target", v)),
                b -> String.valueOf(b.catchUpCpuTarget));
        key(m, "upload.threshold.bytes", "bytes", "size at which the log cache's active block is uploaded",
                (b, v) -> b.uploadThresholdBytes(bytes("upload.threshold.bytes", v)),
                b -> String.valueOf(b.uploadThresholdBytes));
        key(m, "upload.interval.ms", "ms", "age at which the active block is uploaded even if small",
                (b, v) -> b.uploadInterval(millis("upload.interval.ms", v)), b -> ms(b.uploadInterval));
        key(m, "stream.object.threshold.bytes", "bytes", "a stream with this much data in one upload gets its own "
                + "stream object", (b, v) -> b.streamObjectThresholdBytes(bytes("stream.object.threshold.bytes", v)),
                b -> String.valueOf(b.streamObjectThresholdBytes));
        key(m, "object.block.size.bytes", "bytes", "target size of a data block (the unit of ranged reads and caching)",
                (b, v) -> b.objectBlockSizeBytes(intBytes("object.block.size.bytes", v)),
                b -> String.valueOf(b.objectBlockSizeBytes));
        key(m, "max.batch.bytes", "bytes", "largest payload of one batch",
                (b, v) -> b.maxBatchBytes(intBytes("max.batch.bytes", v)), b -> String.valueOf(b.maxBatchBytes));
        key(m, "backpressure.timeout.ms", "ms", "how long an append waits for space",
                (b, v) -> b.backpressureTimeout(millis("backpressure.timeout.ms", v)), b -> ms(b.backpressureTimeout));
        key(m, "compaction.enabled", "boolean", "background compaction and deletion rounds",
                (b, v) -> b.compactionEnabled(bool("compaction.enabled", v)), b -> String.valueOf(b.compactionEnabled));
        key(m, "compaction.interval.ms", "ms", "time between compaction rounds",
                (b, v) -> b.compactionInterval(millis("compaction.interval.ms", v)), b -> ms(b.compactionInterval));
        key(m, "compaction.max.age.ms", "ms", "stream-set-object data older than this is split into stream objects",
                (b, v) -> b.compactionMaxAge(millis("compaction.max.age.ms", v)), b -> ms(b.compactionMaxAge));
        key(m, "stream.object.target.bytes", "bytes", "small adjacent stream objects of a stream are merged up to this",
                (b, v) -> b.streamObjectTargetBytes(bytes("stream.object.target.bytes", v)),
                b -> String.valueOf(b.streamObjectTargetBytes));
        key(m, "compaction.dead.share.threshold", "ratio", "objects with this share of trimmed/deleted data are "
                + "rewritten", (b, v) -> b.compactionDeadShareThreshold(ratio("compaction.dead.share.threshold", v)),
                b -> String.valueOf(b.compactionDeadShareThreshold));
        key(m, "object.deletion.grace.period.ms", "ms", "retired objects stay in the bucket this long before deletion",
                (b, v) -> b.objectDeletionGracePeriod(millis("object.deletion.grace.period.ms", v)),
                b -> ms(b.objectDeletionGracePeriod));
        key(m, "compaction.bytes.per.second", "bytes", "compaction throttle",
                (b, v) -> b.compactionBytesPerSecond(bytes("compaction.bytes.per.second", v)),
                b -> String.valueOf(b.compactionBytesPerSecond));
        key(m, "compaction.concurrency", "count", "compaction requests in flight",
                (b, v) -> b.compactionConcurrency((int) count("compaction.concurrency", v)),
                b -> String.valueOf(b.compactionConcurrency));
        key(m, "compaction.memory.bytes", "bytes", "compaction's buffer budget (must hold one multipart part)",
                (b, v) -> b.compactionMemoryBytes(bytes("compaction.memory.bytes", v)),
                b -> String.valueOf(b.compactionMemoryBytes));
        key(m, "key.compaction.map.bytes", "bytes", "key compaction's key map (about 28 MB per million keys)",
                (b, v) -> b.keyCompactionMapBytes(bytes("key.compaction.map.bytes", v)),
                b -> String.valueOf(b.keyCompactionMapBytes));
        key(m, "compaction.run.timeout.ms", "ms", "time-to-live of a run's prepared outputs",
                (b, v) -> b.compactionRunTimeout(millis("compaction.run.timeout.ms", v)),
                b -> ms(b.compactionRunTimeout));
        key(m, "multipart.threshold.bytes", "bytes", "larger objects are uploaded as multipart uploads",
                (b, v) -> b.multipartThresholdBytes(bytes("multipart.threshold.bytes", v)),
                b -> String.valueOf(b.multipartThresholdBytes));
        key(m, "object.store.max.in.flight", "count", "object-store requests in flight",
                (b, v) -> b.objectStoreMaxInFlight((int) count("object.store.max.in.flight", v)),
                b -> String.valueOf(b.objectStoreMaxInFlight));
        key(m, "cost.log.interval.ms", "ms", "period of the object-store cost report in the log; 0: none",
                (b, v) -> b.costLogInterval(millis("cost.log.interval.ms", v)), b -> ms(b.costLogInterval));
        return Collections.unmodifiableMap(m);
    }

    private static void key(Map<String, Key> m, String key, String kind, String description,
                            BiConsumer<StorageConfig.Builder, String> apply, Function<StorageConfig.Builder, String> defaultValue) {
        m.put(key, new Key(key, kind, description, apply, defaultValue));
    }

    private static String ms(Duration d) {
        return String.valueOf(d.toMillis());
    }

    /** A byte size: a number, or a number with a binary unit (64KiB, 512MiB, 2GiB); 0 allowed. */
    private static long bytes(String key, String value) {
        return value.equals("0") ? 0 : ByteSize.parse("storage setting '" + key + "'", value);
    }

    private static int intBytes(String key, String value) {
        long n = bytes(key, value);
        if (n > Integer.MAX_VALUE) {
            throw new InvalidConfigException("storage setting '" + key + "' must be below 2 GiB, was '" + value + "'");
        }
        return (int) n;
    }

    private static long count(String key, String value) {
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new InvalidConfigException("storage setting '" + key + "' must be a number, was '" + value + "'", e);
        }
    }

    private static Duration millis(String key, String value) {
        return Duration.ofMillis(count(key, value));
    }

    private static double ratio(String key, String value) {
        try {
            return Double.parseDouble(value);
        } catch (NumberFormatException e) {
            throw new InvalidConfigException("storage setting '" + key + "' must be a number such as 0.5, was '"
                    + value + "'", e);
        }
    }

    private static boolean bool(String key, String value) {
        return switch (value.toLowerCase(java.util.Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new InvalidConfigException("storage setting '" + key + "' must be true or false, was '"
                    + value + "'");
        };
    }

}
