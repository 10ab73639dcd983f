package io.s3stream.internal;

import io.s3stream.InvalidConfigException;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/** Parsing of byte sizes ({@code 64MiB}, {@code 2GiB}, {@code 4096}) and URI query parameters in settings. */
public final class Sizes {
    private Sizes() {
    }

    /** Parses {@code 123}, {@code 64KiB}, {@code 64MiB}, {@code 2GiB}, {@code 1TiB} (also KB/MB/GB as binary units). */
    public static long parseBytes(String setting, String value) {
        String v = value.trim().toUpperCase(Locale.ROOT);
        long unit = 1;
        String[][] units = {{"TIB", "TB", "T"}, {"GIB", "GB", "G"}, {"MIB", "MB", "M"}, {"KIB", "KB", "K"}, {"B"}};
        long[] factors = {1L << 40, 1L << 30, 1L << 20, 1L << 10, 1};
        outer:
        for (int i = 0; i < units.length; i++) {
            for (String suffix : units[i]) {
                if (v.endsWith(suffix)) {
                    unit = factors[i];
                    v = v.substring(0, v.length() - suffix.length()).trim();
                    break outer;
                }
            }
        }
        try {
            long n = Long.parseLong(v);
            if (n < 0 || n > Long.MAX_VALUE / unit) {
                throw new NumberFormatException("out of range");
            }
            return n * unit;
        } catch (NumberFormatException e) {
            throw new InvalidConfigException(setting + " must be a byte size such as 4096, 64MiB or 2GiB, was '"
                    + value + "'", e);
        }
    }

    /** The query parameters of a URI, decoded, in order. */
    public static Map<String, String> query(URI uri) {
        Map<String, String> out = new LinkedHashMap<>();
        String raw = uri.getRawQuery();
        if (raw == null || raw.isEmpty()) {
            return out;
        }
        for (String pair : raw.split("&")) {
            int eq = pair.indexOf('=');
            String k = eq < 0 ? pair : pair.substring(0, eq);
            String val = eq < 0 ? "" : pair.substring(eq + 1);
            out.put(URLDecoder.decode(k, StandardCharsets.UTF_8), URLDecoder.decode(val, StandardCharsets.UTF_8));
        }
        return out;
    }

    public static Optional<String> queryParameter(URI uri, String name) {
        return Optional.ofNullable(query(uri).get(name));
    }
}
