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

    /** The query parameters, percent-decoded, in order. A parameter without {@code =} has the value "". */
    public static Map<String, String> query(URI uri) {
        Map<String, String> out = new LinkedHashMap<>();
        String raw = uri.getRawQuery();
        if (raw == null || raw.isEmpty()) {
            return out;
        }
        for (String pair : raw.split("&")) {
            int eq = pair.indexOf('=');
            String k = eq < 0 ? pair : pair.substring(0, eq);
            String v = eq < 0 ? "" : pair.substring(eq + 1);
            out.put(URLDecoder.decode(k, StandardCharsets.UTF_8), URLDecoder.decode(v, StandardCharsets.UTF_8));
        }
        return out;
    }

    /** Refuses parameters outside {@code known}, so that a typo does not pass silently. */
    public static Map<String, String> query(URI uri, Set<String> known) {
        Map<String, String> query = query(uri);
        for (String key : query.keySet()) {
            if (!known.contains(key)) {
                throw new InvalidConfigException(uri + ": unknown parameter '" + key + "' (known: "
                        + new TreeSet<>(known) + ")");
            }
        }
        return Collections.unmodifiableMap(query);
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
