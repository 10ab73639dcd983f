package io.s3stream.internal.store;

import io.s3stream.InvalidConfigException;
import io.s3stream.internal.util.Providers;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreProvider;
import io.s3stream.spi.UriSettings;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Opens the {@link ObjectStore} a URI names, finding its backend by scheme among the {@link ObjectStoreProvider}s on
 * the class or module path ({@link Providers}): this module's {@code file} and {@code mem}, {@code s3} from
 * s3stream-store-s3, {@code azblob} from s3stream-store-azure, and those of any other module.
 */
public final class ObjectStores {
    /** The configuration setting the URI comes from, named in errors. */
    static final String SETTING = "objectStore";

    /** The artifact that serves each scheme this project ships outside core, named when it is missing. */
    static final Map<String, String> MODULES = Map.of(
            "s3", "io.s3stream:s3stream-store-s3",
            "azblob", "io.s3stream:s3stream-store-azure");

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
                    + (uri == null ? "null" : "'" + uri + "'")); // blank: nothing to hide
        }
        URI parsed;
        try {
            parsed = new URI(uri);
        } catch (URISyntaxException e) {
            throw new InvalidConfigException(SETTING + " '" + beforeQuery(uri) + "' is not a valid URI (at index "
                    + e.getIndex() + ")", e);
        }
        String scheme = parsed.getScheme();
        if (scheme == null) {
            throw new InvalidConfigException(SETTING + " '" + beforeQuery(uri) + "' has no scheme; expected one of "
                    + availableSchemes() + ", as in file:///var/lib/s3stream/objects");
        }
        ObjectStoreProvider provider = find(scheme);
        if (provider == null) {
            String module = MODULES.get(scheme);
            throw new InvalidConfigException(SETTING + " '" + UriSettings.withoutQuery(parsed)
                    + "': no object store for scheme '" + scheme + "' on the class path; "
                    + (module != null ? "add the artifact " + module + " to the application; " : "")
                    + "available: " + availableSchemes());
        }
        return provider.open(parsed);
    }

    private static ObjectStoreProvider find(String scheme) {
        List<ObjectStoreProvider> providers = Providers.load(ObjectStoreProvider.class, SETTING);
        return Providers.byScheme(providers, ObjectStoreProvider::scheme, scheme);
    }

    /** Schemes of every provider found, sorted. */
    static TreeSet<String> availableSchemes() {
        return Providers.schemes(Providers.load(ObjectStoreProvider.class, SETTING), ObjectStoreProvider::scheme);
    }

    /** {@code uri} up to its query, which may hold keys: what an error message may show of a setting that does not parse. */
    private static String beforeQuery(String uri) {
        int q = uri.indexOf('?');
        return q < 0 ? uri : uri.substring(0, q) + "?…";
    }
}
