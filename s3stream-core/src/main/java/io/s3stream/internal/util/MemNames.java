package io.s3stream.internal.util;

import io.s3stream.InvalidConfigException;
import io.s3stream.spi.UriSettings;

import java.net.URI;

/**
 * The name in a {@code mem://name} URI: the one form that the three in-memory backends (WAL, object store, metadata)
 * accept, parsed once. Each backend keeps its instances in a JVM-wide registry under that name, so that an engine
 * restarted in the same JVM (as tests do to simulate a crash) finds what its previous instance left.
 */
public final class MemNames {
    private MemNames() {
    }

    /**
     * The store name of {@code uri}, which must be {@code mem://name}, optionally with a query of settings.
     *
     * @param backend what the URI configures, for the error ("mem WAL", "mem object store", …)
     * @throws InvalidConfigException when the URI is not of that form
     */
    public static String of(URI uri, String backend) {
        String name = uri == null ? null : uri.getRawAuthority();
        String path = uri == null ? null : uri.getRawPath();
        if (uri == null || !"mem".equalsIgnoreCase(uri.getScheme()) || name == null || name.isEmpty()
                || (path != null && !path.isEmpty())) {
            throw new InvalidConfigException(backend + " URI " + (uri == null ? "null" : "'"
                    + UriSettings.withoutQuery(uri) + "'") + " is not of the form mem://name (a name, no path; "
                    + "settings in the query)");
        }
        return name;
    }
}
