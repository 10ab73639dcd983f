package io.s3stream.wal.object.internal;

import io.s3stream.InvalidConfigException;
import io.s3stream.spi.UriSettings;

import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The settings of an object WAL, from its URI:
 * <ul>
 *   <li>{@code objectwal://?batchMs=50} keeps the log in the engine's own object store (under {@code wal/<nodeId>/});</li>
 *   <li>{@code objectwal://<scheme>/<rest>?...} keeps it in another store, {@code <scheme>://<rest>?...} with the
 *       parameters below removed: {@code objectwal://s3/fast-bucket/wal?region=us-east-1&batchMs=10} writes to
 *       {@code s3://fast-bucket/wal?region=us-east-1} (for example an S3 Express One Zone bucket for the WAL while data
 *       goes to a standard bucket), {@code objectwal://file/var/lib/wal} to {@code file:///var/lib/wal}.</li>
 * </ul>
 *
 * @param store        the store's URI, or empty for the engine's
 * @param batchMs      longest a record waits for its window to close
 * @param batchBytes   a window closes once it holds this many payload bytes
 * @param maxInFlight  windows (objects) being written at once, at most {@link WalObjectDescriptor#MAX_IN_FLIGHT}
 * @param blockBytes   target size of a data block in the objects (the unit of ranged reads once adopted)
 * @param capacity     bytes appended and not yet trimmed beyond which appends wait for a trim
 * @param failAfter    how long one object's write is retried (timeouts, throttling, 5xx) before the log is fenced
 */
record ObjectWalConfig(Optional<URI> store, Duration batchMs, long batchBytes, int maxInFlight, int blockBytes,
                       long capacity, Duration failAfter) {

    static final Set<String> KNOWN = Set.of("batchMs", "batchBytes", "maxInFlight", "blockBytes", "capacity",
            "failAfterMs");

    static ObjectWalConfig parse(URI uri) {
        Map<String, String> all = UriSettings.query(uri);
        Map<String, String> own = new LinkedHashMap<>();
        Map<String, String> storeParams = new LinkedHashMap<>();
        all.forEach((k, v) -> (KNOWN.contains(k) ? own : storeParams).put(k, v));
        Optional<URI> store = storeUri(uri, storeParams);
        long batchMs = value(uri, own, "batchMs", 50, 1, 60_000);
        long batchBytes = own.containsKey("batchBytes")
                ? UriSettings.parseBytes(uri + ": batchBytes", own.get("batchBytes")) : 8L << 20;
        long maxInFlight = value(uri, own, "maxInFlight", 4, 1, WalObjectDescriptor.MAX_IN_FLIGHT);
        long blockBytes = own.containsKey("blockBytes")
                ? UriSettings.parseBytes(uri + ": blockBytes", own.get("blockBytes")) : 512L << 10;
        long capacity = own.containsKey("capacity")
                ? UriSettings.parseBytes(uri + ": capacity", own.get("capacity")) : 4L << 30;
        long failAfterMs = value(uri, own, "failAfterMs", 60_000, 100, Long.MAX_VALUE);
        if (batchBytes > 1L << 30) {
            throw new InvalidConfigException(UriSettings.withoutQuery(uri) + ": batchBytes must be at most 1 GiB, was "
                    + batchBytes);
        }
        if (blockBytes < 4096 || blockBytes > 64L << 20) {
            throw new InvalidConfigException(UriSettings.withoutQuery(uri) + ": blockBytes must be between 4 KiB and 64 MiB, was "
                    + blockBytes);
        }
        if (capacity < 2 * batchBytes) {
            throw new InvalidConfigException(UriSettings.withoutQuery(uri) + ": capacity must be at least twice batchBytes (" + 2 * batchBytes
                    + "), was " + capacity);
        }
        return new ObjectWalConfig(store, Duration.ofMillis(batchMs), batchBytes, (int) maxInFlight, (int) blockBytes,
                capacity, Duration.ofMillis(failAfterMs));
    }

    private static Optional<URI> storeUri(URI uri, Map<String, String> storeParams) {
        String scheme = uri.getAuthority();
        if (scheme == null || scheme.isEmpty()) {
            if (!storeParams.isEmpty()) {
                throw new InvalidConfigException(UriSettings.withoutQuery(uri) + ": unknown parameter(s) " + storeParams.keySet()
                        + " (known: "
                        + KNOWN + "; store parameters belong to objectwal://<scheme>/<rest>?...)");
            }
            return Optional.empty();
        }
        String path = uri.getRawPath() == null ? "" : uri.getRawPath();
        String rest = scheme.equals("file") ? path : path.replaceFirst("^/", "");
        StringBuilder s = new StringBuilder(scheme).append("://").append(rest);
        if (!storeParams.isEmpty()) {
            s.append('?');
            boolean first = true;
            for (Map.Entry<String, String> e : storeParams.entrySet()) {
                if (!first) {
                    s.append('&');
                }
                first = false;
                s.append(URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8)).append('=')
                        .append(URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8));
            }
        }
        try {
            return Optional.of(new URI(s.toString()));
        } catch (java.net.URISyntaxException e) {
            throw new InvalidConfigException(UriSettings.withoutQuery(uri) + ": the store URI it names is not valid (at index "
                    + e.getIndex() + ")", e);
        }
    }

    private static long value(URI uri, Map<String, String> q, String key, long dflt, long min, long max) {
        if (!q.containsKey(key)) {
            return dflt;
        }
        long v = UriSettings.parseLong(uri + ": " + key, q.get(key));
        if (v < min || v > max) {
            throw new InvalidConfigException(UriSettings.withoutQuery(uri) + ": " + key + " must be between " + min + " and "
                    + max + ", was " + v);
        }
        return v;
    }
}
