package io.s3stream.wal.fsx.internal;

import io.s3stream.InvalidConfigException;
import io.s3stream.spi.UriSettings;
import io.s3stream.wal.blockdev.internal.BlockDeviceWalConfig;
import io.s3stream.wal.blockdev.internal.WalDescriptor;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The settings of one fsx WAL, parsed and validated once from its URI:
 * {@code fsx:///mnt/fsx/s3stream?capacity=256MiB&segmentBytes=64MiB&inflight=4&writeBytes=1MiB&directIo=auto}.
 *
 * @param uri          the URI as given
 * @param directory    the shared directory; each node keeps its WAL under {@code <directory>/<nodeId>/}
 * @param capacityBytes the ring capacity of one generation (all of its segment files together)
 * @param segmentBytes the size of one preallocated segment file (the capacity is a whole number of segments)
 * @param inflight     group-commit writes in flight at once (1 to 16)
 * @param writeBytes   the largest group-commit write
 * @param directIo     {@code auto}: {@code O_DIRECT|O_DSYNC} when the file system accepts it, otherwise {@code pwrite}
 *                     + {@code fdatasync}; {@code on}: refuse to start without direct IO; {@code off}: never use it
 * @param writeTimeout a group-commit write (or its {@code fdatasync}) that has not returned after this long fences the
 *                     WAL with a clear error instead of leaving appends waiting on a file server that stopped answering
 */
public record FsxWalConfig(URI uri, Path directory, long capacityBytes, long segmentBytes, int inflight,
                           int writeBytes, DirectIo directIo, Duration writeTimeout) {
    public static final long DEFAULT_CAPACITY_BYTES = 256L * 1024 * 1024;
    public static final long DEFAULT_SEGMENT_BYTES = 64L * 1024 * 1024;
    public static final Duration DEFAULT_WRITE_TIMEOUT = Duration.ofSeconds(10);
    private static final Set<String> KNOWN = Set.of("capacity", "segmentBytes", "inflight", "writeBytes", "directIo",
            "writeTimeoutMs");

    /** The direct-IO policy. */
    public enum DirectIo {
        AUTO, ON, OFF
    }

    public FsxWalConfig {
        if (segmentBytes < 64 * 1024 || segmentBytes % WalDescriptor.BLOCK_BYTES != 0) {
            throw new InvalidConfigException(uri + ": segmentBytes must be a multiple of " + WalDescriptor.BLOCK_BYTES
                    + " of at least 64KiB, was " + segmentBytes);
        }
        if (capacityBytes < WalDescriptor.MIN_CAPACITY_BYTES) {
            throw new InvalidConfigException(uri + ": capacity of " + capacityBytes + " bytes is too small; the "
                    + "smallest WAL is " + WalDescriptor.MIN_CAPACITY_BYTES + " bytes");
        }
        if (capacityBytes < segmentBytes || capacityBytes % segmentBytes != 0) {
            throw new InvalidConfigException(uri + ": capacity (" + capacityBytes + " bytes) must be a whole number "
                    + "of segments of segmentBytes=" + segmentBytes + " bytes");
        }
        if (capacityBytes / segmentBytes > 1024) {
            throw new InvalidConfigException(uri + ": " + capacityBytes / segmentBytes + " segments is too many; "
                    + "use a larger segmentBytes (at most 1024 segment files)");
        }
        if (writeTimeout.toMillis() < 10) {
            throw new InvalidConfigException(uri + ": writeTimeoutMs must be at least 10, was " + writeTimeout.toMillis());
        }
        // BlockDeviceWalConfig's checks of inflight and writeBytes, with the same messages.
        new BlockDeviceWalConfig(uri, directory, capacityBytes, inflight, writeBytes);
    }

    /** Parses {@code fsx:///dir?...}. */
    public static FsxWalConfig parse(URI uri) {
        if (!"fsx".equals(uri.getScheme())) {
            throw new InvalidConfigException(uri + ": not an fsx:// URI");
        }
        if (uri.getAuthority() != null && !uri.getAuthority().isEmpty()) {
            throw new InvalidConfigException(uri + ": an fsx URI names an absolute directory with three slashes, such "
                    + "as fsx:///mnt/fsx/s3stream (found host '" + uri.getAuthority() + "')");
        }
        String rawPath = uri.getPath();
        if (rawPath == null || !rawPath.startsWith("/")) {
            throw new InvalidConfigException(uri + ": an fsx URI needs the absolute path of a directory on the shared "
                    + "file system, such as fsx:///mnt/fsx/s3stream");
        }
        Map<String, String> query = UriSettings.query(uri);
        for (String key : query.keySet()) {
            if (!KNOWN.contains(key)) {
                throw new InvalidConfigException(uri + ": unknown parameter '" + key + "' (known: " + KNOWN + ")");
            }
        }
        long capacity = bytes(uri, query, "capacity", DEFAULT_CAPACITY_BYTES);
        long segment = bytes(uri, query, "segmentBytes", Math.min(DEFAULT_SEGMENT_BYTES, capacity));
        int inflight = (int) (query.containsKey("inflight")
                ? UriSettings.parseLong(uri + ": inflight", query.get("inflight")) : BlockDeviceWalConfig.DEFAULT_INFLIGHT);
        long writeBytes = bytes(uri, query, "writeBytes", BlockDeviceWalConfig.DEFAULT_WRITE_BYTES);
        if (writeBytes > Integer.MAX_VALUE) {
            throw new InvalidConfigException(uri + ": writeBytes is too large: " + writeBytes);
        }
        DirectIo directIo;
        String mode = query.getOrDefault("directIo", "auto");
        try {
            directIo = DirectIo.valueOf(mode.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new InvalidConfigException(uri + ": directIo must be auto, on or off, was '" + mode + "'");
        }
        Duration writeTimeout = query.containsKey("writeTimeoutMs")
                ? Duration.ofMillis(UriSettings.parseLong(uri + ": writeTimeoutMs", query.get("writeTimeoutMs")))
                : DEFAULT_WRITE_TIMEOUT;
        return new FsxWalConfig(uri, Path.of(rawPath), capacity, segment, inflight, (int) writeBytes, directIo,
                writeTimeout);
    }

    private static long bytes(URI uri, Map<String, String> query, String key, long fallback) {
        return query.containsKey(key) ? UriSettings.parseBytes(uri + ": " + key, query.get(key)) : fallback;
    }

    /** The directory holding one node's WAL. */
    public Path nodeDirectory(long nodeId) {
        return directory.resolve(Long.toString(nodeId));
    }
}
