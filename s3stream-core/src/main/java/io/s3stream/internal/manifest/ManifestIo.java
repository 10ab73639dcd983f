package io.s3stream.internal.manifest;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.s3stream.CorruptDataException;
import io.s3stream.StorageIOException;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectNotFoundException;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The manifest's requests to the object store: the key layout ({@code <prefix>log/} and {@code <prefix>checkpoint/},
 * each object named by a 20-digit sequence number so that a listing is in sequence order), waiting with a deadline per
 * request, retries with full-jitter backoff, and the counters behind {@link ManifestMetadataStore#stats()}. Blocking:
 * called from start-up, the manifest's conductor and its checkpoint thread.
 */
final class ManifestIo {
    final Counters counters = new Counters();
    private final ObjectStore store;
    private final ManifestConfig config;
    private final String logPrefix;
    private final String checkpointPrefix;

    ManifestIo(ObjectStore store, ManifestConfig config) {
        this.store = store;
        this.config = config;
        this.logPrefix = config.prefix() + "log/";
        this.checkpointPrefix = config.prefix() + "checkpoint/";
    }

    /** What {@link #claim} returns when the entry that beat us vanished before we could read it. */
    static final byte[] VANISHED = new byte[0];

    /**
     * Creates entry {@code seq} with {@code bytes} unless it exists. Returns {@code bytes} itself if this writer's
     * entry is there (created now, or by an earlier attempt whose answer was lost), else the bytes that won.
     */
    byte[] claim(long seq, byte[] bytes) {
        String key = logKey(seq);
        Throwable last = null;
        for (int attempt = 1; attempt <= config.maxAttempts(); attempt++) {
            if (attempt > 1) {
                backoff(attempt - 1);
            }
            boolean taken = false; // the store answered "exists"
            try {
                counters.puts.incrementAndGet();
                ByteBuf data = Unpooled.wrappedBuffer(bytes);
                CompletableFuture<Boolean> put = store.putIfAbsent(key, data);
                put.whenComplete((r, t) -> data.release());
                if (await(put)) {
                    return bytes;
                }
                taken = true;
            } catch (ObjectStoreException e) {
                if (!e.isRetriable()) {
                    throw failure("create " + key, e);
                }
                last = e;
            } catch (TimeoutException e) {
                last = e;
            }
            // Lost the race, or the outcome is unclear: the key says who won.
            try {
                counters.gets.incrementAndGet();
                byte[] there = toBytes(await(store.get(key)));
                return Arrays.equals(there, bytes) ? bytes : there;
            } catch (ObjectNotFoundException e) {
                if (taken) {
                    // It existed a moment ago (the create said so) and is gone: garbage collection overtook us.
                    return VANISHED;
                }
                // our create did not land: try again
            } catch (ObjectStoreException e) {
                if (!e.isRetriable()) {
                    throw failure("read " + key, e);
                }
                last = e;
            } catch (TimeoutException e) {
                last = e;
            }
        }
        throw new StorageIOException("manifest commit of " + key + " in " + store.description() + " failed after "
                + config.maxAttempts() + " attempts; nothing was committed. Last error: " + last, last, true);
    }

    ObjectStore store() {
        return store;
    }

    String logPrefix() {
        return logPrefix;
    }

    String checkpointPrefix() {
        return checkpointPrefix;
    }

    /** The key of log entry {@code seq}. */
    String logKey(long seq) {
        return logPrefix + String.format("%020d", seq);
    }

    /** The key of the checkpoint of the state after entry {@code seq}. */
    String checkpointKey(long seq) {
        return checkpointPrefix + String.format("%020d", seq);
    }

    /** The sequence number of a log entry listed under {@link #logPrefix()}. */
    long logSeq(ObjectInfo entry) {
        return seqOf(entry.key(), logPrefix);
    }

    /** The sequence number of a checkpoint listed under {@link #checkpointPrefix()}. */
    long checkpointSeq(ObjectInfo checkpoint) {
        return seqOf(checkpoint.key(), checkpointPrefix);
    }

    /** The sequence number a log or checkpoint key names. */
    static long seqOf(String key, String prefix) {
        String digits = key.substring(prefix.length());
        if (digits.length() != 20 || !digits.chars().allMatch(Character::isDigit)) {
            throw new CorruptDataException("unexpected object " + key + " in the manifest: names there are 20 digits");
        }
        return Long.parseLong(digits);
    }

    /** Reads a whole object, retrying retriable failures; {@link ObjectNotFoundException} passes through. */
    byte[] read(String key) {
        return retrying("read", key, counters.gets, () -> toBytes(await(store.get(key))));
    }

    /**
     * Reads log entries {@code from}, {@code from + 1} ... ({@code count} of them) in parallel and returns, in order,
     * those before the first that does not exist. A read that fails is retried on its own, under the budget.
     */
    List<byte[]> readRun(long from, int count) {
        List<CompletableFuture<ByteBuf>> window = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            counters.gets.incrementAndGet();
            window.add(store.get(logKey(from + i)));
        }
        List<byte[]> run = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            try {
                try {
                    run.add(toBytes(await(window.get(i))));
                } catch (ObjectNotFoundException e) {
                    throw e;
                } catch (RuntimeException | TimeoutException e) {
                    run.add(read(logKey(from + i)));
                }
            } catch (ObjectNotFoundException e) {
                drain(window, i + 1);
                return run;
            } catch (RuntimeException e) {
                drain(window, i + 1);
                throw e;
            }
        }
        return run;
    }

    /** The objects under {@code prefix}, in key order (which is sequence order), retrying like {@link #read}. */
    List<ObjectInfo> list(String prefix) {
        return retrying("list", prefix, counters.lists, () -> {
            List<ObjectInfo> found = new ArrayList<>(await(store.list(prefix)));
            found.sort((x, y) -> x.key().compareTo(y.key()));
            return found;
        });
    }

    /** A store request that may time out; the unit of {@link #retrying}. */
    @FunctionalInterface
    private interface StoreCall<T> {
        T call() throws TimeoutException;
    }

    /**
     * Runs {@code request} up to {@code maxAttempts} times with backoff, retrying timeouts and retriable store errors;
     * {@link ObjectNotFoundException} and final errors pass through at once.
     */
    private <T> T retrying(String verb, String target, AtomicLong counter,
                           StoreCall<T> request) {
        Throwable last = null;
        for (int attempt = 1; attempt <= config.maxAttempts(); attempt++) {
            if (attempt > 1) {
                backoff(attempt - 1);
            }
            try {
                counter.incrementAndGet();
                return request.call();
            } catch (ObjectNotFoundException e) {
                throw e;
            } catch (ObjectStoreException e) {
                if (!e.isRetriable()) {
                    throw failure(verb + " " + target, e);
                }
                last = e;
            } catch (TimeoutException e) {
                last = e;
            }
        }
        throw new StorageIOException("manifest " + verb + " of " + target + " in " + store.description()
                + " failed after " + config.maxAttempts() + " attempts. Last error: " + last, last, true);
    }

    /** The error for a final (non-retriable) store failure of {@code what}. */
    StorageIOException failure(String what, ObjectStoreException e) {
        return new StorageIOException("manifest could not " + what + " in " + store.description() + ": "
                + e.getMessage(), e, false);
    }

    /** Waits for a store request; unwraps its failure; a request not answered in time fails with a timeout. */
    <T> T await(CompletableFuture<T> future) throws TimeoutException {
        try {
            return future.get(config.requestTimeoutMs(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof ObjectStoreException ose) {
                throw ose;
            }
            if (cause instanceof RuntimeException re) {
                throw new ObjectStoreException("manifest request failed: " + re, re, true);
            }
            throw new ObjectStoreException("manifest request failed: " + cause, cause, false);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StorageIOException("interrupted while waiting for the object store", e, true);
        }
    }

    /** Releases the buffers of reads from {@code from} on, once they arrive (after a read of the window failed). */
    static void drain(List<CompletableFuture<ByteBuf>> futures, int from) {
        for (int i = from; i < futures.size(); i++) {
            futures.get(i).thenAccept(ByteBuf::release);
        }
    }

    /** The bytes of {@code buf}, which is released. */
    static byte[] toBytes(ByteBuf buf) {
        try {
            return ByteBufUtil.getBytes(buf);
        } finally {
            buf.release();
        }
    }

    /** Sleeps a full-jitter backoff before retry number {@code attempt} (1 for the first retry). */
    void backoff(int attempt) {
        long cap = Math.min(config.maxBackoffMs(), config.backoffMs() << Math.min(attempt - 1, 20));
        if (cap <= 0) {
            return;
        }
        try {
            Thread.sleep(ThreadLocalRandom.current().nextLong(cap + 1));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StorageIOException("interrupted during manifest backoff", e, true);
        }
    }

    /** Requests by kind (every attempt counts) and outcomes, behind {@link ManifestMetadataStore#stats()}. */
    static final class Counters {
        final AtomicLong puts = new AtomicLong();
        final AtomicLong gets = new AtomicLong();
        final AtomicLong lists = new AtomicLong();
        final AtomicLong deletes = new AtomicLong();
        final AtomicLong commits = new AtomicLong();
        final AtomicLong lostRaces = new AtomicLong();
        final AtomicLong checkpoints = new AtomicLong();
    }
}
