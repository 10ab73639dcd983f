package io.s3stream.internal.compaction;

import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectStore;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Compares the bucket with the manifest: reports objects that are neither referenced nor scheduled for deletion
 * (leaks), references to objects that do not exist (losses), and objects marked for deletion that are still present
 * (normal during the grace period; a leak if they stay).
 *
 * <p>Design note: it reads the manifest, lists the bucket, then reads the manifest again, so that a live system does
 * not produce false reports: a key in the bucket was prepared before the listing, so the second read knows it; an
 * object committed in the first read and still committed in the second must have been in the listing. Keys under
 * {@code manifest/} belong to the manifest itself and are ignored.
 */
public final class LeakChecker {
    private LeakChecker() {
    }

    /**
     * What the check found.
     *
     * @param bucketKeys          data keys listed
     * @param leakedKeys          keys in the bucket whose object is unknown to both reads of the manifest, or
     *                            recorded as deleted in the first
     * @param missingObjects      committed objects whose key is not in the bucket
     * @param pendingDeletionKeys keys of objects marked for deletion (or prepared and expired) still in the bucket
     * @param inFlightKeys        keys of prepared objects not committed yet (uploads or compactions in progress)
     */
    public record Report(int bucketKeys, List<String> leakedKeys, List<String> missingObjects,
                         List<String> pendingDeletionKeys, List<String> inFlightKeys) {
        /** No leak and no loss (objects pending deletion or in flight are allowed). */
        public boolean clean() {
            return leakedKeys.isEmpty() && missingObjects.isEmpty();
        }

        /** Clean, and nothing waits for deletion or is in flight either: the bucket is exactly the live objects. */
        public boolean exact() {
            return clean() && pendingDeletionKeys.isEmpty() && inFlightKeys.isEmpty();
        }

        @Override
        public String toString() {
            return "LeakCheck{bucketKeys=" + bucketKeys + ", leaked=" + leakedKeys + ", missing=" + missingObjects
                    + ", pendingDeletion=" + pendingDeletionKeys.size() + ", inFlight=" + inFlightKeys.size() + '}';
        }
    }

    public static Report check(ObjectStore store, MetadataStore metadata) {
        Map<String, ObjectMetadata> before = byKey(metadata.listObjects().join());
        List<ObjectInfo> listed = store.list("").join();
        Map<String, ObjectMetadata> after = byKey(metadata.listObjects().join());
        Set<String> present = new HashSet<>();
        List<String> leaked = new ArrayList<>();
        List<String> pending = new ArrayList<>();
        List<String> inFlight = new ArrayList<>();
        int bucketKeys = 0;
        for (ObjectInfo info : listed) {
            String key = info.key();
            if (key.startsWith("manifest/")) {
                continue;
            }
            bucketKeys++;
            present.add(key);
            ObjectMetadata now = after.get(key);
            ObjectMetadata earlier = before.get(key);
            if (now == null && earlier != null && earlier.state() != ObjectState.DELETED) {
                pending.add(key); // deleted and forgotten between listing and the second read
                continue;
            }
            if (now == null || (earlier != null && earlier.state() == ObjectState.DELETED)) {
                leaked.add(key);
                continue;
            }
            switch (now.state()) {
                case COMMITTED -> { }
                case MARKED_FOR_DELETION -> pending.add(key);
                case PREPARED -> inFlight.add(key);
                case DELETED -> pending.add(key); // deleted between listing and the second read
            }
        }
        List<String> missing = new ArrayList<>();
        for (Map.Entry<String, ObjectMetadata> e : before.entrySet()) {
            ObjectMetadata now = after.get(e.getKey());
            if (e.getValue().state() == ObjectState.COMMITTED && now != null && now.state() == ObjectState.COMMITTED
                    && !present.contains(e.getKey())) {
                missing.add(e.getKey() + " (object " + e.getValue().objectId() + ", " + e.getValue().ranges() + ")");
            }
        }
        return new Report(bucketKeys, List.copyOf(leaked), List.copyOf(missing), List.copyOf(pending),
                List.copyOf(inFlight));
    }

    private static Map<String, ObjectMetadata> byKey(List<ObjectMetadata> objects) {
        Map<String, ObjectMetadata> out = new HashMap<>();
        for (ObjectMetadata o : objects) {
            out.put(o.key(), o);
        }
        return out;
    }
}
