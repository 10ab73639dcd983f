package io.s3stream.internal.engine;

import io.s3stream.InvalidConfigException;
import io.s3stream.StorageConfig;
import io.s3stream.internal.util.Providers;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.MetadataStoreProvider;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.UriSettings;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.spi.WriteAheadLogProvider;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Finds WAL and metadata backends by URI scheme ({@link Providers}), with errors that say what to add. */
final class Backends {
    private static final System.Logger LOG = System.getLogger(Backends.class.getName());

    /** The artifact that serves each WAL scheme this project ships, named when it is missing. */
    private static final Map<String, String> WAL_MODULES = Map.of(
            "blockdev", "io.s3stream:s3stream-wal-blockdev",
            "objectwal", "io.s3stream:s3stream-wal-object",
            "fsx", "io.s3stream:s3stream-wal-fsx");

    private Backends() {
    }

    /** The WAL module serving the configured (or default) WAL URI, and that URI. */
    record WalBackend(WriteAheadLogProvider provider, URI uri) {
    }

    static WalBackend walBackend(StorageConfig config) {
        List<WriteAheadLogProvider> providers = Providers.load(WriteAheadLogProvider.class, "StorageConfig.wal");
        URI uri;
        if (config.wal().isPresent()) {
            uri = parse("wal", config.wal().get());
        } else {
            uri = providers.stream().flatMap(p -> p.defaultUri(config.dataDir()).stream()).findFirst()
                    .orElseThrow(() -> new InvalidConfigException("StorageConfig.wal is not set and no WAL module that "
                            + "offers a default is on the class path: add the io.s3stream:s3stream-wal-blockdev "
                            + "dependency (a WAL file under dataDir), or set wal to a URI such as "
                            + "blockdev:///var/lib/s3stream/wal.img?capacity=2GiB (mem:// for tests)"));
        }
        String scheme = uri.getScheme();
        for (WriteAheadLogProvider p : providers) {
            if (p.scheme().equalsIgnoreCase(scheme)) {
                return new WalBackend(p, uri);
            }
        }
        String module = WAL_MODULES.get(scheme.toLowerCase(Locale.ROOT));
        throw new InvalidConfigException("StorageConfig.wal '" + UriSettings.withoutQuery(uri)
                + "': no WAL module for scheme '" + scheme + "' is on the class path"
                + (module != null ? "; add the artifact " + module + " to the application" : "")
                + " (available: " + schemes(providers) + ")");
    }

    static WriteAheadLog openWal(StorageConfig config, WalContext context) {
        WalBackend backend = walBackend(config);
        LOG.log(System.Logger.Level.INFO, "opening WAL {0}", backend.uri());
        return backend.provider().open(backend.uri(), context);
    }

    static MetadataStore openMetadata(StorageConfig config, ObjectStore objectStore) {
        List<MetadataStoreProvider> providers = Providers.load(MetadataStoreProvider.class, "StorageConfig.metadata");
        URI uri;
        if (config.metadata().isPresent()) {
            uri = parse("metadata", config.metadata().get());
        } else if (providers.stream().anyMatch(p -> p.scheme().equals("manifest"))) {
            uri = parse("metadata", "manifest:default");
        } else {
            uri = parse("metadata", "mem://" + config.objectStore().replaceAll("[^A-Za-z0-9]+", "-"));
            LOG.log(System.Logger.Level.WARNING, "metadata is kept in memory ({0}): it does not survive this "
                    + "process; add the manifest (io.s3stream metadata in the object store) for durability", uri);
        }
        for (MetadataStoreProvider p : providers) {
            if (p.scheme().equalsIgnoreCase(uri.getScheme())) {
                return p.open(uri, objectStore);
            }
        }
        throw new InvalidConfigException("StorageConfig.metadata '" + UriSettings.withoutQuery(uri) + "': no metadata store for scheme '"
                + uri.getScheme() + "' (available: " + schemes(providers) + ")");
    }

    private static URI parse(String setting, String value) {
        try {
            return new URI(value);
        } catch (URISyntaxException e) {
            throw new InvalidConfigException("StorageConfig." + setting + " is not a valid URI: " + e.getMessage(), e);
        }
    }

    private static String schemes(List<?> providers) {
        List<String> names = new ArrayList<>();
        for (Object p : providers) {
            if (p instanceof WriteAheadLogProvider w) {
                names.add(w.scheme());
            } else if (p instanceof MetadataStoreProvider m) {
                names.add(m.scheme());
            }
        }
        return names.isEmpty() ? "none" : String.join(", ", names);
    }
}
