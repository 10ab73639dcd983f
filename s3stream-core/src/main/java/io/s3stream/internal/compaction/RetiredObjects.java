package io.s3stream.internal.compaction;

import io.s3stream.internal.store.ObjectStorage;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;

/**
 * The deletion pass: objects the manifest marked for deletion (compacted away, trimmed, of destroyed streams) are
 * deleted from the bucket once this node has seen them marked for the whole grace period, so that a reader that
 * looked an object up just before it was retired can still read it; then the manifest forgets them
 * ({@link MetadataStore#objectsDeleted}). The first sighting is remembered in memory: after a restart the clock starts
 * again, which only delays a deletion. Owner: the compactor thread.
 */
final class RetiredObjects {
    private static final int DELETE_BATCH = 1000;

    private final ObjectStorage store;
    private final MetadataStore metadata;
    private final Duration gracePeriod;
    private final LongSupplier nanoClock;
    private final LongConsumer onDeleted;
    private final Map<Long, Long> markedSinceNanos = new HashMap<>();

    /** @param onDeleted told each object id deleted from the bucket and forgotten by the manifest */
    RetiredObjects(ObjectStorage store, MetadataStore metadata, Duration gracePeriod, LongSupplier nanoClock,
                   LongConsumer onDeleted) {
        this.store = store;
        this.metadata = metadata;
        this.gracePeriod = gracePeriod;
        this.nanoClock = nanoClock;
        this.onDeleted = onDeleted;
    }

    /** Deletes every marked object whose grace period has passed; returns how many. */
    int deleteDue() {
        List<ObjectMetadata> marked = metadata.listObjects(ObjectState.MARKED_FOR_DELETION).join();
        long now = nanoClock.getAsLong();
        long graceNanos = gracePeriod.toNanos();
        Set<Long> seen = new HashSet<>();
        List<ObjectMetadata> due = new ArrayList<>();
        for (ObjectMetadata m : marked) {
            seen.add(m.objectId());
            long since = markedSinceNanos.computeIfAbsent(m.objectId(), id -> now);
            if (now - since >= graceNanos) {
                due.add(m);
            }
        }
        markedSinceNanos.keySet().retainAll(seen);
        int deleted = 0;
        for (int from = 0; from < due.size(); from += DELETE_BATCH) {
            List<ObjectMetadata> batch = due.subList(from, Math.min(due.size(), from + DELETE_BATCH));
            store.delete(batch.stream().map(ObjectMetadata::key).toList()).join();
            List<Long> ids = batch.stream().map(ObjectMetadata::objectId).toList();
            metadata.objectsDeleted(ids).join();
            for (long id : ids) {
                markedSinceNanos.remove(id);
                onDeleted.accept(id);
            }
            deleted += ids.size();
        }
        return deleted;
    }
}
