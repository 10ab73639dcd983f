package io.s3stream;

import java.util.Arrays;
import java.util.ConcurrentModificationException;
import java.util.Optional;
import java.util.SortedMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Function;

/**
 * A small key-value space kept in the manifest beside the streams, for the embedding system's own metadata (for
 * example topic partition → stream id, topic configs, consumer-group offsets). Every node sharing the object store
 * sees the same space; changes are durable once their future completes. Meant for kilobytes per key and thousands of
 * keys, not for bulk data: put bulk data in streams.
 *
 * <p>Changes are fenced like appends: a node that has been fenced (a newer instance registered with its node id, or
 * another node took over its WAL) but still runs, paused or cut off, gets {@link NodeFencedException} from
 * {@link #put}, {@link #delete} and {@link #compareAndSet} and changes nothing, so it cannot overwrite what its
 * successor wrote. Reads are not fenced.
 */
public interface KeyValues {

    CompletableFuture<Optional<byte[]>> get(String key);

    CompletableFuture<Void> put(String key, byte[] value);

    CompletableFuture<Void> delete(String key);

    /** Every key starting with {@code prefix}, in key order. */
    CompletableFuture<SortedMap<String, byte[]>> list(String prefix);

    /**
     * A read barrier: completes once this node sees every change made (by any node) before the call. Reads are
     * served locally and may lag other nodes' changes by up to one poll of the manifest (half a second by default);
     * call this first when a read must reflect them, for example when taking over a role another node held.
     */
    CompletableFuture<Void> sync();

    /**
     * Sets {@code key} to {@code value} only if it currently holds {@code expected} ({@code null}: only if absent);
     * {@code value == null} deletes. Returns whether the change was made. The primitive for leases and for creating a
     * name exactly once across nodes.
     */
    CompletableFuture<Boolean> compareAndSet(String key, byte[] expected, byte[] value);

    /**
     * Sets every key of {@code puts} and deletes every key of {@code deletes}, atomically: when the future completes
     * all the changes are durable and visible together, and when it fails none was made. It is one change of the
     * manifest, not one per key, so committing the offsets of a hundred partitions costs one object-store write
     * instead of a hundred. A key may not be in both; fenced like {@link #put}.
     */
    CompletableFuture<Void> update(java.util.Map<String, byte[]> puts, java.util.Collection<String> deletes);

    /**
     * Replaces {@code key}'s value by {@code change} applied to it, by compare-and-set: the read-modify-write for a
     * value that several nodes, or several callers on one node, may change at once (a config, a counter, a set
     * encoded in one value). When another change of the key lands between the read and the write, {@code change} is
     * applied again to the new value, up to {@code attempts} times in all, so no change is lost.
     *
     * <p>{@code change} gets the current value (empty: absent) and returns the new one ({@code null}: delete or leave
     * absent); it may run more than once, so it must not have side effects. A result equal to the current value
     * writes nothing.
     *
     * @return the value stored (empty: absent). Fails with what {@code change} threw, changing nothing; with
     *         {@link ConcurrentModificationException} when all {@code attempts} lost to other changes; with
     *         {@link NodeFencedException} as {@link #compareAndSet} does
     * @throws IllegalArgumentException when {@code attempts} is below 1
     */
    default CompletableFuture<Optional<byte[]>> compute(String key, Function<Optional<byte[]>, byte[]> change,
                                                        int attempts) {
        if (attempts < 1) {
            throw new IllegalArgumentException("attempts must be at least 1, not " + attempts);
        }
        CompletableFuture<Optional<byte[]>> result = new CompletableFuture<>();
        computeAttempts(this, key, change, attempts, result);
        return result;
    }

    /**
     * Runs {@link #compute}'s attempts until one lands, one fails or none is left. An attempt whose store calls
     * completed at once is followed here, in a loop, so that a store answering on the calling thread does not grow the
     * stack with every lost race; one still in flight continues from its completion.
     */
    private static void computeAttempts(KeyValues kv, String key, Function<Optional<byte[]>, byte[]> change,
                                        int attempts, CompletableFuture<Optional<byte[]>> result) {
        for (int left = attempts; left > 0; left--) {
            CompletableFuture<Boolean> lost;
            try {
                lost = computeAttempt(kv, key, change, result);
            } catch (RuntimeException e) { // a store that throws instead of failing its future
                result.completeExceptionally(e);
                return;
            }
            if (!lost.isDone() || lost.isCompletedExceptionally()) {
                int remaining = left - 1;
                lost.whenComplete((again, failure) -> {
                    if (failure != null) {
                        result.completeExceptionally(failure instanceof CompletionException
                                && failure.getCause() != null ? failure.getCause() : failure);
                    } else if (again) {
                        if (remaining > 0) {
                            computeAttempts(kv, key, change, remaining, result);
                        } else {
                            result.completeExceptionally(keptChanging(key));
                        }
                    }
                });
                return;
            }
            if (!lost.join()) {
                return; // landed, or nothing to write: result is complete
            }
        }
        result.completeExceptionally(keptChanging(key));
    }

    /**
     * One attempt: reads the key, applies {@code change} and writes the result by compare-and-set. Completes with
     * true when another change landed first; otherwise with false, after completing {@code result}.
     */
    private static CompletableFuture<Boolean> computeAttempt(KeyValues kv, String key,
                                                             Function<Optional<byte[]>, byte[]> change,
                                                             CompletableFuture<Optional<byte[]>> result) {
        return kv.get(key).thenCompose(current -> {
            byte[] next = change.apply(current);
            if (next == null ? current.isEmpty() : current.isPresent() && Arrays.equals(current.get(), next)) {
                result.complete(current);
                return CompletableFuture.completedFuture(false);
            }
            // A lost race reads again: the built-in stores decide a compare-and-set on the state that includes every
            // change before it, so the next read sees the winner; a store whose reads lag only makes that attempt lose
            // too, never a change lost.
            return kv.compareAndSet(key, current.orElse(null), next).thenApply(changed -> {
                if (changed) {
                    result.complete(Optional.ofNullable(next));
                }
                return !changed;
            });
        });
    }

    private static ConcurrentModificationException keptChanging(String key) {
        return new ConcurrentModificationException("key " + key
                + " kept changing: every attempt to change it lost to another change; retry");
    }
}
