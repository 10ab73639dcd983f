package io.s3stream.kafka.shell.topic;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * How the shell keeps a small set of properties as one value of the key-value space (topic records, group configs,
 * quotas): Java properties text, keys sorted and without the date comment, so equal contents give equal bytes (which
 * compare-and-set relies on).
 */
public final class StoredProperties {
    private StoredProperties() {
    }

    public static Properties parse(byte[] bytes) {
        Properties p = new Properties();
        try {
            p.load(new StringReader(new String(bytes, StandardCharsets.UTF_8)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return p;
    }

    /** The stored properties as a sorted map. */
    public static Map<String, String> parseMap(byte[] bytes) {
        Properties p = parse(bytes);
        Map<String, String> out = new TreeMap<>();
        p.stringPropertyNames().forEach(k -> out.put(k, p.getProperty(k)));
        return out;
    }

    public static byte[] format(Properties p) {
        Map<String, String> sorted = new TreeMap<>();
        p.stringPropertyNames().forEach(k -> sorted.put(k, p.getProperty(k)));
        return format(sorted);
    }

    public static byte[] format(Map<String, String> values) {
        Properties ordered = new Properties();
        ordered.putAll(new TreeMap<>(values));
        StringWriter w = new StringWriter();
        try {
            ordered.store(w, null);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        // Drop the date comment so equal contents give equal bytes.
        return w.toString().replaceFirst("^#.*\\R", "").getBytes(StandardCharsets.UTF_8);
    }
}
