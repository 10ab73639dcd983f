package io.s3stream.kafka.shell.log;

import io.s3stream.FetchResult;
import io.s3stream.kafka.shell.network.HeldRecords;
import org.apache.kafka.common.network.TransferableChannel;
import org.apache.kafka.common.record.internal.BaseRecords;
import org.apache.kafka.common.record.internal.RecordsSend;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Whole Kafka batches read from a partition for one fetch, left in the library's buffers: a Fetch response sends them
 * as they are ({@link #toSend()} hands each batch's buffer to the connection, which wraps it without copying) and
 * {@link #release()}s them once the connection has written them, or given up. Until then the library's blocks stay
 * allocated (a cache may have evicted them meanwhile: the memory goes when the last reader lets go).
 *
 * <p>The memory so held is bounded ({@link #maxHeldBytes(long)}, {@code s3stream.kafka.fetch.held.max.bytes}): past
 * it, a read is copied to the heap and the library's buffers go back at once, so consumers that stop reading cannot
 * pin the library's memory beyond that.
 *
 * <p>Whoever holds a {@code ReadRecords} must release it exactly once in every path: sent, dropped for the response's
 * byte budget, or discarded by a long poll that waits for more. Releasing twice is harmless.
 */
public final class ReadRecords implements BaseRecords, HeldRecords {
    /** No batches. */
    public static final ReadRecords EMPTY = new ReadRecords(List.of(), List.of(), 0);
    /** Bytes of batches read and not yet released, in this JVM. */
    private static final AtomicLong HELD_BYTES = new AtomicLong();
    /** Reads holding library memory and not yet released, in this JVM. */
    private static final AtomicLong HELD_READS = new AtomicLong();
    /** Reads copied to the heap because {@link #maxHeldBytes} were held already. */
    private static final AtomicLong COPIED_READS = new AtomicLong();
    private static volatile long maxHeldBytes = 64L << 20;

    private final List<FetchResult> results;
    private final List<ByteBuffer> batches;
    private final int sizeBytes;
    private final AtomicBoolean released = new AtomicBoolean();

    ReadRecords(List<FetchResult> results, List<ByteBuffer> batches, int sizeBytes) {
        this.results = results;
        this.batches = batches;
        this.sizeBytes = sizeBytes;
        if (!results.isEmpty()) {
            HELD_READS.incrementAndGet();
            HELD_BYTES.addAndGet(sizeBytes);
        }
    }

    /**
     * Whole batches of {@code results}, kept in the library's buffers, or copied to the heap (the results closed at
     * once) when that would hold more than {@link #maxHeldBytes(long)} in this JVM.
     */
    static ReadRecords of(List<FetchResult> results, List<ByteBuffer> batches, int sizeBytes) {
        if (HELD_BYTES.get() + sizeBytes <= maxHeldBytes) {
            return new ReadRecords(results, batches, sizeBytes);
        }
        ByteBuffer copy = ByteBuffer.allocate(sizeBytes);
        for (ByteBuffer b : batches) {
            copy.put(b.duplicate());
        }
        results.forEach(FetchResult::close);
        COPIED_READS.incrementAndGet();
        return new ReadRecords(List.of(), List.of(copy.flip()), sizeBytes);
    }

    /**
     * Sets how many bytes of fetched batches may wait in the library's buffers for their connections, in this JVM
     * ({@code s3stream.kafka.fetch.held.max.bytes}; 0 copies every read).
     */
    public static void maxHeldBytes(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("s3stream.kafka.fetch.held.max.bytes must be >= 0, was " + bytes);
        }
        maxHeldBytes = bytes;
    }

    /** Reads copied to the heap since start because the held bytes had reached their maximum. */
    public static long copiedReads() {
        return COPIED_READS.get();
    }

    /** Bytes of fetched batches that wait to be written (or released) now: library memory they keep. */
    public static long heldBytes() {
        return HELD_BYTES.get();
    }

    /** Reads that hold library memory now; zero when every connection has written or dropped its answers. */
    public static long heldReads() {
        return HELD_READS.get();
    }

    @Override
    public int sizeInBytes() {
        return sizeBytes;
    }

    /** The batches' buffers in offset order, valid until {@link #release()}; read them through duplicates. */
    public List<ByteBuffer> batches() {
        return batches;
    }

    /** Gives the library's buffers back; the batches must not be touched afterwards. */
    @Override
    public void release() {
        if (released.compareAndSet(false, true) && !results.isEmpty()) {
            results.forEach(FetchResult::close);
            HELD_READS.decrementAndGet();
            HELD_BYTES.addAndGet(-sizeBytes);
        }
    }

    @Override
    public RecordsSend<ReadRecords> toSend() {
        return new RecordsSend<>(this, sizeBytes) {
            @Override
            protected int writeTo(TransferableChannel channel, int previouslyWritten, int remaining)
                    throws IOException {
                int skip = previouslyWritten;
                long written = 0;
                for (ByteBuffer batch : batches) {
                    if (skip >= batch.remaining()) {
                        skip -= batch.remaining();
                        continue;
                    }
                    ByteBuffer from = batch.duplicate();
                    from.position(from.position() + skip);
                    skip = 0;
                    int n = from.remaining();
                    int w = channel.write(from);
                    written += w;
                    if (w < n) {
                        break; // the channel takes no more now; the rest goes on the next call
                    }
                }
                return (int) written;
            }
        };
    }
}
