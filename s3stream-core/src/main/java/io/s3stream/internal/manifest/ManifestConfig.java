package io.s3stream.internal.manifest;

import io.s3stream.InvalidConfigException;
import io.s3stream.spi.UriSettings;

import java.net.URI;
import java.util.HashMap;
import java.util.Map;

/**
 * Settings of a {@link ManifestMetadataStore}, validated once. From a URI such as
 * {@code manifest:default?pollMs=500&checkpointEvery=1000}: every parameter is optional.
 *
 * @param prefix            key prefix of the manifest in the object store ({@code prefix=}, default {@code manifest/})
 * @param pollMs            how often the view reads new entries of other writers; 0 disables polling
 * @param checkpointEvery   a checkpoint is written at every sequence number divisible by this
 * @param checkpointBytes   ...or when the entries since the last checkpoint exceed this many bytes
 * @param gcGraceMs         entries covered by the older of the two kept checkpoints are deleted only once that
 *                          checkpoint is this old; a writer whose view is older than half of it re-reads first
 * @param maxAttempts       attempts per object-store request before a commit fails with StorageIOException
 * @param maxRaces          lost races per commit before it fails with a retriable StorageIOException
 * @param backoffMs         first backoff between attempts of a failed store request (doubles, with full jitter)
 * @param maxBackoffMs      largest backoff
 * @param requestTimeoutMs  a request not answered within this is treated as failed with an unknown outcome
 */
public record ManifestConfig(String prefix, long pollMs, long checkpointEvery, long checkpointBytes, long gcGraceMs,
                             int maxAttempts, int maxRaces, long backoffMs, long maxBackoffMs, long requestTimeoutMs) {

    /** The defaults. */
    public static final ManifestConfig DEFAULTS =
            new ManifestConfig("manifest/", 500, 1000, 16L << 20, 60_000, 8, 1000, 10, 1000, 30_000);

    public ManifestConfig {
        if (prefix == null || prefix.isEmpty() || !prefix.endsWith("/")) {
            throw new InvalidConfigException("manifest prefix must be non-empty and end with '/', was " + prefix);
        }
        positive("checkpointEvery", checkpointEvery);
        positive("checkpointBytes", checkpointBytes);
        positive("gcGraceMs", gcGraceMs);
        positive("maxAttempts", maxAttempts);
        positive("maxRaces", maxRaces);
        positive("requestTimeoutMs", requestTimeoutMs);
        if (pollMs < 0 || backoffMs < 0 || maxBackoffMs < backoffMs) {
            throw new InvalidConfigException("manifest pollMs and backoffMs must be >= 0 and maxBackoffMs >= backoffMs,"
                    + " were " + pollMs + ", " + backoffMs + ", " + maxBackoffMs);
        }
    }

    private static void positive(String name, long value) {
        if (value <= 0) {
            throw new InvalidConfigException("manifest " + name + " must be > 0, was " + value);
        }
    }

    /** Parses {@code manifest:<name>?k=v&...}; the name is informative only. */
    public static ManifestConfig fromUri(URI uri) {
        if (uri == null || !"manifest".equalsIgnoreCase(uri.getScheme())) {
            throw new InvalidConfigException("metadata URI must look like manifest:default?pollMs=500, was " + uri);
        }
        Map<String, String> params = new HashMap<>(UriSettings.query(uri));
        ManifestConfig d = DEFAULTS;
        ManifestConfig c = new ManifestConfig(
                params.getOrDefault("prefix", d.prefix()),
                num(uri, params, "pollMs", d.pollMs()),
                num(uri, params, "checkpointEvery", d.checkpointEvery()),
                num(uri, params, "checkpointBytes", d.checkpointBytes()),
                num(uri, params, "gcGraceMs", d.gcGraceMs()),
                (int) num(uri, params, "maxAttempts", d.maxAttempts()),
                (int) num(uri, params, "maxRaces", d.maxRaces()),
                num(uri, params, "backoffMs", d.backoffMs()),
                num(uri, params, "maxBackoffMs", d.maxBackoffMs()),
                num(uri, params, "requestTimeoutMs", d.requestTimeoutMs()));
        if (!params.isEmpty()) {
            throw new InvalidConfigException("metadata URI " + UriSettings.withoutQuery(uri) + ": unknown parameter(s) "
                    + params.keySet());
        }
        return c;
    }

    private static long num(URI uri, Map<String, String> params, String name, long fallback) {
        String v = params.remove(name);
        if (v == null) {
            return fallback;
        }
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new InvalidConfigException("metadata URI " + UriSettings.withoutQuery(uri) + ": " + name + "=" + v
                    + " is not a number", e);
        }
    }

    public ManifestConfig withPollMs(long value) {
        return new ManifestConfig(prefix, value, checkpointEvery, checkpointBytes, gcGraceMs, maxAttempts, maxRaces,
                backoffMs, maxBackoffMs, requestTimeoutMs);
    }

    public ManifestConfig withCheckpointEvery(long value) {
        return new ManifestConfig(prefix, pollMs, value, checkpointBytes, gcGraceMs, maxAttempts, maxRaces,
                backoffMs, maxBackoffMs, requestTimeoutMs);
    }

    public ManifestConfig withGcGraceMs(long value) {
        return new ManifestConfig(prefix, pollMs, checkpointEvery, checkpointBytes, value, maxAttempts, maxRaces,
                backoffMs, maxBackoffMs, requestTimeoutMs);
    }

    public ManifestConfig withBackoff(long first, long max) {
        return new ManifestConfig(prefix, pollMs, checkpointEvery, checkpointBytes, gcGraceMs, maxAttempts, maxRaces,
                first, max, requestTimeoutMs);
    }

    public ManifestConfig withRequestTimeoutMs(long value) {
        return new ManifestConfig(prefix, pollMs, checkpointEvery, checkpointBytes, gcGraceMs, maxAttempts, maxRaces,
                backoffMs, maxBackoffMs, value);
    }
}
