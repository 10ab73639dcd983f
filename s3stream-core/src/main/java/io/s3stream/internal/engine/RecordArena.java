package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.s3stream.spi.WalRecordFormat;

import java.nio.ByteBuffer;

/**
 * Where the sequencer encodes WAL records: one after another into large pooled chunks, each record a region of its
 * chunk, known by the chunk and an index (no object of its own).
 *
 * <p>Why: a record used to be a pooled buffer of its own. Netty reuses the wrapper object of a pooled buffer only when
 * the thread that allocated it frees it while its small per-thread cache has room; a record lives from its append
 * until its block is uploaded (hundreds of thousands of them at a time) and is freed on the uploader's thread, so each
 * cost a new wrapper, its reference count and an NIO view: about 150 of the ~490 bytes the engine allocated per append
 * ({@code AppendPipelineBenchmark}, JFR allocation samples). A carved record then cost one slice object (40 B); now
 * the engine's entry keeps the chunk and the index, the WAL is handed the same
 * ({@link io.s3stream.spi.WriteAheadLog#append(ByteBuf, int, int, io.s3stream.spi.WriteAheadLog.AppendCallback)}), and
 * only a reader's slice of a payload is an object.
 *
 * <p>Lifetime: each record holds one reference to its chunk; the arena holds one on the chunk it carves from until the
 * chunk is full or the arena closes. A chunk returns to the pool with its last record. Records are freed in about the
 * order they were carved (the log cache evicts blocks in WAL order), so a chunk outlives its records by little; a
 * reader holding a slice of one record keeps the whole chunk. Records larger than {@link #MAX_CARVED_BYTES} get a
 * buffer of their own.
 *
 * <p>Each record also comes with a view of its chunk's memory ({@link #view()}, {@link #index()}) that the uploader
 * copies from with absolute bulk reads: no thread moves its position or limit, so one view serves every thread, and
 * copying a record into an object allocates nothing.
 *
 * <p>Not thread-safe: the sequencer calls it under its lock.
 */
final class RecordArena implements AutoCloseable {
    static final int CHUNK_BYTES = 1 << 20;
    static final int MAX_CARVED_BYTES = CHUNK_BYTES / 4;

    private final ByteBufAllocator alloc;
    /** The chunk being carved (the arena's reference), or null. */
    private ByteBuf chunk;
    /** The chunk's memory from index 0, for absolute access only: shared with the uploader. */
    private ByteBuffer shared;
    /** The same memory, whose position and limit the checksum moves: the arena's alone. */
    private ByteBuffer scratch;
    private int used;
    private ByteBuffer lastView;
    private int lastIndex;

    RecordArena(ByteBufAllocator alloc) {
        this.alloc = alloc;
    }

    /**
     * Encodes a record ({@link WalRecordFormat#encodeInto}) and returns the buffer holding it, with one more reference
     * for the record (the chunk it was carved from, or a buffer of its own); {@link #index()} then tells where in it
     * the record starts, and {@link #view()} is the buffer's memory from its index 0.
     */
    ByteBuf encode(long streamId, long epoch, long baseOffset, int count, ByteBuffer payload) {
        int size = WalRecordFormat.HEADER_SIZE + payload.remaining();
        if (size > MAX_CARVED_BYTES) {
            ByteBuf own = alloc.directBuffer(size, size);
            ByteBuffer view = own.nioBuffer(0, size);
            WalRecordFormat.encodeInto(view.duplicate(), 0, streamId, epoch, baseOffset, count, payload);
            own.writerIndex(size);
            lastView = view;
            lastIndex = 0;
            return own;
        }
        if (chunk == null || CHUNK_BYTES - used < size) {
            nextChunk();
        }
        int at = used;
        WalRecordFormat.encodeInto(scratch, at, streamId, epoch, baseOffset, count, payload);
        used += size;
        lastView = shared;
        lastIndex = at;
        return chunk.retain();
    }

    /** The memory of the record {@link #encode} returned last, shared and read with absolute indexes only. */
    ByteBuffer view() {
        return lastView;
    }

    /** Where in the buffer {@link #encode} returned, and in {@link #view()}, that record starts. */
    int index() {
        return lastIndex;
    }

    private void nextChunk() {
        releaseChunk();
        chunk = alloc.directBuffer(CHUNK_BYTES, CHUNK_BYTES);
        shared = chunk.nioBuffer(0, CHUNK_BYTES);
        scratch = shared.duplicate();
        used = 0;
    }

    private void releaseChunk() {
        if (chunk != null) {
            chunk.release();
            chunk = null;
            shared = null;
            scratch = null;
            lastView = null;
        }
    }

    /** Lets go of the current chunk; records carved from it keep it until they are released. */
    @Override
    public void close() {
        releaseChunk();
    }
}
