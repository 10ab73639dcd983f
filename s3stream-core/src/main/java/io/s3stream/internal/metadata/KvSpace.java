package io.s3stream.internal.metadata;

import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The manifest's key-value space: sorted string keys to byte values, with compare-and-set. Not thread-safe: it is
 * guarded by the monitor of the {@link ManifestState} holding it. Values are copied on the way in and out, so no
 * caller can change a stored value; {@link #snapshot()} shares them with the checkpoint, which never mutates them.
 * Every change has a dry-run form so that {@link ManifestState#check} validates an operation without applying it.
 */
final class KvSpace {

    private final TreeMap<String, byte[]> entries = new TreeMap<>();

    Optional<byte[]> get(String key) {
        Objects.requireNonNull(key, "key");
        byte[] value = entries.get(key);
        return value == null ? Optional.empty() : Optional.of(value.clone());
    }

    void put(String key, byte[] value, boolean dryRun) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        if (!dryRun) {
            entries.put(key, value.clone());
        }
    }

    void delete(String key, boolean dryRun) {
        Objects.requireNonNull(key, "key");
        if (!dryRun) {
            entries.remove(key);
        }
    }

    /** Copies of the entries whose key starts with {@code prefix}, in key order. */
    SortedMap<String, byte[]> list(String prefix) {
        Objects.requireNonNull(prefix, "prefix");
        TreeMap<String, byte[]> out = new TreeMap<>();
        for (Map.Entry<String, byte[]> e : entries.tailMap(prefix, true).entrySet()) {
            if (!e.getKey().startsWith(prefix)) {
                break;
            }
            out.put(e.getKey(), e.getValue().clone());
        }
        return out;
    }

    /**
     * Sets {@code key} to {@code value} (removes it when {@code value} is null) if its current value equals
     * {@code expected} (absent when {@code expected} is null); returns whether it matched. A dry run only compares.
     */
    boolean compareAndSet(String key, byte[] expected, byte[] value, boolean dryRun) {
        Objects.requireNonNull(key, "key");
        byte[] current = entries.get(key);
        boolean matches = expected == null ? current == null : current != null && Arrays.equals(current, expected);
        if (!matches || dryRun) {
            return matches;
        }
        if (value == null) {
            entries.remove(key);
        } else {
            entries.put(key, value.clone());
        }
        return true;
    }

    /** The entries, values shared: for a checkpoint, which never mutates them. */
    SortedMap<String, byte[]> snapshot() {
        return new TreeMap<>(entries);
    }

    /** Adds a checkpoint's entries, values shared as in {@link #snapshot()}. */
    void restore(SortedMap<String, byte[]> snapshot) {
        entries.putAll(snapshot);
    }
}
