package io.s3stream.internal.store.common;

import io.s3stream.spi.ObjectStoreException;
import io.s3stream.spi.UriSettings;

import java.net.URI;
import java.util.Map;
import java.util.Set;

/**
 * The parts of a remote object store URI ({@code s3://bucket/prefix?…}, {@code azblob://account/container/prefix?…}):
 * its authority, its path segments and its query settings, validated against the settings the backend knows so that a
 * typo fails at open time instead of being ignored.
 *
 * @param uri      the URI as given, for messages (with secrets masked by {@link #redacted()})
 * @param settings query settings, percent-decoded
 */
public record StoreUri(URI uri, Map<String, String> settings) {

    public static StoreUri parse(URI uri, Set<String> known) {
        Map<String, String> settings = UriSettings.query(uri);
        for (String name : settings.keySet()) {
            if (!known.contains(name)) {
                throw new ObjectStoreException(UriSettings.withoutQuery(uri) + ": unknown setting '" + name
                        + "' (known: " + String.join(", ", known.stream().sorted().toList()) + ")", false);
            }
        }
        return new StoreUri(uri, Map.copyOf(settings));
    }

    public String get(String name, String fallback) {
        String v = settings.get(name);
        return v == null || v.isEmpty() ? fallback : v;
    }

    public int intSetting(String name, int fallback, int min) {
        String v = settings.get(name);
        if (v == null || v.isEmpty()) {
            return fallback;
        }
        try {
            int parsed = Integer.parseInt(v);
            if (parsed >= min) {
                return parsed;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new ObjectStoreException(redacted() + ": " + name + " must be an integer >= " + min + ", was '" + v + "'",
                false);
    }

    public boolean boolSetting(String name, boolean fallback) {
        String v = settings.get(name);
        if (v == null || v.isEmpty()) {
            return fallback;
        }
        return switch (v) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new ObjectStoreException(redacted() + ": " + name + " must be true or false, was '" + v
                    + "'", false);
        };
    }

    /** The URI without its query (which may hold keys): safe for logs and error messages. */
    public String redacted() {
        return UriSettings.withoutQuery(uri);
    }

    /** The key prefix from a path: no leading slash, a trailing slash unless empty. */
    public static String prefix(String path) {
        String p = path == null ? "" : path;
        while (p.startsWith("/")) {
            p = p.substring(1);
        }
        if (!p.isEmpty() && !p.endsWith("/")) {
            p = p + "/";
        }
        return p;
    }
}
