package io.s3stream.internal.metadata;

import io.s3stream.spi.CommitRequest;

import java.util.List;
import java.util.Map;

/**
 * One mutating {@link io.s3stream.spi.MetadataStore} call as a value: what a durable manifest writes into its log
 * and {@link ManifestState#apply replays} deterministically. Each record mirrors the SPI method of the same name.
 *
 * <p>Design note: time is not part of an operation; the log entry that carries it supplies the instant at which it
 * applies (commit times, prepared-object deadlines and expiry all derive from it), so every replica that replays the
 * log reaches the same state whatever its own clock says.
 */
public sealed interface ManifestOp {

    /** {@link io.s3stream.spi.MetadataStore#registerNode}. */
    record RegisterNode(long nodeId) implements ManifestOp {
    }

    /** {@link io.s3stream.spi.MetadataStore#registerNode(long, long)}: only while the node is at {@code expectedEpoch}. */
    record RegisterNodeIf(long nodeId, long expectedEpoch) implements ManifestOp {
    }

    /** {@link io.s3stream.spi.MetadataStore#createStream}. */
    record CreateStream(long nodeId, long nodeEpoch, long startOffset, Map<String, String> tags) implements ManifestOp {
        public CreateStream {
            tags = Map.copyOf(tags);
        }
    }

    /** {@link io.s3stream.spi.MetadataStore#openStream}. */
    record OpenStream(long streamId, long epoch, long nodeId, long nodeEpoch) implements ManifestOp {
    }

    /** {@link io.s3stream.spi.MetadataStore#closeStream}. */
    record CloseStream(long streamId, long epoch, long nodeId, long nodeEpoch) implements ManifestOp {
    }

    /** {@link io.s3stream.spi.MetadataStore#trimStream}. */
    record TrimStream(long streamId, long epoch, long newStartOffset) implements ManifestOp {
    }

    /** {@link io.s3stream.spi.MetadataStore#deleteStream}. */
    record DeleteStream(long streamId, long epoch) implements ManifestOp {
    }

    /** {@link io.s3stream.spi.MetadataStore#prepareObjects}; the time-to-live in nanoseconds (saturated). */
    record PrepareObjects(int count, long timeToLiveNanos) implements ManifestOp {
    }

    /** {@link io.s3stream.spi.MetadataStore#commitObjects}. */
    record CommitObjects(CommitRequest request) implements ManifestOp {
    }

    /** {@link io.s3stream.spi.MetadataStore#objectsDeleted}. */
    record ObjectsDeleted(List<Long> objectIds) implements ManifestOp {
        public ObjectsDeleted {
            objectIds = List.copyOf(objectIds);
        }
    }

    /** {@link io.s3stream.spi.MetadataStore#putKv}. */
    record PutKv(String key, byte[] value) implements ManifestOp {
    }

    /** {@link io.s3stream.spi.MetadataStore#deleteKv}. */
    record DeleteKv(String key) implements ManifestOp {
    }

    /** {@link io.s3stream.spi.MetadataStore#compareAndSetKv}; {@code expected} or {@code value} may be null. */
    record CompareAndSetKv(String key, byte[] expected, byte[] value) implements ManifestOp {
    }

    /**
     * A key-value change made by a node ({@link io.s3stream.spi.MetadataStore#putKv(long, long, String, byte[])} and
     * its siblings): applied only while {@code nodeEpoch} is the node's current epoch, so a node that was fenced (a
     * restart elsewhere, or a takeover of its WAL) and still runs, paused or partitioned, cannot overwrite what its
     * successor wrote.
     */
    record ByNode(long nodeId, long nodeEpoch, ManifestOp op) implements ManifestOp {
        public ByNode {
            if (!(op instanceof PutKv || op instanceof DeleteKv || op instanceof CompareAndSetKv)) {
                throw new IllegalArgumentException("only key-value changes are made by a node, not " + op);
            }
        }

        /**
         * The ops of {@link io.s3stream.spi.MetadataStore#updateKv}: one {@code ByNode} put or delete per key, in key
         * order, which one manifest entry carries. Each is valid exactly when the node is not fenced, whatever the
         * others do, so checking each against the same state checks the whole batch.
         */
        public static java.util.List<ManifestOp> batch(long nodeId, long nodeEpoch, java.util.Map<String, byte[]> puts,
                                                java.util.Collection<String> deletes) {
            java.util.Objects.requireNonNull(puts, "puts");
            java.util.Objects.requireNonNull(deletes, "deletes");
            java.util.SortedMap<String, ManifestOp> byKey = new java.util.TreeMap<>();
            puts.forEach((key, value) -> byKey.put(java.util.Objects.requireNonNull(key, "key"),
                    new PutKv(key, java.util.Objects.requireNonNull(value, "value of " + key).clone())));
            for (String key : deletes) {
                if (byKey.put(java.util.Objects.requireNonNull(key, "key"), new DeleteKv(key)) instanceof PutKv) {
                    throw new IllegalArgumentException("key '" + key + "' is both put and deleted");
                }
            }
            java.util.List<ManifestOp> out = new java.util.ArrayList<>(byKey.size());
            byKey.values().forEach(op -> out.add(new ByNode(nodeId, nodeEpoch, op)));
            return out;
        }
    }
}
