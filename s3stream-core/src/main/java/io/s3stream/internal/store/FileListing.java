package io.s3stream.internal.store;

import io.s3stream.internal.store.common.StoreSupport;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectStoreException;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;

/**
 * Listing by key prefix for {@link FileObjectStore}: where under the root the keys of a prefix live, and the walk of
 * that directory tree into object infos. Stateless apart from the store's root; safe to use from any thread.
 */
final class FileListing {
    private final Path root;
    private final String description;

    FileListing(Path root, String description) {
        this.root = root;
        this.description = description;
    }

    /** The deepest directory every key with {@code prefix} lives under. */
    Path start(String prefix) {
        if (prefix == null) {
            throw new ObjectStoreException(description + ": list prefix must not be null", false);
        }
        int slash = prefix.lastIndexOf('/');
        if (slash < 0) {
            return root;
        }
        String directory = prefix.substring(0, slash);
        String problem = FileKeys.keyProblem(directory);
        if (problem != null) {
            throw new ObjectStoreException(description + ": unsafe list prefix '" + FileKeys.printable(prefix) + "': " + problem,
                    false);
        }
        return root.resolve(FileKeys.encodePath(directory));
    }

    /** The key of the object file {@code file}, or the key prefix of a directory (without its slash). */
    String keyOf(Path file) {
        StringBuilder key = new StringBuilder();
        for (Path name : root.relativize(file)) {
            if (!key.isEmpty()) {
                key.append('/');
            }
            key.append(FileKeys.decodeName(name.toString()));
        }
        return key.toString();
    }

    /**
     * The objects under {@code start} whose keys begin with {@code prefix}, in key order; skips the store's own files
     * and directories (reserved prefix) and subtrees no such key can be in, and ignores entries deleted meanwhile.
     */
    List<ObjectInfo> walk(String prefix, Path start) throws IOException {
        List<ObjectInfo> found = new ArrayList<>();
        if (!Files.isDirectory(start, LinkOption.NOFOLLOW_LINKS)) {
            return found;
        }
        Files.walkFileTree(start, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attributes) {
                if (dir.equals(start)) {
                    return FileVisitResult.CONTINUE;
                }
                if (dir.getFileName().toString().startsWith(FileObjectStore.RESERVED_PREFIX)) {
                    return FileVisitResult.SKIP_SUBTREE;
                }
                String dirPrefix = keyOf(dir) + "/";
                boolean relevant = dirPrefix.startsWith(prefix) || prefix.startsWith(dirPrefix);
                return relevant ? FileVisitResult.CONTINUE : FileVisitResult.SKIP_SUBTREE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attributes) {
                if (attributes.isRegularFile() && !file.getFileName().toString().startsWith(FileObjectStore.RESERVED_PREFIX)) {
                    String key = keyOf(file);
                    if (key.startsWith(prefix)) {
                        found.add(new ObjectInfo(key, attributes.size(), attributes.lastModifiedTime().toMillis()));
                    }
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                if (e instanceof NoSuchFileException) {
                    return FileVisitResult.CONTINUE; // deleted while we walked
                }
                throw e;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                if (e != null && !(e instanceof NoSuchFileException)) {
                    throw e;
                }
                return FileVisitResult.CONTINUE;
            }
        });
        found.sort((a, b) -> StoreSupport.compareKeys(a.key(), b.key()));
        return found;
    }
}
