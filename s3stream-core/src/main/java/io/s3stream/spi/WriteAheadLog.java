package io.s3stream.spi;

import io.netty.buffer.ByteBuf;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * A small, fixed-size write-ahead log: the only place acknowledged data lives before it is uploaded into objects.
 *
 * <h2>Contract (checked for every backend by {@code WriteAheadLogContractTest})</h2>
 * <ul>
 *   <li>{@link #recover} is called exactly once, before any {@link #append}. It takes ownership of the log for
 *       the {@link WalContext}'s node id and node epoch (fencing any older owner), then delivers every record
 *       appended after the last trim, in position order, stopping cleanly at the first torn or corrupt record: no
 *       garbage is ever delivered as data. Later appends continue after the last valid record, and a stale record
 *       beyond it can never be mistaken for a new one.</li>
 *   <li>{@link #append} completes once the record is durable; completions are delivered in position order (a
 *       record's future, or {@link AppendCallback}, never completes before that of a record appended earlier).
 *       Positions are opaque and strictly increasing; {@code nextPosition} of one record is at most the position of
 *       the next.</li>
 *   <li>{@link #trim} allows the space of every record with a position below {@code walPosition} to be reused.
 *       Trimmed records are never delivered by a later recovery.</li>
 *   <li>When the log is full, an append waits for a trim for a bounded time and then fails with
 *       {@link io.s3stream.OverCapacityException}. After a device error the log is fenced: the failing append and
 *       every later one fail with {@link io.s3stream.StorageIOException} naming the device and error.</li>
 *   <li>After another owner took the log over (a higher node epoch: the node restarted, or a surviving node recovered
 *       it, see {@link WalContext#takeover()}), every append not yet acknowledged and every later one fails with
 *       {@link io.s3stream.NodeFencedException} naming the newer epoch, and no append is acknowledged whose record
 *       the new owner's recovery may not have delivered. The engine then fails as a whole: the node is fenced, not a
 *       stream.</li>
 *   <li>After {@link #close}, appends fail with {@link io.s3stream.StreamClosedException}.</li>
 * </ul>
 *
 * <h2>Segments</h2>
 * A WAL that stores its records as objects in object format v1 (wal-object) reports them through {@link #segments},
 * so the engine can commit those objects to the manifest directly instead of uploading the records again. Positions
 * at which one segment ends and the next begins are reported by {@link #isSegmentBoundary}; the engine uploads the log
 * cache in blocks that start and end on boundaries. A WAL on a device has no segments: every position is a boundary
 * and the engine uploads records itself.
 *
 * <h2>Buffers</h2>
 * {@link #append} reads the readable bytes of {@code record} before its future completes; it does not take
 * ownership (the caller releases the buffer after completion). Recovered records' buffers belong to the handler.
 */
public interface WriteAheadLog extends AutoCloseable {

    /**
     * Takes ownership of the log and delivers every record after the last trim point, in order.
     *
     * @return what recovery found
     * @throws io.s3stream.StorageIOException on a device error
     * @throws io.s3stream.NodeFencedException when a newer owner (higher node epoch) already holds the log
     */
    RecoveryResult recover(RecordHandler handler);

    /**
     * Appends one record. Several appends may be in flight; the WAL groups them into as few device writes as it can.
     */
    CompletableFuture<WalAppendResult> append(ByteBuf record);

    /**
     * {@link #append(ByteBuf)} reporting to a callback instead of a future, which allocates nothing
     * per append for it. The callback is called exactly once, in position order like the futures; usually on the WAL's
     * own thread, but on the calling thread, before this method returns, when the record is refused at once or when
     * the WAL writes it on that thread (wal-blockdev does, for a lone append on a quiet WAL). This
     * default adapts the future; backends override it (and implement {@link #append(ByteBuf)} with
     * {@link AppendCallback#completing}) to save the future, its result and the adapter on every append.
     */
    default void append(ByteBuf record, AppendCallback callback) {
        append(record).whenComplete((result, error) -> {
            if (error == null) {
                callback.onDurable(result.walPosition(), result.nextPosition());
            } else {
                callback.onFailure(error instanceof CompletionException && error.getCause() != null
                        ? error.getCause() : error);
            }
        });
    }

    /**
     * {@link #append(ByteBuf, AppendCallback)} of the {@code length} bytes of {@code buffer} from {@code index}; the
     * buffer's indexes are not used. The engine's path: its records are carved from shared chunks, so a backend that
     * reads the record by index saves the slice this default makes on every append. Like the other forms it does not
     * take ownership: a backend that keeps the bytes past the callback retains {@code buffer}.
     */
    default void append(ByteBuf buffer, int index, int length, AppendCallback callback) {
        append(buffer.slice(index, length), callback);
    }

    /**
     * Appends one record and waits until it is durable, for a caller that waits for each append anyway (a log of
     * metadata, a consensus log, a writer at queue depth 1). Failures are thrown as the exception the future of
     * {@link #append(ByteBuf)} would carry ({@link io.s3stream.StorageIOException},
     * {@link io.s3stream.OverCapacityException} after the back-pressure timeout, ...), not wrapped. The ordering
     * contract is that of {@link #append(ByteBuf)}: when it returns, every record appended before it is durable.
     * This default waits for {@link #append(ByteBuf)}; a backend may write the record on the calling thread when
     * nothing else waits, sparing the hand-off to its own thread and back (wal-blockdev does). Must not be called from
     * an append callback.
     */
    default WalAppendResult appendAndAwait(ByteBuf record) {
        return await(append(record));
    }

    /**
     * Waits for an append's future and returns its result, throwing its failure unwrapped as {@link #appendAndAwait}
     * does (an {@link Error} or a checked cause stays wrapped in the {@link CompletionException}).
     */
    static WalAppendResult await(CompletableFuture<WalAppendResult> append) {
        try {
            return append.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException cause) {
                throw cause;
            }
            throw e;
        }
    }

    /** Lets the space of every record with a position below {@code walPosition} be reused. */
    CompletableFuture<Void> trim(long walPosition);

    /** Total capacity; the largest single record is somewhat smaller (see {@link #maxRecordBytes()}). */
    long capacityBytes();

    /** The largest record {@link #append} accepts. */
    int maxRecordBytes();

    /**
     * Whether a block of records may end at {@code walPosition} (a record's {@code nextPosition}) so that the records
     * before it are exactly whole {@link #segments}. Always true for a WAL without segments.
     */
    default boolean isSegmentBoundary(long walPosition) {
        return true;
    }

    /**
     * The segments holding every record with a position in {@code [fromPosition, toPosition)}, in position order, when
     * both positions are {@linkplain #isSegmentBoundary boundaries} and the records are durable; segments that hold no
     * record (seals, objects a fenced owner wrote) in that range are included, so that the engine can commit them and
     * let the manifest delete them. Empty for a WAL without segments. Once the engine has committed a segment's object
     * the object belongs to the manifest: the WAL never deletes it.
     */
    default List<WalSegment> segments(long fromPosition, long toPosition) {
        return List.of();
    }

    /** Human-readable description for logs and errors (the URI and the underlying device or file). */
    String description();

    /** Waits for in-flight appends, then releases the device. Idempotent. */
    @Override
    void close();

    /**
     * The outcome of one {@link #append(ByteBuf, AppendCallback)}. Callbacks run one at a time, in position order, on
     * the thread that acknowledges the record (the WAL's, or the appender's): they must be quick and must not block.
     */
    interface AppendCallback {
        /** The record is durable at {@code walPosition}; {@code trim(nextPosition)} would release it. */
        void onDurable(long walPosition, long nextPosition);

        /** The record was not written, or its durability is unknown: the same errors the future would carry. */
        void onFailure(Throwable error);

        /** A callback that completes {@code future}: how a backend implements {@link #append(ByteBuf)}. */
        static AppendCallback completing(CompletableFuture<WalAppendResult> future) {
            return new AppendCallback() {
                @Override
                public void onDurable(long walPosition, long nextPosition) {
                    future.complete(new WalAppendResult(walPosition, nextPosition));
                }

                @Override
                public void onFailure(Throwable error) {
                    future.completeExceptionally(error);
                }
            };
        }
    }

    /** Receives recovered records in position order; the handler owns (and must release) each buffer. */
    @FunctionalInterface
    interface RecordHandler {
        void onRecord(long walPosition, long nextPosition, ByteBuf record);

        /**
         * Called once before the first record with the position where the scan starts (a segment boundary), by WALs
         * with {@linkplain #segments segments}, so that segments before the first record can be committed too.
         */
        default void onStart(long walPosition) {
        }
    }

    /**
     * The outcome of {@link #recover}.
     *
     * @param records        records delivered
     * @param bytes          payload bytes delivered
     * @param nextPosition   position the next append will get
     * @param stoppedEarly   whether scanning stopped at a torn or corrupt record rather than at clean free space
     * @param detail         what stopped the scan, for logs
     */
    record RecoveryResult(long records, long bytes, long nextPosition, boolean stoppedEarly, String detail) {
    }
}
