package io.s3stream.internal.manifest;

import io.s3stream.internal.metadata.ManifestOp;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * The commits waiting for a manifest's conductor, in the order they were made, and the rule of group commit: a
 * key-value change and the key-value changes queued right after it share one log entry. A busy caller (a group
 * coordinator committing offsets for many consumers) then takes one entry per round trip instead of one per call, which
 * leaves the log to the other writers too.
 *
 * <p>Only key-value changes are merged. A put or a delete is valid whatever its key holds (a {@link ManifestOp.ByNode}
 * one only while its node is not fenced), and the ops of an entry apply in order, so puts and deletes of one key may
 * share an entry: the last one wins, as it would one entry after the other. A compare-and-set depends on its key's
 * value, so its key appears nowhere else in the entry. Checking each op against the state before the entry then checks
 * the whole entry, as for {@link ManifestOp.ByNode#batch}. Merging stops at the first commit that is not a key-value
 * change or that would break that rule, so commits keep their order.
 */
final class CommitQueue {

    /** Most ops in one merged entry. */
    static final int MAX_OPS = 256;
    /** Most key and value bytes in one merged entry. */
    static final int MAX_BYTES = 1 << 20;

    /** A commit waiting for the conductor: ops that go into one entry together, and the last op's result. */
    record Pending(List<ManifestOp> ops, CompletableFuture<Object> result) {
    }

    private final ConcurrentLinkedDeque<Pending> queue = new ConcurrentLinkedDeque<>();

    void add(Pending pending) {
        queue.addLast(pending);
    }

    /** Takes {@code pending} back if the conductor has not taken it yet (it refused the task: the store closed). */
    boolean remove(Pending pending) {
        return queue.removeFirstOccurrence(pending);
    }

    /**
     * On the conductor: the next commit, and, if it changes keys only, the key-value changes queued right after it that
     * may share its entry (see the class comment), within {@link #MAX_OPS} and {@link #MAX_BYTES}. Empty when another
     * round took everything.
     */
    List<Pending> next() {
        Pending first = queue.pollFirst();
        if (first == null) {
            return List.of();
        }
        Set<String> keys = new HashSet<>();
        Set<String> casKeys = new HashSet<>();
        long bytes = keyBytes(first, keys, casKeys);
        if (bytes < 0) {
            return List.of(first);
        }
        List<Pending> group = new ArrayList<>();
        group.add(first);
        int ops = first.ops().size();
        for (Pending next = queue.peekFirst(); next != null; next = queue.peekFirst()) {
            Set<String> theirs = new HashSet<>();
            Set<String> theirCas = new HashSet<>();
            long more = keyBytes(next, theirs, theirCas);
            if (more < 0 || ops + next.ops().size() > MAX_OPS || bytes + more > MAX_BYTES
                    || theirs.stream().anyMatch(casKeys::contains) || theirCas.stream().anyMatch(keys::contains)
                    || !queue.removeFirstOccurrence(next)) {
                break;
            }
            group.add(next);
            keys.addAll(theirs);
            casKeys.addAll(theirCas);
            ops += next.ops().size();
            bytes += more;
        }
        return group;
    }

    /**
     * Adds the keys {@code p} changes to {@code keys}, and those it compares and sets to {@code casKeys} too; returns
     * their key and value bytes, or -1 if {@code p} cannot share an entry.
     */
    private static long keyBytes(Pending p, Set<String> keys, Set<String> casKeys) {
        if (p.ops().isEmpty()) {
            return -1; // an empty batch writes no entry: alone, it answers at once
        }
        long bytes = 0;
        for (ManifestOp op : p.ops()) {
            ManifestOp change = op instanceof ManifestOp.ByNode b ? b.op() : op;
            String key;
            byte[] value;
            switch (change) {
                case ManifestOp.PutKv put -> {
                    key = put.key();
                    value = put.value();
                }
                case ManifestOp.DeleteKv delete -> {
                    key = delete.key();
                    value = null;
                }
                case ManifestOp.CompareAndSetKv cas -> {
                    key = cas.key();
                    value = cas.value();
                    casKeys.add(key);
                }
                default -> {
                    return -1;
                }
            }
            if (!keys.add(key)) {
                return -1; // one commit changing a key twice: keep it alone, as its caller made it
            }
            bytes += key.length() * 3L + (value == null ? 0 : value.length);
        }
        return bytes;
    }
}
