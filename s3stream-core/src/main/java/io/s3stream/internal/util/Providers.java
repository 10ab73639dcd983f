package io.s3stream.internal.util;

import io.s3stream.InvalidConfigException;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * Backends by URI scheme through {@link ServiceLoader}: the one lookup of WAL, object-store and metadata providers,
 * with one behaviour for all three (where it looks, what a broken provider gives).
 */
public final class Providers {
    private Providers() {
    }

    /**
     * Every provider of {@code type} that this library's class loader sees (the module path, or the class path), or
     * failing that the thread's context class loader (an application server's).
     *
     * @param setting the configuration setting being resolved, named when a provider on the path is broken
     * @throws InvalidConfigException when a provider cannot be loaded
     */
    public static <T> List<T> load(Class<T> type, String setting) {
        List<T> out = new ArrayList<>();
        try {
            ServiceLoader.load(type, Providers.class.getClassLoader()).forEach(out::add);
            if (out.isEmpty()) {
                ServiceLoader.load(type).forEach(out::add);
            }
        } catch (ServiceConfigurationError e) {
            throw new InvalidConfigException(setting + ": a " + type.getSimpleName() + " on the class path is broken: "
                    + e.getMessage(), e);
        }
        return out;
    }

    /** The provider whose scheme is {@code wanted}, ignoring case, or null. */
    public static <T> T byScheme(List<T> providers, Function<T, String> scheme, String wanted) {
        String w = wanted == null ? "" : wanted.toLowerCase(Locale.ROOT);
        for (T p : providers) {
            if (scheme.apply(p).toLowerCase(Locale.ROOT).equals(w)) {
                return p;
            }
        }
        return null;
    }

    /** The providers' schemes, sorted, for error messages. */
    public static <T> TreeSet<String> schemes(List<T> providers, Function<T, String> scheme) {
        TreeSet<String> out = new TreeSet<>();
        providers.forEach(p -> out.add(scheme.apply(p)));
        return out;
    }
}
