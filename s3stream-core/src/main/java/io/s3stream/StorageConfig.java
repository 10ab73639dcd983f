package io.s3stream;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * Immutable, validated settings of a {@link StreamStorage}. Built with {@link #builder()}; {@link Builder#build()}
 * checks every value once and names the offending setting in its {@link InvalidConfigException}.
 *
 * <p>Defaults: objects go to {@code file://<dataDir>/objects}; the WAL comes from the first WAL module on the class
 * path that offers a default (for example {@code s3stream-wal-blockdev}'s {@code blockdev://<dataDir>/wal.img});
 * metadata is the manifest kept in the object store.
 *
 * <h2>Memory budgets</h2>
 * The log cache and the block cache have separate budgets that cannot borrow from each other, so a consumer replaying
 * history can never push tail data out of memory. Unless set, the engine derives them when it starts from the JVM's
 * direct-memory limit ({@code -XX:MaxDirectMemorySize}, or the maximum heap when that is unset): the log cache gets a
 * quarter of it (between 64 MiB and 1 GiB), the block cache an eighth (between 32 MiB and 512 MiB), half of which is
 * its read-ahead area. The rest is left to the WAL's buffers, upload buffers and network IO. The engine refuses to
 * start when the two budgets together exceed the limit, or when a derived budget breaks a rule below.
 *
 * <h2>Settings by key</h2>
 * Every setting also has a key, as a properties file names it ({@code log.cache.bytes}, {@code upload.interval.ms}):
 * {@link Builder#set} applies one from a string (sizes accept units: {@code 64MiB}), {@link #settings()} lists them
 * with their defaults and meaning. kafka-shell reads each as {@code s3stream.<key>}.
 */
public final class StorageConfig {
    static final long MIB = 1024L * 1024;

    private final long nodeId;
    private final Path dataDir;
    private final String wal;
    private final String objectStore;
    private final String metadata;
    /** A budget left to the engine (derived from the direct-memory limit). */
    private static final long UNSET = Long.MIN_VALUE;
    private static final int UNSET_INT = Integer.MIN_VALUE;

    private final OptionalLong logCacheBytes;
    private final OptionalLong blockCacheBytes;
    private final long uploadThresholdBytes;
    private final Duration uploadInterval;
    private final long streamObjectThresholdBytes;
    private final int objectBlockSizeBytes;
    private final int maxBatchBytes;
    private final Duration backpressureTimeout;
    private final boolean compactionEnabled;
    private final Duration compactionInterval;
    private final Duration compactionMaxAge;
    private final long streamObjectTargetBytes;
    private final double compactionDeadShareThreshold;
    private final Duration objectDeletionGracePeriod;
    private final long compactionBytesPerSecond;
    private final int compactionConcurrency;
    private final long compactionMemoryBytes;
    private final long keyCompactionMapBytes;
    private final Duration compactionRunTimeout;
    private final long multipartThresholdBytes;
    private final int objectStoreMaxInFlight;
    private final Duration costLogInterval;
    private final OptionalLong readAheadBytes;
    private final OptionalInt readAheadMaxWindowBytes;
    private final int catchUpMaxInFlight;
    private final long catchUpBytesPerSecond;
    private final double catchUpCpuTarget;

    private StorageConfig(Builder b) {
        this.nodeId = b.nodeId;
        this.dataDir = b.dataDir;
        this.wal = b.wal;
        this.objectStore = b.objectStore != null ? b.objectStore : b.dataDir.resolve("objects").toUri().toString();
        this.metadata = b.metadata;
        this.logCacheBytes = b.logCacheBytes == UNSET ? OptionalLong.empty() : OptionalLong.of(b.logCacheBytes);
        this.blockCacheBytes = b.blockCacheBytes == UNSET ? OptionalLong.empty() : OptionalLong.of(b.blockCacheBytes);
        this.uploadThresholdBytes = b.uploadThresholdBytes;
        this.uploadInterval = b.uploadInterval;
        this.streamObjectThresholdBytes = b.streamObjectThresholdBytes;
        this.objectBlockSizeBytes = b.objectBlockSizeBytes;
        this.maxBatchBytes = b.maxBatchBytes;
        this.backpressureTimeout = b.backpressureTimeout;
        this.compactionEnabled = b.compactionEnabled;
        this.compactionInterval = b.compactionInterval;
        this.compactionMaxAge = b.compactionMaxAge;
        this.streamObjectTargetBytes = b.streamObjectTargetBytes;
        this.compactionDeadShareThreshold = b.compactionDeadShareThreshold;
        this.objectDeletionGracePeriod = b.objectDeletionGracePeriod;
        this.compactionBytesPerSecond = b.compactionBytesPerSecond;
        this.compactionConcurrency = b.compactionConcurrency;
        this.compactionMemoryBytes = b.compactionMemoryBytes;
        this.keyCompactionMapBytes = b.keyCompactionMapBytes;
        this.compactionRunTimeout = b.compactionRunTimeout;
        this.multipartThresholdBytes = b.multipartThresholdBytes;
        this.objectStoreMaxInFlight = b.objectStoreMaxInFlight;
        this.costLogInterval = b.costLogInterval;
        this.readAheadBytes = b.readAheadBytes == UNSET ? OptionalLong.empty() : OptionalLong.of(b.readAheadBytes);
        this.readAheadMaxWindowBytes = b.readAheadMaxWindowBytes == UNSET_INT ? OptionalInt.empty()
                : OptionalInt.of(b.readAheadMaxWindowBytes);
        this.catchUpMaxInFlight = b.catchUpMaxInFlight;
        this.catchUpBytesPerSecond = b.catchUpBytesPerSecond;
        this.catchUpCpuTarget = b.catchUpCpuTarget;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** This node's id; unique among the nodes sharing one object store. */
    public long nodeId() {
        return nodeId;
    }

    /** Directory for the node's local files (the default WAL file and the default local object store). */
    public Path dataDir() {
        return dataDir;
    }

    /** WAL URI, or empty to use the first WAL module on the class path that offers a default. */
    public Optional<String> wal() {
        return Optional.ofNullable(wal);
    }

    /** Object store URI ({@code file://…}, {@code mem://…}, {@code s3://…}, {@code azblob://…}). */
    public String objectStore() {
        return objectStore;
    }

    /** Metadata store URI, or empty for the manifest kept in the object store. */
    public Optional<String> metadata() {
        return Optional.ofNullable(metadata);
    }

    /**
     * Memory budget of the log cache (recent appends, before and shortly after upload); empty: derived by the engine
     * from the direct-memory limit.
     */
    public OptionalLong logCacheBytes() {
        return logCacheBytes;
    }

    /** Memory budget of the block cache (data blocks read from objects); empty: derived by the engine. */
    public OptionalLong blockCacheBytes() {
        return blockCacheBytes;
    }

    /** Size of the log cache's active block at which it is uploaded. */
    public long uploadThresholdBytes() {
        return uploadThresholdBytes;
    }

    /** Age of the log cache's active block at which it is uploaded even if small. */
    public Duration uploadInterval() {
        return uploadInterval;
    }

    /** A stream with at least this many bytes in one upload gets its own stream object. */
    public long streamObjectThresholdBytes() {
        return streamObjectThresholdBytes;
    }

    /** Target size of a data block inside an object: the unit of ranged reads and of the block cache. */
    public int objectBlockSizeBytes() {
        return objectBlockSizeBytes;
    }

    /** Largest payload one {@link RecordBatch} may carry. */
    public int maxBatchBytes() {
        return maxBatchBytes;
    }

    /** How long an append waits for log-cache or WAL space before failing with {@link OverCapacityException}. */
    public Duration backpressureTimeout() {
        return backpressureTimeout;
    }

    /** Whether the background compactor runs (merging and splitting objects, reclaiming trimmed and deleted data, deleting retired objects after the grace period). */
    public boolean compactionEnabled() {
        return compactionEnabled;
    }

    /** Pause between two compaction rounds of this node. */
    public Duration compactionInterval() {
        return compactionInterval;
    }

    /** Data of a stream set object older than this is always split out into stream objects, so stream set objects stay young and few. */
    public Duration compactionMaxAge() {
        return compactionMaxAge;
    }

    /** Adjacent small stream objects of one stream are merged up to about this size. */
    public long streamObjectTargetBytes() {
        return streamObjectTargetBytes;
    }

    /** An object whose share of trimmed or deleted data reaches this fraction is rewritten without it. */
    public double compactionDeadShareThreshold() {
        return compactionDeadShareThreshold;
    }

    /** How long an object retired from the manifest stays in the bucket before it is deleted, so reads in flight finish. */
    public Duration objectDeletionGracePeriod() {
        return objectDeletionGracePeriod;
    }

    /** Throttle: bytes compaction reads and writes through this node per second. */
    public long compactionBytesPerSecond() {
        return compactionBytesPerSecond;
    }

    /** Object-store requests one compaction run keeps in flight (reads ahead plus part uploads). */
    public int compactionConcurrency() {
        return compactionConcurrency;
    }

    /** Memory budget of compaction: read-ahead chunks, the open block and the part being uploaded. */
    public long compactionMemoryBytes() {
        return compactionMemoryBytes;
    }

    /**
     * Memory of key compaction's key map (24 bytes per distinct key at most 90% full: about 28 MB per million keys).
     * A stream whose not-yet-compacted data holds more distinct keys than fit is compacted in several passes.
     */
    public long keyCompactionMapBytes() {
        return keyCompactionMapBytes;
    }

    /** Longest a compaction run may take: its prepared output ids expire after this, so outputs of a crashed run are deleted. */
    public Duration compactionRunTimeout() {
        return compactionRunTimeout;
    }

    /** Objects larger than this are uploaded as multipart uploads with parts sent concurrently. */
    public long multipartThresholdBytes() {
        return multipartThresholdBytes;
    }

    /** Object-store requests in flight at once (uploads, reads, compaction together; reads get a capped share). */
    public int objectStoreMaxInFlight() {
        return objectStoreMaxInFlight;
    }

    /** Period of the object-store cost report in the log; zero for none. */
    public Duration costLogInterval() {
        return costLogInterval;
    }

    /**
     * The block cache's read-ahead area, part of {@link #blockCacheBytes()}; 0 disables read-ahead; empty: half the
     * block cache.
     */
    public OptionalLong readAheadBytes() {
        return readAheadBytes;
    }

    /** The largest read-ahead window of one sequential reader; empty: derived from the read-ahead area. */
    public OptionalInt readAheadMaxWindowBytes() {
        return readAheadMaxWindowBytes;
    }

    /** Object-store reads of catch-up (sequential) readers in flight at once, read-ahead included. */
    public int catchUpMaxInFlight() {
        return catchUpMaxInFlight;
    }

    /** Average bandwidth catch-up readers may take from the object store; 0 for no limit. */
    public long catchUpBytesPerSecond() {
        return catchUpBytesPerSecond;
    }

    /**
     * The machine's CPU load (0..1) above which catch-up reads back off while the node takes appends (within
     * {@link #catchUpBytesPerSecond()}); 0: they never back off.
     */
    public double catchUpCpuTarget() {
        return catchUpCpuTarget;
    }

    @Override
    public String toString() {
        return "StorageConfig{nodeId=" + nodeId + ", dataDir=" + dataDir + ", wal=" + wal
                + ", objectStore=" + objectStore + ", metadata=" + metadata
                + ", logCacheBytes=" + logCacheBytes + ", blockCacheBytes=" + blockCacheBytes
                + ", uploadThresholdBytes=" + uploadThresholdBytes + ", uploadInterval=" + uploadInterval
                + ", streamObjectThresholdBytes=" + streamObjectThresholdBytes
                + ", objectBlockSizeBytes=" + objectBlockSizeBytes + ", maxBatchBytes=" + maxBatchBytes
                + ", backpressureTimeout=" + backpressureTimeout
                + ", compactionEnabled=" + compactionEnabled
                + ", compactionInterval=" + compactionInterval
                + ", compactionMaxAge=" + compactionMaxAge
                + ", streamObjectTargetBytes=" + streamObjectTargetBytes
                + ", compactionDeadShareThreshold=" + compactionDeadShareThreshold
                + ", objectDeletionGracePeriod=" + objectDeletionGracePeriod
                + ", compactionBytesPerSecond=" + compactionBytesPerSecond
                + ", compactionConcurrency=" + compactionConcurrency
                + ", compactionMemoryBytes=" + compactionMemoryBytes
                + ", keyCompactionMapBytes=" + keyCompactionMapBytes
                + ", compactionRunTimeout=" + compactionRunTimeout
                + ", multipartThresholdBytes=" + multipartThresholdBytes
                + ", objectStoreMaxInFlight=" + objectStoreMaxInFlight + ", costLogInterval=" + costLogInterval
                + ", backpressureTimeout=" + backpressureTimeout + ", readAheadBytes=" + readAheadBytes
                + ", readAheadMaxWindowBytes=" + readAheadMaxWindowBytes + ", catchUpMaxInFlight=" + catchUpMaxInFlight
                + ", catchUpBytesPerSecond=" + catchUpBytesPerSecond + ", catchUpCpuTarget=" + catchUpCpuTarget + '}';
    }

    /**
     * One setting as a properties file names it.
     *
     * @param key          its key, such as {@code log.cache.bytes}
     * @param kind         what its value is: {@code bytes} (units allowed), {@code ms}, {@code count}, {@code ratio},
     *                     {@code boolean}, {@code uri}, {@code path}
     * @param defaultValue the default, or a sentence saying how it is derived
     * @param description  what it means
     */
    public record Setting(String key, String kind, String defaultValue, String description) {
    }

    /** Every setting, in a stable order: what {@link Builder#set} accepts. */
    public static List<Setting> settings() {
        return StorageSettings.settings();
    }

    /** Collects settings; {@link #build()} validates them. Only {@code nodeId} and {@code dataDir} are required. */
    public static final class Builder {
        long nodeId = -1;
        Path dataDir;
        String wal;
        String objectStore;
        String metadata;
        // Budgets derived from the direct-memory limit unless set. The sentinel is not -1, so that a negative value
        // someone sets is refused by build() instead of silently meaning "derive it".
        long logCacheBytes = UNSET;
        long blockCacheBytes = UNSET;
        long readAheadBytes = UNSET;
        int readAheadMaxWindowBytes = UNSET_INT;
        int catchUpMaxInFlight = 8;
        long catchUpBytesPerSecond;
        double catchUpCpuTarget = 0.8;
        long uploadThresholdBytes = 32 * MIB;
        Duration uploadInterval = Duration.ofSeconds(10);
        long streamObjectThresholdBytes = 8 * MIB;
        int objectBlockSizeBytes = (int) (512 * 1024L);
        int maxBatchBytes = (int) (8 * MIB);
        Duration backpressureTimeout = Duration.ofSeconds(5);
        boolean compactionEnabled = true;
        Duration compactionInterval = Duration.ofSeconds(60);
        Duration compactionMaxAge = Duration.ofMinutes(30);
        long streamObjectTargetBytes = 256 * MIB;
        double compactionDeadShareThreshold = 0.5;
        Duration objectDeletionGracePeriod = Duration.ofSeconds(60);
        long compactionBytesPerSecond = 64 * MIB;
        int compactionConcurrency = 4;
        long compactionMemoryBytes = 64 * MIB;
        long keyCompactionMapBytes = 16 * MIB;
        Duration compactionRunTimeout = Duration.ofMinutes(30);
        long multipartThresholdBytes = 64 * MIB;
        int objectStoreMaxInFlight = 64;
        Duration costLogInterval = Duration.ofMinutes(1);

        private Builder() {
        }

        public Builder nodeId(long nodeId) {
            this.nodeId = nodeId;
            return this;
        }

        public Builder dataDir(Path dataDir) {
            this.dataDir = dataDir;
            return this;
        }

        public Builder wal(String uri) {
            this.wal = uri;
            return this;
        }

        public Builder objectStore(String uri) {
            this.objectStore = uri;
            return this;
        }

        public Builder metadata(String uri) {
            this.metadata = uri;
            return this;
        }

        public Builder logCacheBytes(long bytes) {
            this.logCacheBytes = bytes;
            return this;
        }

        public Builder blockCacheBytes(long bytes) {
            this.blockCacheBytes = bytes;
            return this;
        }

        /** Part of the block cache for blocks read ahead; 0 disables read-ahead. Default: half the block cache. */
        public Builder readAheadBytes(long bytes) {
            this.readAheadBytes = bytes;
            return this;
        }

        /** Largest read-ahead window of one reader. Default: a quarter of the read-ahead area, at most 32 MiB. */
        public Builder readAheadMaxWindowBytes(int bytes) {
            this.readAheadMaxWindowBytes = bytes;
            return this;
        }

        /** Catch-up object-store reads in flight at once. Default 8. */
        public Builder catchUpMaxInFlight(int n) {
            this.catchUpMaxInFlight = n;
            return this;
        }

        /** Average catch-up read bandwidth; 0 (the default) for no limit beyond the store's priorities. */
        public Builder catchUpBytesPerSecond(long bytesPerSecond) {
            this.catchUpBytesPerSecond = bytesPerSecond;
            return this;
        }

        /**
         * CPU load (0..1) of the machine above which catch-up reads back off while appends are taken. Default 0.8;
         * 0 turns the governor off.
         */
        public Builder catchUpCpuTarget(double load) {
            this.catchUpCpuTarget = load;
            return this;
        }

        public Builder uploadThresholdBytes(long bytes) {
            this.uploadThresholdBytes = bytes;
            return this;
        }

        public Builder uploadInterval(Duration interval) {
            this.uploadInterval = interval;
            return this;
        }

        public Builder streamObjectThresholdBytes(long bytes) {
            this.streamObjectThresholdBytes = bytes;
            return this;
        }

        public Builder objectBlockSizeBytes(int bytes) {
            this.objectBlockSizeBytes = bytes;
            return this;
        }

        public Builder maxBatchBytes(int bytes) {
            this.maxBatchBytes = bytes;
            return this;
        }

        public Builder backpressureTimeout(Duration timeout) {
            this.backpressureTimeout = timeout;
            return this;
        }

        /** @see StorageConfig#compactionEnabled() */
        public Builder compactionEnabled(boolean value) {
            this.compactionEnabled = value;
            return this;
        }

        /** @see StorageConfig#compactionInterval() */
        public Builder compactionInterval(Duration value) {
            this.compactionInterval = value;
            return this;
        }

        /** @see StorageConfig#compactionMaxAge() */
        public Builder compactionMaxAge(Duration value) {
            this.compactionMaxAge = value;
            return this;
        }

        /** @see StorageConfig#streamObjectTargetBytes() */
        public Builder streamObjectTargetBytes(long value) {
            this.streamObjectTargetBytes = value;
            return this;
        }

        /** @see StorageConfig#compactionDeadShareThreshold() */
        public Builder compactionDeadShareThreshold(double value) {
            this.compactionDeadShareThreshold = value;
            return this;
        }

        /** @see StorageConfig#objectDeletionGracePeriod() */
        public Builder objectDeletionGracePeriod(Duration value) {
            this.objectDeletionGracePeriod = value;
            return this;
        }

        /** @see StorageConfig#compactionBytesPerSecond() */
        public Builder compactionBytesPerSecond(long value) {
            this.compactionBytesPerSecond = value;
            return this;
        }

        /** @see StorageConfig#compactionConcurrency() */
        public Builder compactionConcurrency(int value) {
            this.compactionConcurrency = value;
            return this;
        }

        /** @see StorageConfig#compactionMemoryBytes() */
        public Builder compactionMemoryBytes(long value) {
            this.compactionMemoryBytes = value;
            return this;
        }

        /** @see StorageConfig#keyCompactionMapBytes() */
        public Builder keyCompactionMapBytes(long value) {
            this.keyCompactionMapBytes = value;
            return this;
        }

        /** @see StorageConfig#compactionRunTimeout() */
        public Builder compactionRunTimeout(Duration value) {
            this.compactionRunTimeout = value;
            return this;
        }

        public Builder multipartThresholdBytes(long bytes) {
            this.multipartThresholdBytes = bytes;
            return this;
        }

        public Builder objectStoreMaxInFlight(int requests) {
            this.objectStoreMaxInFlight = requests;
            return this;
        }

        public Builder costLogInterval(Duration interval) {
            this.costLogInterval = interval;
            return this;
        }

        /** Validates every setting and returns the immutable config. */
        public StorageConfig build() {
            require(nodeId >= 0, "nodeId", "must be set to a value >= 0", nodeId);
            if (dataDir == null) {
                throw new InvalidConfigException("StorageConfig.dataDir must be set: the directory for this node's local files");
            }
            if (wal != null) {
                checkUri("wal", wal);
            }
            if (objectStore != null) {
                checkUri("objectStore", objectStore);
            }
            if (metadata != null) {
                checkUri("metadata", metadata);
            }
            // Budgets left unset are derived by the engine when it starts; the rules that relate them to other
            // settings are checked here for the budgets that are set, and by the engine for the derived ones.
            require(logCacheBytes == UNSET || logCacheBytes >= 4 * MIB, "logCacheBytes", "must be >= 4 MiB",
                    logCacheBytes);
            require(blockCacheBytes == UNSET || blockCacheBytes >= MIB, "blockCacheBytes", "must be >= 1 MiB",
                    blockCacheBytes);
            require(readAheadBytes == UNSET || readAheadBytes >= 0, "readAheadBytes", "must be >= 0", readAheadBytes);
            require(readAheadMaxWindowBytes == UNSET_INT || readAheadMaxWindowBytes >= 0, "readAheadMaxWindowBytes",
                    "must be >= 0", readAheadMaxWindowBytes);
            if (blockCacheBytes >= 0 && readAheadBytes >= 0) {
                require(readAheadBytes <= blockCacheBytes / 2, "readAheadBytes",
                        "must be >= 0 and <= blockCacheBytes / 2 (" + blockCacheBytes / 2 + ")", readAheadBytes);
            }
            if (readAheadBytes >= 0 && readAheadMaxWindowBytes >= 0) {
                require(readAheadMaxWindowBytes <= readAheadBytes, "readAheadMaxWindowBytes",
                        "must be >= 0 and <= readAheadBytes (" + readAheadBytes + ")", readAheadMaxWindowBytes);
            }
            require(catchUpMaxInFlight >= 1, "catchUpMaxInFlight", "must be >= 1", catchUpMaxInFlight);
            require(catchUpBytesPerSecond >= 0, "catchUpBytesPerSecond", "must be >= 0", catchUpBytesPerSecond);
            require(catchUpCpuTarget >= 0 && catchUpCpuTarget < 1, "catchUpCpuTarget", "must be in [0, 1)",
                    catchUpCpuTarget);
            require(uploadThresholdBytes >= 64 * 1024, "uploadThresholdBytes", "must be >= 64 KiB",
                    uploadThresholdBytes);
            if (logCacheBytes >= 0) {
                require(uploadThresholdBytes <= logCacheBytes / 2, "uploadThresholdBytes",
                        "must be >= 64 KiB and <= logCacheBytes / 2 (" + logCacheBytes / 2 + ")", uploadThresholdBytes);
            }
            Objects.requireNonNull(uploadInterval, "uploadInterval");
            require(!uploadInterval.isNegative() && !uploadInterval.isZero(), "uploadInterval", "must be positive",
                    uploadInterval);
            require(streamObjectThresholdBytes >= 0, "streamObjectThresholdBytes", "must be >= 0",
                    streamObjectThresholdBytes);
            require(objectBlockSizeBytes >= 4096 && objectBlockSizeBytes <= 64 * MIB, "objectBlockSizeBytes",
                    "must be between 4 KiB and 64 MiB", objectBlockSizeBytes);
            require(maxBatchBytes >= 1 && maxBatchBytes <= uploadThresholdBytes, "maxBatchBytes",
                    "must be >= 1 and <= uploadThresholdBytes (" + uploadThresholdBytes + ")", maxBatchBytes);
            Objects.requireNonNull(backpressureTimeout, "backpressureTimeout");
            require(!backpressureTimeout.isNegative(), "backpressureTimeout", "must not be negative",
                    backpressureTimeout);
            requirePositive("compactionInterval", compactionInterval);
            requirePositive("compactionMaxAge", compactionMaxAge);
            require(streamObjectTargetBytes >= 64 * 1024, "streamObjectTargetBytes", "must be >= 64 KiB",
                    streamObjectTargetBytes);
            require(compactionDeadShareThreshold > 0 && compactionDeadShareThreshold <= 1,
                    "compactionDeadShareThreshold", "must be in (0, 1]", compactionDeadShareThreshold);
            Objects.requireNonNull(objectDeletionGracePeriod, "objectDeletionGracePeriod");
            require(!objectDeletionGracePeriod.isNegative(), "objectDeletionGracePeriod", "must not be negative",
                    objectDeletionGracePeriod);
            require(compactionBytesPerSecond >= 64 * 1024, "compactionBytesPerSecond", "must be >= 64 KiB/s",
                    compactionBytesPerSecond);
            require(compactionConcurrency >= 1 && compactionConcurrency <= 64, "compactionConcurrency",
                    "must be between 1 and 64", compactionConcurrency);
            require(compactionMemoryBytes >= 4L * objectBlockSizeBytes, "compactionMemoryBytes",
                    "must be >= 4 x objectBlockSizeBytes (" + 4L * objectBlockSizeBytes + ")", compactionMemoryBytes);
            require(keyCompactionMapBytes >= 64 * 1024 && keyCompactionMapBytes <= 8L << 30, "keyCompactionMapBytes",
                    "must be between 64 KiB and 8 GiB", keyCompactionMapBytes);
            requirePositive("compactionRunTimeout", compactionRunTimeout);
            require(multipartThresholdBytes >= 5 * MIB, "multipartThresholdBytes",
                    "must be >= 5 MiB (S3's smallest part)", multipartThresholdBytes);
            require(objectStoreMaxInFlight >= 1, "objectStoreMaxInFlight", "must be >= 1", objectStoreMaxInFlight);
            Objects.requireNonNull(costLogInterval, "costLogInterval");
            require(!costLogInterval.isNegative(), "costLogInterval", "must not be negative", costLogInterval);
            return new StorageConfig(this);
        }

        /**
         * Applies one setting given by its key and a string value, as a properties file holds it (see
         * {@link StorageConfig#settings()}); sizes accept units ({@code 64MiB}), durations are milliseconds.
         *
         * @throws InvalidConfigException naming the key when it is unknown or the value does not parse
         */
        public Builder set(String key, String value) {
            StorageSettings.apply(this, key, value);
            return this;
        }

        private static void requirePositive(String setting, Duration value) {
            Objects.requireNonNull(value, setting);
            require(!value.isNegative() && !value.isZero(), setting, "must be positive", value);
        }

        private static void require(boolean ok, String setting, String rule, Object value) {
            if (!ok) {
                throw new InvalidConfigException("StorageConfig." + setting + " " + rule + ", was " + value);
            }
        }

        private static void checkUri(String setting, String value) {
            try {
                URI uri = new URI(value);
                if (uri.getScheme() == null) {
                    throw new InvalidConfigException("StorageConfig." + setting + " must be a URI with a scheme "
                            + "(for example file:///var/lib/s3stream/objects), was '" + value + "'");
                }
            } catch (URISyntaxException e) {
                throw new InvalidConfigException("StorageConfig." + setting + " is not a valid URI: " + e.getMessage(), e);
            }
        }
    }
}
