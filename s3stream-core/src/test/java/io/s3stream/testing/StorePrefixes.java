package io.s3stream.testing;

import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectStore;

import java.util.List;
import java.util.UUID;

/** A fresh key prefix per test on a shared test server (S3, Azure), and emptying it afterwards. */
public final class StorePrefixes {
    private StorePrefixes() {
    }

    public static String freshPrefix(String test) {
        return test + "-" + UUID.randomUUID();
    }

    /** Deletes everything under the store's prefix (tests may leave objects behind when they fail). */
    public static void empty(ObjectStore store) {
        List<String> keys = store.list("").join().stream().map(ObjectInfo::key).toList();
        if (!keys.isEmpty()) {
            store.delete(keys).join();
        }
    }
}
