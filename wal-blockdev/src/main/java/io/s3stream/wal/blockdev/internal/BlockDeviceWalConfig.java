package io.s3stream.wal.blockdev.internal;

import io.s3stream.InvalidConfigException;
import io.s3stream.spi.UriSettings;

import java.net.URI;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

/**
 * The settings of one blockdev WAL, parsed and validated once from its URI:
 * {@code blockdev:///var/lib/app/wal.img?capacity=2GiB&inflight=2&writeBytes=1MiB}.
 *
 * @param uri           the URI as given
 * @param path          the file or block device
 * @param capacityBytes the requested capacity, or -1 for "the file's or device's size" (a new file then gets
 *                      {@link #DEFAULT_CAPACITY_BYTES})
 * @param inflight      group-commit writes in flight at once (1 to 16)
 * @param writeBytes    the largest group-commit write (a larger single record is written alone)
 */
public record BlockDeviceWalConfig(URI uri, Path path, long capacityBytes, int inflight, int writeBytes) {
    /** Capacity of a WAL file created without {@code capacity=}: modest, so a laptop or CI runner can afford it. */
    public static final long DEFAULT_CAPACITY_BYTES = 512L * 1024 * 1024;
    /** Writes in flight; 4 gave the highest throughput at every record size here (see the module README). */
    public static final int DEFAULT_INFLIGHT = 4;
    public static final int DEFAULT_WRITE_BYTES = 1024 * 1024;
    private static final Set<String> KNOWN = Set.of("capacity", "inflight", "writeBytes");

    public BlockDeviceWalConfig {
        if (inflight < 1 || inflight > 16) {
            throw new InvalidConfigException(uri + ": inflight must be between 1 and 16, was " + inflight);
        }
        if (writeBytes < 64 * 1024 || writeBytes > 64 * 1024 * 1024 || writeBytes % WalDescriptor.BLOCK_BYTES != 0) {
            throw new InvalidConfigException(uri + ": writeBytes must be a multiple of 4096 between 64KiB and 64MiB, "
                    + "was " + writeBytes);
        }
    }

    /** Parses {@code blockdev:///path?capacity=...}. */
    public static BlockDeviceWalConfig parse(URI uri) {
        if (!"blockdev".equals(uri.getScheme())) {
            throw new InvalidConfigException(uri + ": not a blockdev:// URI");
        }
        if (uri.getAuthority() != null && !uri.getAuthority().isEmpty()) {
            throw new InvalidConfigException(uri + ": a blockdev URI names an absolute path with three slashes, "
                    + "such as blockdev:///dev/nvme1n1 or blockdev:///var/lib/app/wal.img (found host '"
                    + uri.getAuthority() + "')");
        }
        String rawPath = uri.getPath();
        if (rawPath == null || rawPath.isEmpty() || !rawPath.startsWith("/")) {
            throw new InvalidConfigException(uri + ": a blockdev URI needs an absolute path, such as "
                    + "blockdev:///dev/nvme1n1");
        }
        Map<String, String> query = query(uri);
        for (String key : query.keySet()) {
            if (!KNOWN.contains(key)) {
                throw new InvalidConfigException(uri + ": unknown parameter '" + key + "' (known: " + KNOWN + ")");
            }
        }
        long capacity = query.containsKey("capacity") ? parseBytes(uri, "capacity", query.get("capacity")) : -1;
        int inflight = query.containsKey("inflight") ? (int) parseLong(uri, "inflight", query.get("inflight"))
                : DEFAULT_INFLIGHT;
        long writeBytes = query.containsKey("writeBytes") ? parseBytes(uri, "writeBytes", query.get("writeBytes"))
                : DEFAULT_WRITE_BYTES;
        if (writeBytes > Integer.MAX_VALUE) {
            throw new InvalidConfigException(uri + ": writeBytes is too large: " + writeBytes);
        }
        return new BlockDeviceWalConfig(uri, Path.of(rawPath), capacity, inflight, (int) writeBytes);
    }

    private static Map<String, String> query(URI uri) {
        return UriSettings.query(uri);
    }

    private static long parseLong(URI uri, String name, String value) {
        return UriSettings.parseLong(uri + ": " + name, value);
    }

    /** {@code 4096}, {@code 64KiB}, {@code 512MiB}, {@code 2GiB} (KB/MB/GB are read as binary units too). */
    static long parseBytes(URI uri, String name, String value) {
        return UriSettings.parseBytes(uri + ": " + name, value);
    }
}
