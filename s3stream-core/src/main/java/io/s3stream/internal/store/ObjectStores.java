package io.s3stream.internal.store;

import io.s3stream.InvalidConfigException;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreProvider;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.TreeSet;

/**
 * Opens the {@link ObjectStore} a URI names, finding its backend by scheme among the {@link ObjectStoreProvider}s
 * that {@link ServiceLoader} sees (this module's {@code file} and {@code mem}, and those of any store module on the
 * class or module path).
 */
public final class ObjectStores {
    /** The configuration setting the URI comes from, named in errors. */
    static final String SETTING = "objectStore";

    private ObjectStores() {
    }

    /**
     * Opens the store at {@code uri}.
     *
     * @throws InvalidConfigException when the URI is malformed or no backend serves its scheme
     * @throws io.s3stream.spi.ObjectStoreException when the backend cannot open the store (it names the problem)
     */
    public static ObjectStore open(String uri) {
        if (uri == null || uri.isBlank()) {
            throw new InvalidConfigException(SETTING + " must be a URI such as file:///var/lib/s3stream/objects, was "
                    + (uri == null ? "null" : "'" + uri + "'"));
        }
        URI parsed;
        try {
            parsed = new URI(uri);
        } catch (URISyntaxException e) {
            throw new InvalidConfigException(SETTING + " '" + uri + "' is not a valid URI: " + e.getMessage(), e);
        }
        String scheme = parsed.getScheme();
        if (scheme == null) {
            throw new InvalidConfigException(SETTING + " '" + uri + "' has no scheme; expected one of "
                    + availableSchemes() + ", as in file:///var/lib/s3stream/objects");
        }
        ObjectStoreProvider provider = find(scheme);
        if (provider == null) {
            throw new InvalidConfigException(SETTING + " '" + uri + "': no object store for scheme '" + scheme
                    + "' on the class path; available: " + availableSchemes()
                    + " (s3, file and mem are built in; azblob also needs com.azure:azure-storage-blob on the class path)");
        }
        return provider.open(parsed);
    }

    private static ObjectStoreProvider find(String scheme) {
        String wanted = scheme.toLowerCase(Locale.ROOT);
        try {
            for (ObjectStoreProvider provider : ServiceLoader.load(ObjectStoreProvider.class)) {
                if (provider.scheme().toLowerCase(Locale.ROOT).equals(wanted)) {
                    return provider;
                }
            }
        } catch (ServiceConfigurationError e) {
            throw new InvalidConfigException(SETTING + ": an object store provider on the class path is broken: "
                    + e.getMessage(), e);
        }
        return null;
    }

    /** Schemes of every provider found, sorted. */
    static TreeSet<String> availableSchemes() {
        TreeSet<String> schemes = new TreeSet<>();
        for (ObjectStoreProvider provider : ServiceLoader.load(ObjectStoreProvider.class)) {
            schemes.add(provider.scheme());
        }
        return schemes;
    }
}
