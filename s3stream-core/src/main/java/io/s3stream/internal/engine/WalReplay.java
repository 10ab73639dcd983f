package io.s3stream.internal.engine;

import io.netty.buffer.ByteBuf;
import io.s3stream.internal.metadata.Continuity;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.StreamState;
import io.s3stream.spi.WalRecordFormat;
import io.s3stream.spi.WriteAheadLog;

import java.util.HashMap;
import java.util.Map;

/**
 * Reads a WAL from its trim point and commits what it holds: the recovery at start (the node's own WAL, into the
 * engine's log cache, so that tail reads after a restart still hit memory) and the takeover of a dead node's WAL (into a
 * private log cache, committing as the dead node at the epoch that fenced it).
 *
 * <h2>Which records</h2>
 * Per stream, the manifest's committed end offset says where the stream continues. A record wholly below it is already
 * in committed objects and is skipped, and so is a record wholly below the stream's start offset (trimmed: nothing
 * needs it, and the uploader may have left it out before); a record that does not start exactly at the stream's next
 * expected offset follows a failed append (it was never acknowledged) and is dropped, unless the gap before it lies
 * wholly below the start offset (a trimmed prefix left out of an upload; trims never pass an acknowledged offset, so
 * no failed append hides there); records of deleted streams are skipped. Every
 * other record is put back into the log cache, and the cache is uploaded in blocks of about the upload threshold that
 * end on WAL segment boundaries ({@link BlockUploader}: a wal-object segment is then committed as it is, with no data
 * written). Trailing segments that hold no record (a seal) are committed too, and the WAL is then trimmed past
 * everything it delivered.
 *
 * <h2>Threading</h2>
 * Runs on the caller's thread and blocks; nothing else uploads from the same log cache meanwhile.
 */
final class WalReplay {
    private static final System.Logger LOG = System.getLogger(WalReplay.class.getName());

    /**
     * What a replay found.
     *
     * @param records      records the WAL delivered
     * @param bytes        their bytes
     * @param kept         records put back into the log cache and committed
     * @param dropped      records after a failed append (never acknowledged) that were dropped
     * @param nextPosition the position after the last record: the WAL was trimmed there
     * @param detail       what stopped the WAL's scan, for logs
     */
    record Result(long records, long bytes, long kept, long dropped, long nextPosition, String detail) {
    }

    private final WriteAheadLog wal;
    private final MetadataStore metadata;
    private final LogCache logCache;
    private final BlockUploader uploader;
    private final long uploadThresholdBytes;
    private final long backpressureNanos;
    /** Per stream seen: where its next record must start, and its start offset; null for a deleted stream. */
    private final Map<Long, Cursor> cursors = new HashMap<>();
    private long kept;
    private long dropped;

    WalReplay(WriteAheadLog wal, MetadataStore metadata, LogCache logCache, BlockUploader uploader,
              long uploadThresholdBytes, long backpressureNanos) {
        this.wal = wal;
        this.metadata = metadata;
        this.logCache = logCache;
        this.uploader = uploader;
        this.uploadThresholdBytes = uploadThresholdBytes;
        this.backpressureNanos = backpressureNanos;
    }

    /** Recovers the WAL, commits its records and trims it; the log cache then starts at the WAL's next position. */
    Result run() {
        WriteAheadLog.RecoveryResult result = wal.recover(new WriteAheadLog.RecordHandler() {
            @Override
            public void onStart(long walPosition) {
                logCache.startAt(walPosition);
            }

            @Override
            public void onRecord(long walPosition, long nextPosition, ByteBuf record) {
                replay(walPosition, nextPosition, record);
            }
        });
        upload(logCache.sealActive(true));
        commitTrailingSegments(result.nextPosition());
        if (result.records() > 0) {
            wal.trim(result.nextPosition()).join();
        }
        logCache.startAt(result.nextPosition());
        LOG.log(System.Logger.Level.INFO, "recovered {0} WAL records ({1} bytes) from {2}: {3} committed, {4} orphan "
                + "record(s) after failed appends skipped; {5}", result.records(), result.bytes(), wal.description(),
                kept, dropped, result.detail());
        return new Result(result.records(), result.bytes(), kept, dropped, result.nextPosition(), result.detail());
    }

    /** Puts one recovered record back into the log cache, or releases it (see the class comment). */
    private void replay(long position, long next, ByteBuf record) {
        WalRecordFormat.Decoded d;
        try {
            d = WalRecordFormat.decode(record, wal.description() + " position " + position);
        } catch (RuntimeException e) {
            record.release();
            throw e;
        }
        Cursor cursor = cursors.computeIfAbsent(d.streamId(), id -> metadata.getStream(id).join()
                .filter(m -> m.state() != StreamState.DELETED)
                .map(m -> new Cursor(m.endOffset(), m.startOffset())).orElse(DELETED));
        long end = d.baseOffset() + d.count();
        if (cursor == DELETED || end <= cursor.next || end <= cursor.start) {
            record.release(); // deleted stream, already in committed objects, or trimmed
            return;
        }
        if (!Continuity.continuesAt(cursor.next, cursor.start, d.baseOffset())) {
            record.release(); // follows a failed append: never acknowledged
            dropped++;
            return;
        }
        if (logCache.activeBytes() + record.readableBytes() > uploadThresholdBytes) {
            // Seals here when the previous record ended a segment, else at the next record that does.
            upload(logCache.sealActive());
        }
        try {
            logCache.reserve(record.readableBytes(), backpressureNanos);
        } catch (RuntimeException e) {
            record.release();
            throw e;
        }
        CachedBatch batch = new CachedBatch(d.streamId(), null, d.epoch(), d.baseOffset(), d.count(), record,
                record.readerIndex(), null);
        batch.walNextPosition = next;
        if (logCache.insert(batch, wal.isSegmentBoundary(next)) == LogCache.SEALED) {
            upload(logCache.pollSealed());
        }
        cursor.next = end;
        kept++;
    }

    /** A stream's replay position: the offset its next kept record must start at, and its start offset. */
    private static final class Cursor {
        long next;
        final long start;

        Cursor(long next, long start) {
            this.next = next;
            this.start = start;
        }
    }

    private static final Cursor DELETED = new Cursor(Long.MAX_VALUE, Long.MAX_VALUE);

    private void upload(LogCache.Block block) {
        if (block == null) {
            return;
        }
        uploader.uploadRetrying(block, BlockUploader.GiveUp.NEVER);
        logCache.markUploaded(block);
    }

    /**
     * Segments after the last recovered record (a seal, objects a fenced owner wrote) are committed as empty objects so
     * that the manifest deletes them; a WAL without segments has none.
     */
    private void commitTrailingSegments(long nextPosition) {
        LogCache.Block tail = logCache.emptyBlockUpTo(nextPosition);
        if (tail != null) {
            uploader.uploadRetrying(tail, BlockUploader.GiveUp.NEVER);
        }
    }
}
