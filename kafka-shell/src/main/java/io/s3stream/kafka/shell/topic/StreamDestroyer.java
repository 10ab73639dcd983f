package io.s3stream.kafka.shell.topic;

import io.s3stream.KeyValues;
import io.s3stream.Stream;
import io.s3stream.StreamFencedException;
import io.s3stream.StreamNotFoundException;
import io.s3stream.StreamStorage;
import io.s3stream.kafka.shell.network.ApiFamily;
import io.s3stream.kafka.shell.network.RateLimitedLog;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongPredicate;
import java.util.function.LongSupplier;

/**
 * Destroys the streams of deleted topics, durably. DeleteTopics records a {@code kafka/destroy/<stream id>} key for
 * each of the topic's streams in the same atomic change that deletes the topic's record, and a key goes only once its
 * stream is destroyed. A destroy that failed (the store failing, a full bucket) or that nobody ran (the partition's
 * leader was down, or stopped, when the topic was deleted) is retried by a sweep that every shell runs with its
 * reconcile rounds, so a deleted topic's data is never left behind.
 *
 * <p>The sweep leaves alone the streams this shell has open (their leader destroys them when it finds the topic gone)
 * and the ones it is destroying. Any other recorded stream it opens at {@link #SWEEP_EPOCH}, far above any epoch a
 * leader reaches, and destroys; a stream another node still holds open is refused by the open and left to that node
 * (or to the takeover that closes its streams).
 *
 * <p>Threading: {@link #destroy} is asynchronous; {@link #sweep} starts one sweep at a time, asynchronously, at most once
 * per {@code minSweepIntervalNanos}, and never throws.
 */
final class StreamDestroyer {
    static final String PREFIX = "kafka/destroy/";
    /** The epoch a sweep opens a stream at: an epoch counts a stream's moves and failovers, so none gets near it. */
    static final long SWEEP_EPOCH = 1L << 40;
    private static final System.Logger LOG = System.getLogger(StreamDestroyer.class.getName());
    private static final RateLimitedLog FAILED = new RateLimitedLog(LOG, System.Logger.Level.WARNING,
            TimeUnit.MINUTES.toNanos(1));

    private final StreamStorage storage;
    private final KeyValues kv;
    private final LongSupplier nanoClock;
    private final long minSweepIntervalNanos;
    /** Streams being destroyed by this shell now. */
    private final Set<Long> inFlight = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean sweeping = new AtomicBoolean();
    private volatile long lastSweepNanos;

    StreamDestroyer(StreamStorage storage, KeyValues kv, LongSupplier nanoClock, long minSweepIntervalNanos) {
        this.storage = storage;
        this.kv = kv;
        this.nanoClock = nanoClock;
        this.minSweepIntervalNanos = minSweepIntervalNanos;
        this.lastSweepNanos = nanoClock.getAsLong() - minSweepIntervalNanos;
    }

    static String key(long streamId) {
        return PREFIX + streamId;
    }

    /** The keys DeleteTopics records with the deletion of {@code topic}'s record: one per stream, naming its partition. */
    static Map<String, byte[]> keysOf(String topic, List<Long> streamIdsByPartition) {
        Map<String, byte[]> keys = new TreeMap<>();
        for (int i = 0; i < streamIdsByPartition.size(); i++) {
            keys.put(key(streamIdsByPartition.get(i)), (topic + "-" + i).getBytes(StandardCharsets.UTF_8));
        }
        return keys;
    }

    /**
     * Destroys a stream this shell has open and then forgets its key. A failure completes the future exceptionally
     * and leaves the key, so that a later sweep retries.
     */
    CompletableFuture<Void> destroy(Stream stream) {
        long id = stream.streamId();
        inFlight.add(id);
        return stream.destroy().thenCompose(v -> kv.delete(key(id)))
                .whenComplete((v, e) -> inFlight.remove(id));
    }

    /**
     * Starts a sweep unless one is running or the last one began less than the minimum interval ago (see the class
     * comment). {@code openHere} is asked, per stream, whether this shell has it open.
     */
    CompletableFuture<Void> sweep(LongPredicate openHere) {
        long now = nanoClock.getAsLong();
        if (now - lastSweepNanos < minSweepIntervalNanos || !sweeping.compareAndSet(false, true)) {
            return CompletableFuture.completedFuture(null);
        }
        lastSweepNanos = now;
        return kv.list(PREFIX).thenCompose(keys -> {
            CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
            for (Map.Entry<String, byte[]> e : keys.entrySet()) {
                long id;
                try {
                    id = Long.parseLong(e.getKey().substring(PREFIX.length()));
                } catch (NumberFormatException bad) {
                    continue; // not ours
                }
                String what = new String(e.getValue(), StandardCharsets.UTF_8);
                chain = chain.thenCompose(v -> openHere.test(id) || !inFlight.add(id)
                        ? CompletableFuture.<Void>completedFuture(null)
                        : sweepOne(id, what).whenComplete((x, t) -> inFlight.remove(id)));
            }
            return chain;
        }).handle((v, e) -> {
            if (e != null) {
                FAILED.log(() -> "sweeping the streams of deleted topics failed; retried next round: " + ApiFamily.cause(e));
            }
            sweeping.set(false);
            return null;
        });
    }

    /** Opens and destroys one recorded stream, then deletes its key; never fails (problems are logged). */
    private CompletableFuture<Void> sweepOne(long id, String what) {
        return storage.openStream(id, SWEEP_EPOCH)
                .thenCompose(Stream::destroy)
                .thenCompose(v -> kv.delete(key(id)))
                .thenRun(() -> LOG.log(System.Logger.Level.INFO, () -> "destroyed stream " + id + " (partition "
                        + what + "), which no leader had destroyed"))
                .exceptionallyCompose(e -> {
                    Throwable cause = ApiFamily.cause(e);
                    if (cause instanceof StreamNotFoundException) {
                        return kv.delete(key(id)); // destroyed already
                    }
                    if (!(cause instanceof StreamFencedException)) { // fenced: another node holds it open
                        FAILED.log(() -> "destroying stream " + id + " of deleted topic partition " + what
                                + " failed; retried next round: " + cause);
                    }
                    return CompletableFuture.completedFuture(null);
                })
                .exceptionally(e -> {
                    FAILED.log(() -> "forgetting destroyed stream " + id + " failed; retried next round: "
                            + ApiFamily.cause(e));
                    return null;
                });
    }
}
