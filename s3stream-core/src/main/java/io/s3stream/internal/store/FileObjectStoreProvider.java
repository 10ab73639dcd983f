package io.s3stream.internal.store;

import io.s3stream.internal.store.common.StoreSupport;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import io.s3stream.spi.ObjectStoreProvider;
import io.s3stream.spi.UriSettings;

import java.net.URI;
import java.nio.file.Path;
import java.util.List;

/**
 * Opens a {@link FileObjectStore} for {@code file:///absolute/dir}. Query settings: {@code minPartSizeBytes} (default 5
 * MiB, as on S3), for tests that want small multipart uploads; {@code reserveBytes}, the room data objects leave free
 * for metadata commits (default 1/32 of the file system, at most 16 MiB; 0 for none; see {@link SpaceReserve});
 * {@code directWrites} ({@code true} by default), whether object bytes bypass the page cache where the file system
 * allows it ({@link ObjectFileIo}).
 */
public final class FileObjectStoreProvider implements ObjectStoreProvider {

    /** Creates the provider; {@link java.util.ServiceLoader} calls this. */
    public FileObjectStoreProvider() {
    }

    @Override
    public String scheme() {
        return "file";
    }

    @Override
    public ObjectStore open(URI uri) {
        if (uri.isOpaque() || uri.getPath() == null || !uri.getPath().startsWith("/")) {
            throw new ObjectStoreException(UriSettings.withoutQuery(uri) + ": a file object store needs an absolute path, as in"
                    + " file:///var/lib/s3stream/objects", false);
        }
        String authority = uri.getRawAuthority();
        if (authority != null && !authority.isEmpty() && !authority.equals("localhost")) {
            throw new ObjectStoreException(UriSettings.withoutQuery(uri) + ": a file object store URI has no host ('" + authority
                    + "'); write file:///absolute/dir", false);
        }
        int minPartSizeBytes = StoreSupport.minPartSizeBytes(uri, List.of("reserveBytes", "directWrites"));
        String reserve = UriSettings.query(uri).get("reserveBytes");
        long reserveBytes = -1;
        if (reserve != null) {
            try {
                reserveBytes = Long.parseLong(reserve);
            } catch (NumberFormatException e) {
                reserveBytes = -1;
            }
            if (reserveBytes < 0) {
                throw new ObjectStoreException(UriSettings.withoutQuery(uri) + ": reserveBytes must be a non-negative"
                        + " integer, was '" + reserve + "'", false);
            }
        }
        String direct = UriSettings.query(uri).getOrDefault("directWrites", "true");
        if (!direct.equals("true") && !direct.equals("false")) {
            throw new ObjectStoreException(UriSettings.withoutQuery(uri) + ": directWrites must be true or false, was '"
                    + direct + "'", false);
        }
        return FileObjectStore.open(Path.of(uri.getPath()), minPartSizeBytes, reserveBytes, direct.equals("true"));
    }
}
