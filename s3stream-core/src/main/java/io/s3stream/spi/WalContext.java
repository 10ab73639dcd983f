package io.s3stream.spi;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;

/**
 * What a WAL backend is told when it is opened.
 *
 * <p>A WAL is opened either by its <em>owner</em> (the node whose appends it holds) or, for WALs on shared storage
 * ({@link WriteAheadLogProvider#supportsTakeover()}), by another node that <em>takes it over</em> after the owner
 * died: then {@link #nodeId} is the dead node's id, {@link #nodeEpoch} a fresh node epoch the manifest issued to fence
 * it, and {@link #takeover} is true. A WAL opened for takeover fences the old owner in {@link WriteAheadLog#recover},
 * delivers every record after the trim point, accepts trims, refuses appends, and never creates a log that does not
 * exist (it recovers nothing instead).
 *
 * @param nodeId              owner node id, recorded in the log so that another node's log is refused
 * @param nodeEpoch           owner generation; a higher epoch fences a lower one
 * @param dataDir             the node's data directory (for backends that default to a file under it)
 * @param backpressureTimeout how long a full log lets an append wait for a trim
 * @param objectStore         the engine's object store (retries, priorities and cost counters included), for WALs kept
 *                            in object storage; null when the WAL is opened outside an engine (tools, unit tests)
 * @param objectStores        opens another object store by URI with the same wrapping (a WAL may keep its objects in
 *                            a different bucket than the data); the WAL closes what it opens. Null outside an engine.
 * @param committedPosition   every record with a WAL position below this is in objects committed to the manifest
 *                            ({@link NodeMetadata#walCommittedPosition()}); a WAL that cannot record its own trim point
 *                            durably starts recovery there. {@link #NO_POSITION} when the manifest records none.
 * @param takeover            whether this node opens another node's log to recover it
 * @param trimsRecorded       whether every trim point is recorded durably before {@code trim} is called, and handed
 *                            back as {@code committedPosition} at the next open (the engine records it in the manifest
 *                            with the upload that made the trim possible): a WAL that cannot record a trim point
 *                            cheaply (objectwal) may then rely on it instead of persisting trims itself
 * @param knownKeys           which of the WAL's own object keys the manifest references; null outside an engine. A
 *                            WAL whose objects the manifest adopts (objectwal) deletes, when it is opened, the objects
 *                            below {@link #committedPosition} that the manifest does not know: none of them holds a
 *                            record that is not in a committed object, and nothing adopts them later
 */
public record WalContext(long nodeId, long nodeEpoch, Path dataDir, Duration backpressureTimeout,
                         ObjectStore objectStore, Function<URI, ObjectStore> objectStores, long committedPosition,
                         boolean takeover, boolean trimsRecorded, KnownKeys knownKeys) {

    /** {@link #committedPosition} when the manifest has no record for the node's WAL. */
    public static final long NO_POSITION = -1;

    public WalContext {
        Objects.requireNonNull(dataDir, "dataDir");
        Objects.requireNonNull(backpressureTimeout, "backpressureTimeout");
    }

    /** An owner's context outside an engine: no object store, no committed position. */
    public WalContext(long nodeId, long nodeEpoch, Path dataDir, Duration backpressureTimeout) {
        this(nodeId, nodeEpoch, dataDir, backpressureTimeout, null, null, NO_POSITION, false, false, null);
    }

    /** Asks the manifest which object keys it references. */
    @FunctionalInterface
    public interface KnownKeys {
        /**
         * Of {@code keys}, the ones the manifest references now: adopted objects, live or marked for deletion and not
         * yet deleted. Reads the manifest's latest state (every change committed before the call, by any node).
         * Blocks; fails with the store's exception when the manifest cannot be read.
         */
        Set<String> known(Collection<String> keys);
    }

    /** This context with the engine's object store and an opener for other stores. */
    public WalContext withObjectStores(ObjectStore objectStore, Function<URI, ObjectStore> objectStores) {
        return new WalContext(nodeId, nodeEpoch, dataDir, backpressureTimeout, objectStore, objectStores,
                committedPosition, takeover, trimsRecorded, knownKeys);
    }

    /** This context with a way to ask the manifest which of the WAL's object keys it references. */
    public WalContext withKnownKeys(KnownKeys knownKeys) {
        return new WalContext(nodeId, nodeEpoch, dataDir, backpressureTimeout, objectStore, objectStores,
                committedPosition, takeover, trimsRecorded, knownKeys);
    }

    /**
     * This context with the manifest's committed position of the node's WAL, which the engine keeps up to date with
     * every trim ({@link #trimsRecorded}).
     */
    public WalContext withCommittedPosition(long position) {
        return new WalContext(nodeId, nodeEpoch, dataDir, backpressureTimeout, objectStore, objectStores, position,
                takeover, true, knownKeys);
    }

    /** This context for a takeover: the same node id and epoch, opened by another node to recover the log. */
    public WalContext forTakeover() {
        return new WalContext(nodeId, nodeEpoch, dataDir, backpressureTimeout, objectStore, objectStores,
                committedPosition, true, trimsRecorded, knownKeys);
    }

    /** The engine's object store, or a clear error when the WAL was opened without one. */
    public ObjectStore requireObjectStore(String backend) {
        if (objectStore == null) {
            throw new IllegalStateException(backend + " keeps its log in object storage and needs the engine's object "
                    + "store: open it through StreamStorage (StorageConfig.wal), not on its own");
        }
        return objectStore;
    }
}
