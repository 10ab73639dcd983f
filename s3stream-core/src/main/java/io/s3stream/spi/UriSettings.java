package io.s3stream.spi;

import io.s3stream.ByteSize;
import io.s3stream.InvalidConfigException;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Reading the settings backends take from their URI ({@code blockdev:///path/wal.img?capacity=2GiB}), with errors that
 * name the URI, the setting and what is accepted. For WAL, object-store and metadata backend authors.
 */
public final class UriSettings {

    private UriSettings() {
    }

    /**
     * The query parameters, percent-decoded, in order. A parameter without {@code =} has the value "", empty pairs
     * ({@code a=1&&b=2}) are skipped. Opaque URIs ({@code manifest:default?pollMs=500}) are read the same way. This is
     * the one parser of URI settings in the project: backends built in and backends in modules use it alike.
     */
    public static Map<String, String> query(URI uri) {
        Map<String, String> out = new LinkedHashMap<>();
        String raw = rawQuery(uri);
        if (raw == null || raw.isEmpty()) {
            return out;
        }
        for (String pair : raw.split("&")) {
            if (pair.isEmpty()) {
                continue;
            }
            int eq = pair.indexOf('=');
            String k = eq < 0 ? pair : pair.substring(0, eq);
            String v = eq < 0 ? "" : pair.substring(eq + 1);
            out.put(URLDecoder.decode(k, StandardCharsets.UTF_8), URLDecoder.decode(v, StandardCharsets.UTF_8));
        }
        return out;
    }

    /**
     * Refuses parameters outside {@code known}, so that a typo does not pass silently. The error names the URI without
     * its query, which may hold credentials.
     */
    public static Map<String, String> query(URI uri, Set<String> known) {
        Map<String, String> query = query(uri);
        for (String key : query.keySet()) {
            if (!known.contains(key)) {
                throw new InvalidConfigException(withoutQuery(uri) + ": unknown parameter '" + key + "' (known: "
                        + new TreeSet<>(known) + ")");
            }
        }
        return Collections.unmodifiableMap(query);
    }

    /** {@code uri} without its query (which may hold keys or passwords): what logs and error messages may show. */
    public static String withoutQuery(URI uri) {
        String text = uri.toString();
        int q = text.indexOf('?');
        return q < 0 ? text : text.substring(0, q);
    }

    private static String rawQuery(URI uri) {
        if (!uri.isOpaque()) {
            return uri.getRawQuery();
        }
        String ssp = uri.getRawSchemeSpecificPart();
        int q = ssp.indexOf('?');
        return q < 0 ? null : ssp.substring(q + 1);
    }

    /**
     * A positive byte size: {@code 4096}, {@code 64KiB}, {@code 512MiB}, {@code 2GiB}, {@code 1TiB}; KB/MB/GB and K/M/G
     * are read as binary units too.
     *
     * @param where names the setting in the error, for example the URI and the parameter name
     */
    public static long parseBytes(String where, String value) {
        return ByteSize.parse(where, value);
    }

    /** A whole number. */
    public static long parseLong(String where, String value) {
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new InvalidConfigException(where + " must be a number, was '" + value + "'", e);
        }
    }
}
