package io.s3stream;

import java.util.concurrent.CompletableFuture;

/**
 * A handle on one append-only stream, opened for writing at one epoch by one {@link StreamStorage}.
 *
 * <p>Offsets count records. The readable range is {@code [startOffset(), confirmedOffset())}; appends are assigned
 * offsets from {@code nextOffset()} on. Methods are thread-safe; appends from several threads are ordered by the
 * order in which {@link #append} was called.
 */
public interface Stream {

    long streamId();

    /** The epoch this handle writes at; a handle opened with a higher epoch fences this one. */
    long epoch();

    /** First offset still readable; everything below was trimmed. */
    long startOffset();

    /** Every offset below this is durable and readable. */
    long confirmedOffset();

    /** The offset the next append will get. */
    long nextOffset();

    /**
     * Appends a batch. The returned future completes once the batch is durable in the write-ahead log; futures of
     * one stream complete in offset order. The payload is copied before this method returns.
     *
     * <p>Fails with {@link OverCapacityException} when the log cache or WAL stays full past the configured wait,
     * {@link StreamFencedException} when a newer epoch owns the stream or an earlier append failed (the stream then
     * refuses further appends so that it never has a hole), {@link StreamClosedException} after {@link #close()}.
     */
    CompletableFuture<AppendResult> append(RecordBatch batch);

    /**
     * Appends as {@link #append} does, for a caller that must not block (a network event loop): returns {@code null},
     * having appended nothing and assigned no offset, when the batch would have to wait for log-cache space or for
     * another append being sequenced; the caller then hands the batch to a thread that may wait and calls
     * {@link #append}. It may still take as long as one device write: the write-ahead log may write the batch on the
     * calling thread when the log is idle, as in {@link #append}; while other appends are in flight it queues the
     * batch for its own threads. Failures are reported in the future, as by {@link #append}.
     *
     * <p>The default returns {@code null} always: an implementation that cannot tell ahead whether it would wait.
     */
    default CompletableFuture<AppendResult> tryAppend(RecordBatch batch) {
        return null;
    }

    /**
     * Reads whole batches covering {@code startOffset}, in order, up to {@code endOffset} (exclusive) and about
     * {@code maxBytes}: at least one batch is returned even when it is larger than {@code maxBytes}. Data comes
     * from the log cache when recent, otherwise from objects. The caller must close the result.
     *
     * <p>Fails with {@link OffsetOutOfRangeException} when {@code startOffset} is outside
     * {@code [startOffset(), confirmedOffset()]}; asking for exactly {@code confirmedOffset()} yields an empty result.
     */
    CompletableFuture<FetchResult> fetch(long startOffset, long endOffset, int maxBytes);

    /**
     * Makes everything below {@code newStartOffset} unreadable; the space is reclaimed later, and records below it that
     * are not uploaded yet are never uploaded. Fails with {@link OffsetOutOfRangeException} outside
     * {@code [startOffset(), confirmedOffset()]}: only acknowledged records can be trimmed.
     */
    CompletableFuture<Void> trim(long newStartOffset);

    /**
     * Waits for pending appends, uploads the stream's data still held by this node, and records the stream as closed
     * so another node can open it at once. Idempotent.
     */
    CompletableFuture<Void> close();

    /**
     * Keeps only the latest record per key in this stream's older data, as long as this handle is open on this node
     * ({@code null} stops it). The embedding system, which knows what a key is, supplies {@code compaction}; the
     * library's compactor runs it in the background with the rest of compaction (see {@link KeyCompaction}). Offsets
     * do not change, but reads of compacted ranges skip the removed records.
     */
    void compactKeys(KeyCompaction compaction);

    /**
     * Closes the stream and deletes it with all its data. Its records not yet uploaded are not uploaded: once its
     * appends are processed the deletion is committed and those records are dropped, so destroying works (and frees
     * space) while uploads fail, as on a full disk or bucket. Its objects are deleted by the compactor after
     * {@link StorageConfig#objectDeletionGracePeriod()}. Calling it again waits for the same deletion; on a handle that
     * was closed (or fenced by a newer handle) first it fails with {@link StreamClosedException}, since the stream was
     * not deleted.
     */
    CompletableFuture<Void> destroy();
}
