package io.s3stream.kafka.shell.group;

import io.s3stream.KeyValues;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Offset retention for the groups this shell coordinates, as Kafka's coordinator does it for an empty group (KIP-211):
 * the committed offsets of a group with no members expire once the group has been seen neither committing nor with
 * members for the retention ({@code offsets.retention.minutes}, 7 days), and the group is then gone. Without it, every
 * group ever used (a console consumer's random group, a test run's application id) would stay in the manifest, in
 * every checkpoint, forever.
 *
 * <p>The time a group was last active is the latest of: its last commit as stored ({@link OffsetKeys#timeKey}, written
 * with every commit, transactional ones included), the last commit and the last sighting of a member by this shell,
 * and the first sweep of this shell that saw the group (so a group whose history this shell does not know, after a
 * restart or when it moved here, gets a whole retention from then on). A group is never expired earlier than Kafka
 * would expire it; it may be later.
 *
 * <p>A commit and an expiry of the same group never interleave on this shell: a commit records its time and hands its
 * change to the writer under this object's monitor, and an expiry checks that time and submits its deletion under the
 * same monitor, so a commit either stops the expiry or is written after the deletion. Transactional offsets are
 * written by the transaction's coordinator, which may be another shell: one landing between this shell's read of the
 * group and its deletion would be deleted with the rest. That needs a group with no member and no commit for a whole
 * retention to commit in that moment.
 */
final class OffsetRetention {
    /** At most this many keys per deleting change (as {@link OffsetWriter}). */
    private static final int MAX_KEYS_PER_CHANGE = OffsetWriter.MAX_KEYS_PER_CHANGE;

    private final KeyValues kv;
    private final long retentionMs;
    private final LongSupplier clock;
    private final Predicate<String> hasMembers;
    private final Consumer<String> forget;
    private volatile Predicate<String> coordinatedHere = group -> true;
    private final AtomicBoolean sweeping = new AtomicBoolean();

    /** Coordinator thread only. */
    private final Map<String, Long> firstSeen = new HashMap<>();
    private final Map<String, Long> lastActive = new HashMap<>();
    /** Guarded by this. */
    private final Map<String, Long> lastCommit = new HashMap<>();

    /**
     * @param hasMembers whether a group has members or pending members (called on the coordinator thread)
     * @param forget     drops an expired group from the coordinator's memory (called on the coordinator thread)
     */
    OffsetRetention(KeyValues kv, long retentionMs, LongSupplier clock, Predicate<String> hasMembers,
                    Consumer<String> forget) {
        this.kv = kv;
        this.retentionMs = retentionMs;
        this.clock = clock;
        this.hasMembers = hasMembers;
        this.forget = forget;
    }

    /** The groups this shell coordinates; others are left to their coordinators. */
    void coordinatedHere(Predicate<String> test) {
        this.coordinatedHere = test;
    }

    /**
     * Runs {@code write}, the durable write of a commit of {@code group} to which the caller added
     * {@link OffsetKeys#timeKey}, so that no expiry of the group is submitted in between.
     */
    synchronized <T> T committing(String group, Supplier<T> write) {
        lastCommit.put(group, clock.getAsLong());
        return write.get();
    }

    /**
     * One sweep: reads every group's offsets and commit time (after a read barrier, so what another shell committed
     * counts), then decides on {@code coordinator}, the coordinator thread. A sweep still running skips this one.
     */
    CompletableFuture<Void> sweep(Executor coordinator) {
        if (!sweeping.compareAndSet(false, true)) {
            return CompletableFuture.completedFuture(null);
        }
        return kv.sync()
                .thenCompose(v -> kv.list(OffsetKeys.OFFSET_PREFIX).thenCombine(kv.list(OffsetKeys.TIME_PREFIX),
                        Stored::new))
                .thenAcceptAsync(this::expire, coordinator)
                .whenComplete((v, e) -> {
                    sweeping.set(false);
                    if (e != null) {
                        System.getLogger(OffsetRetention.class.getName()).log(System.Logger.Level.WARNING,
                                "offset retention sweep failed; the next one tries again: " + e);
                    }
                });
    }

    /** Every committed offset and commit time in the key-value space, by key. */
    private record Stored(SortedMap<String, byte[]> offsets, SortedMap<String, byte[]> times) {
    }

    private void expire(Stored read) {
        SortedMap<String, byte[]> offsets = read.offsets();
        SortedMap<String, byte[]> times = read.times();
        long now = clock.getAsLong();
        Map<String, List<String>> keys = new HashMap<>();
        Map<String, Long> stored = new HashMap<>();
        offsets.keySet().forEach(k -> keys.computeIfAbsent(OffsetKeys.groupOf(k), g -> new ArrayList<>()).add(k));
        times.forEach((k, v) -> {
            String group = OffsetKeys.groupOf(k);
            keys.computeIfAbsent(group, g -> new ArrayList<>()).add(k);
            stored.put(group, OffsetKeys.decodeTime(v));
        });
        firstSeen.keySet().retainAll(keys.keySet());
        lastActive.keySet().retainAll(keys.keySet());
        Predicate<String> here = coordinatedHere;
        List<String> deletes = new ArrayList<>();
        int expired = 0;
        synchronized (this) {
            lastCommit.values().removeIf(t -> now - t >= retentionMs); // too old to keep anything alive
            for (Map.Entry<String, List<String>> e : keys.entrySet()) {
                String group = e.getKey();
                if (!here.test(group)) {
                    continue;
                }
                if (hasMembers.test(group)) {
                    lastActive.put(group, now);
                    continue;
                }
                long since = Math.max(Math.max(stored.getOrDefault(group, 0L), firstSeen.computeIfAbsent(group,
                        g -> now)), Math.max(lastActive.getOrDefault(group, 0L), lastCommit.getOrDefault(group, 0L)));
                if (now - since < retentionMs) {
                    continue;
                }
                deletes.addAll(e.getValue());
                forget.accept(group); // its sightings stay until its keys are gone: a failed deletion is retried
                lastCommit.remove(group);
                expired++;
            }
            for (int from = 0; from < deletes.size(); from += MAX_KEYS_PER_CHANGE) {
                kv.update(Map.of(), List.copyOf(deletes.subList(from, Math.min(deletes.size(),
                                from + MAX_KEYS_PER_CHANGE))))
                        .exceptionally(error -> {
                            System.getLogger(OffsetRetention.class.getName()).log(System.Logger.Level.WARNING,
                                    "deleting expired offsets failed; the next sweep tries again: " + error);
                            return null;
                        });
            }
        }
        if (expired > 0) {
            System.getLogger(OffsetRetention.class.getName()).log(System.Logger.Level.INFO,
                    "committed offsets expired in " + expired + (expired == 1 ? " group" : " groups")
                            + ": no member and no commit for " + retentionMs + " ms (offsets.retention.minutes)");
        }
    }
}
