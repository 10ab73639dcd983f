package io.s3stream.internal.store;

import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectStore;

import java.util.List;
import java.util.UUID;

/** Opens an S3 store on a fresh prefix of a test server and empties that prefix afterwards. */
final class S3ContractSupport {
    private S3ContractSupport() {
    }

    static String freshPrefix(String test) {
        return test + "-" + UUID.randomUUID();
    }

    /** Deletes everything under the store's prefix (tests may leave objects behind when they fail). */
    static void empty(ObjectStore store) {
        List<String> keys = store.list("").join().stream().map(ObjectInfo::key).toList();
        store.delete(keys).join();
    }
}
