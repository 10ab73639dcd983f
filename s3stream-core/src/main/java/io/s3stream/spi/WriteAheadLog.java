package io.s3stream.spi;

import io.netty.buffer.ByteBuf;

import java.util.concurrent.CompletableFuture;

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
 *       record's future never completes before the future of a record appended earlier). Positions are opaque
 *       and strictly increasing; {@code nextPosition} of one record is at most the position of the next.</li>
 *   <li>{@link #trim} allows the space of every record with a position below {@code walPosition} to be reused.
 *       Trimmed records are never delivered by a later recovery.</li>
 *   <li>When the log is full, an append waits for a trim for a bounded time and then fails with
 *       {@link io.s3stream.OverCapacityException}. After a device error the log is fenced: the failing append and
 *       every later one fail with {@link io.s3stream.StorageIOException} naming the device and error.
 *       After another owner takes over, appends fail with {@link io.s3stream.StreamFencedException}.</li>
 * </ul>
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
     * @throws io.s3stream.StreamFencedException when a newer owner (higher node epoch) already holds the log
     */
    RecoveryResult recover(RecordHandler handler);

    /**
     * Appends one record. Several appends may be in flight; the WAL groups them into as few device writes as it can.
     */
    CompletableFuture<WalAppendResult> append(ByteBuf record);

    /** Lets the space of every record with a position below {@code walPosition} be reused. */
    CompletableFuture<Void> trim(long walPosition);

    /** Total capacity; the largest single record is somewhat smaller (see {@link #maxRecordBytes()}). */
    long capacityBytes();

    /** The largest record {@link #append} accepts. */
    int maxRecordBytes();

    /** Human-readable description for logs and errors (the URI and the underlying device or file). */
    String description();

    /** Waits for in-flight appends, then releases the device. Idempotent. */
    @Override
    void close();

    /** Receives recovered records in position order; the handler owns (and must release) each buffer. */
    @FunctionalInterface
    interface RecordHandler {
        void onRecord(long walPosition, long nextPosition, ByteBuf record);
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
