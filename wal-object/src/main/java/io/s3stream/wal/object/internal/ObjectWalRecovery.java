package io.s3stream.wal.object.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.s3stream.CorruptDataException;
import io.s3stream.NodeFencedException;
import io.s3stream.StorageIOException;
import io.s3stream.internal.format.ObjectReader;
import io.s3stream.internal.util.Futures;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectNotFoundException;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WalSegment;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.wal.object.internal.WalObjectDescriptor.Header;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * Recovers an object WAL and takes ownership of it by sealing it: what {@link ObjectWal#recover} does, whether the
 * owner restarts or another node takes the log over.
 *
 * <h2>The walk</h2>
 * From the object holding the manifest's committed position (everything before it is in committed objects), in
 * sequence order: a data object delivers its records; a seal (an earlier takeover or restart) makes the next
 * {@link WalObjectDescriptor#SEAL_SKIP} sequence numbers an orphan zone, whose objects (written by the writer that seal
 * fenced) are skipped; the first missing sequence number outside a zone is the end of the log. There a seal is created
 * with this node epoch. If the create loses because an object appeared there after the listing (a slow listing, or
 * the old owner's write landing late), that object is read and walked like the others and the seal moves on: the old
 * owner can acknowledge an object only after every earlier one exists, so whatever it may acknowledge is either
 * delivered here or lies at or after the seal, where it can never be created.
 *
 * <h2>Segments</h2>
 * Every object from the start on (data, seals, orphans) is reported as a segment, orphans and seals with no range,
 * so the engine commits each exactly once and the manifest owns its deletion.
 */
final class ObjectWalRecovery {
    private static final long RETRY_BASE_MS = 50;
    private static final long RETRY_MAX_MS = 2_000;

    /**
     * What recovery found and decided.
     *
     * @param belowStart keys of the listed objects wholly below the start (the committed position or the trim marker),
     *                   in sequence order: every record they hold is in committed objects, or was trimmed
     */
    record Outcome(long records, long bytes, long nextSeq, List<WalSegment> segments,
                   Map<Long, Long> recordBytesBySegment, String detail, List<String> belowStart) {
    }

    private final ObjectStore store;
    private final ByteBufAllocator alloc;
    private final ObjectWalConfig config;
    private final WalContext context;
    private final long token;
    private final String nodePrefix;
    private final List<WalSegment> segments = new ArrayList<>();
    private final Map<Long, Long> recordBytes = new LinkedHashMap<>();
    private long records;
    private long bytes;
    /** Size of this recovery's seal object. */
    private long sealSize;
    private int dataObjects;
    private int orphans;
    private int seals;

    ObjectWalRecovery(ObjectStore store, ByteBufAllocator alloc, ObjectWalConfig config, WalContext context, long token,
                      String nodePrefix) {
        this.store = store;
        this.alloc = alloc;
        this.config = config;
        this.context = context;
        this.token = token;
        this.nodePrefix = nodePrefix;
    }

    Outcome run(WriteAheadLog.RecordHandler handler) {
        TreeMap<Long, Long> listed = new TreeMap<>(); // seq -> size
        for (ObjectInfo info : call("list " + nodePrefix, () -> store.list(nodePrefix))) {
            long seq = WalObjectDescriptor.seqOf(nodePrefix, info.key());
            if (seq >= 0) {
                listed.put(seq, info.sizeBytes());
            }
        }
        long committed = Math.max(context.committedPosition(), trimMarker());
        long start = committed >= 0 ? WalObjectDescriptor.seqOfPosition(committed)
                : listed.isEmpty() ? 0 : listed.firstKey();
        List<String> belowStart = listed.headMap(start, false).keySet().stream()
                .map(s -> WalObjectDescriptor.key(context.nodeId(), s)).toList();
        handler.onStart(WalObjectDescriptor.position(start, 0));
        long sealEpoch = -1;
        long zoneEnd = -1; // exclusive end of the current orphan zone
        long seq = start;
        while (true) {
            String key = WalObjectDescriptor.key(context.nodeId(), seq);
            ByteBuf object;
            if (listed.containsKey(seq)) {
                object = read(key);
            } else if (seq < zoneEnd) {
                seq++;
                continue; // nothing was written here by the fenced writer
            } else {
                object = seal(seq, key);
                if (object == null) {
                    seals++;
                    segments.add(emptySegment(key, seq, sealSize));
                    long next = seq + 1 + WalObjectDescriptor.SEAL_SKIP;
                    String detail = "sealed at sequence " + seq + " (node epoch " + context.nodeEpoch() + "); from "
                            + start + ": " + dataObjects + " data object(s), " + records + " record(s), " + seals
                            + " seal(s), " + orphans + " orphan object(s) of fenced writers; next object " + next;
                    return new Outcome(records, bytes, next, segments, recordBytes, detail, belowStart);
                }
            }
            try {
                ObjectReader reader = ObjectReader.of(object, key);
                Header h = WalObjectCodec.header(reader, key);
                if (h.seq() != seq || h.nodeId() != context.nodeId()) {
                    throw new CorruptDataException("WAL object " + key + " says it is sequence " + h.seq() + " of node "
                            + h.nodeId() + ": it was copied or renamed into this log");
                }
                if (h.nodeEpoch() > context.nodeEpoch()) {
                    throw fencedBy(h, key, listed.tailMap(seq, false).keySet());
                }
                if (h.isSeal()) {
                    seals++;
                    sealEpoch = Math.max(sealEpoch, h.nodeEpoch());
                    zoneEnd = seq + 1 + WalObjectDescriptor.SEAL_SKIP;
                    segments.add(emptySegment(key, seq, object.readableBytes()));
                } else if (seq < zoneEnd || h.nodeEpoch() < sealEpoch) {
                    orphans++; // written by a writer a seal had fenced: never acknowledged
                    segments.add(emptySegment(key, seq, object.readableBytes()));
                } else {
                    deliver(handler, reader, h, key, object.readableBytes());
                }
            } finally {
                object.release();
            }
            seq++;
        }
    }

    /** The trim point a standalone log recorded ({@link ObjectWal#trim}), or -1. */
    private long trimMarker() {
        if (context.trimsRecorded()) {
            return -1;
        }
        try {
            ByteBuf marker = call("read the trim marker", () -> store.get(nodePrefix + ObjectWal.TRIM_MARKER));
            try {
                return marker.readableBytes() == Long.BYTES ? marker.getLong(marker.readerIndex()) : -1;
            } finally {
                marker.release();
            }
        } catch (ObjectNotFoundException e) {
            return -1;
        }
    }

    /**
     * The log belongs to a newer owner: the error names the newest node epoch among {@code h} and the objects after
     * it (a newer owner's seal may follow objects of an owner between it and this one).
     */
    private NodeFencedException fencedBy(Header h, String key, Iterable<Long> later) {
        long newest = h.nodeEpoch();
        for (long seq : later) {
            String k = WalObjectDescriptor.key(context.nodeId(), seq);
            ByteBuf o = read(k);
            try {
                newest = Math.max(newest, WalObjectCodec.header(ObjectReader.of(o, k), k).nodeEpoch());
            } catch (RuntimeException e) {
                // not readable as a WAL object: it says nothing about owners
            } finally {
                o.release();
            }
        }
        return new NodeFencedException("WAL " + nodePrefix + " is owned by node epoch " + newest + " (object " + key
                + " is of node epoch " + h.nodeEpoch() + "), newer than " + context.nodeEpoch());
    }

    private void deliver(WriteAheadLog.RecordHandler handler, ObjectReader reader, Header h, String key, long size) {
        List<ByteBuf> recs = WalObjectCodec.records(alloc, reader, h, key);
        long seq = h.seq();
        long start = WalObjectDescriptor.position(seq, 0);
        long end = WalObjectDescriptor.position(seq + 1, 0);
        long objectRecordBytes = 0;
        for (ByteBuf r : recs) {
            objectRecordBytes += r.readableBytes();
        }
        dataObjects++;
        records += recs.size();
        bytes += objectRecordBytes;
        segments.add(new WalSegment(key, size, start, end, recs.size(), WalObjectCodec.ranges(h)));
        recordBytes.put(start, objectRecordBytes);
        for (int i = 0; i < recs.size(); i++) {
            long position = WalObjectDescriptor.position(seq, i);
            long next = i == recs.size() - 1 ? end : WalObjectDescriptor.position(seq, i + 1);
            try {
                handler.onRecord(position, next, recs.get(i));
            } catch (RuntimeException | Error e) {
                for (int j = i + 1; j < recs.size(); j++) {
                    recs.get(j).release();
                }
                throw e;
            }
        }
    }

    private static WalSegment emptySegment(String key, long seq, long size) {
        return new WalSegment(key, size, WalObjectDescriptor.position(seq, 0), WalObjectDescriptor.position(seq + 1, 0),
                0, List.of());
    }

    /**
     * Creates a seal at {@code seq}; returns null when this call's seal is there (created now, or by an earlier attempt
     * whose answer was lost), else the object that is there instead (the caller owns it).
     */
    private ByteBuf seal(long seq, String key) {
        Header header = new Header(WalObjectDescriptor.KIND_SEAL, config.maxInFlight(), context.nodeId(),
                context.nodeEpoch(), token, seq, List.of());
        WalObjectCodec.Built built = WalObjectCodec.build(alloc, config.blockBytes(), header, List.of());
        ByteBuf sealBytes = built.bytes();
        try {
            sealSize = sealBytes.readableBytes();
            long deadline = System.nanoTime() + config.failAfter().toNanos();
            for (int attempt = 1; ; attempt++) {
                Throwable failure;
                try {
                    if (get(store.putIfAbsent(key, sealBytes))) {
                        return null;
                    }
                    failure = null;
                } catch (RuntimeException e) {
                    failure = Futures.unwrap(e);
                    if (!retriable(failure)) {
                        throw new StorageIOException(key + ": creating the seal failed: " + failure, failure);
                    }
                }
                // The key exists (or the outcome is unclear): whoever is there decides.
                ByteBuf there;
                try {
                    there = get(store.get(key));
                } catch (RuntimeException e) {
                    Throwable cause = Futures.unwrap(e);
                    if (cause instanceof ObjectNotFoundException && failure != null) {
                        pause(attempt, deadline, key, failure);
                        continue; // our create did not land: try again
                    }
                    if (!retriable(cause)) {
                        throw new StorageIOException(key + ": reading what is at the seal's place failed: " + cause,
                                cause);
                    }
                    pause(attempt, deadline, key, cause);
                    continue;
                }
                if (ByteBufUtil.equals(there, sealBytes)) {
                    there.release();
                    return null;
                }
                return there;
            }
        } finally {
            sealBytes.release();
        }
    }

    private ByteBuf read(String key) {
        return call("read " + key, () -> store.get(key));
    }

    /** A store call, retried with backoff on retriable failures until {@code failAfter}. */
    private <T> T call(String what, Supplier<CompletableFuture<T>> request) {
        long deadline = System.nanoTime() + config.failAfter().toNanos();
        for (int attempt = 1; ; attempt++) {
            try {
                return get(request.get());
            } catch (RuntimeException e) {
                Throwable cause = Futures.unwrap(e);
                if (!retriable(cause)) {
                    if (cause instanceof RuntimeException re) {
                        throw re;
                    }
                    throw new StorageIOException(nodePrefix + ": " + what + " failed: " + cause, cause);
                }
                pause(attempt, deadline, what, cause);
            }
        }
    }

    private void pause(int attempt, long deadline, String what, Throwable cause) {
        if (System.nanoTime() >= deadline) {
            throw new StorageIOException(nodePrefix + ": " + what + " kept failing for "
                    + config.failAfter().toMillis() + " ms; last error: " + cause, cause);
        }
        long cap = Math.min(RETRY_MAX_MS, RETRY_BASE_MS << Math.min(10, attempt - 1));
        try {
            Thread.sleep(ThreadLocalRandom.current().nextLong(cap + 1));
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            throw new StorageIOException("interrupted while recovering " + nodePrefix, ie);
        }
    }

    private static boolean retriable(Throwable t) {
        return t instanceof TimeoutException || t instanceof StorageIOException
                || (t instanceof ObjectStoreException ose && ose.isRetriable());
    }

    private static <T> T get(CompletableFuture<T> future) {
        try {
            return future.get(5, TimeUnit.MINUTES);
        } catch (ExecutionException e) {
            throw new CompletionException(e.getCause());
        } catch (TimeoutException e) {
            throw new CompletionException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StorageIOException("interrupted", e);
        }
    }

}
