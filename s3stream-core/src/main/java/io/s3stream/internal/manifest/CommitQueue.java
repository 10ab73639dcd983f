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
 * key-value change, and the key-value changes queued right after it on other keys, share one log entry. A busy caller
 * (a group coordinator committing offsets for many consumers) then takes one entry per round trip instead of one per
 * call, which leaves the log to the other writers too.
 *
 * <p>Only key-value changes are merged, because each one's validity depends on its own key alone (and, for a
 * {@link ManifestOp.ByNode} change, on its node not being fenced): on different keys, checking each against the same
 * state checks the whole entry, as for {@link ManifestOp.ByNode#batch}. Merging stops at the first commit that is not a
 * key-value change or that touches a key already in the group, so changes of one key keep their order.
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
     * On the conductor: the next commit, and, if it changes keys only, the key-value changes queued right after it on
     * other keys, within {@link #MAX_OPS} and {@link #MAX_BYTES}. Empty when another round took everything.
     */
    List<Pending> next() {
        Pending first = queue.pollFirst();
        if (first == null) {
            return List.of();
        }
        Set<String> keys = new HashSet<>();
        long bytes = keyBytes(first, keys);
        if (bytes < 0) {
            return List.of(first);
        }
        List<Pending> group = new ArrayList<>();
        group.add(first);
        int ops = first.ops().size();
        for (Pending next = queue.peekFirst(); next != null; next = queue.peekFirst()) {
            Set<String> theirs = new HashSet<>();
            long more = keyBytes(next, theirs);
            if (more < 0 || ops + next.ops().size() > MAX_OPS || bytes + more > MAX_BYTES
                    || theirs.stream().anyMatch(keys::contains) || !queue.removeFirstOccurrence(next)) {
                break;
            }
            group.add(next);
            keys.addAll(theirs);
            ops += next.ops().size();
            bytes += more;
        }
        return group;
    }

    /** Adds the keys {@code p} changes to {@code keys} and returns their key and value bytes; -1 if not mergeable. */
    private static long keyBytes(Pending p, Set<String> keys) {
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
