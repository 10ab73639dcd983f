package io.s3stream.internal.manifest;

import io.s3stream.internal.metadata.ManifestOp;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/** Which queued commits share a manifest entry. */
class CommitQueueTest {

    private final CommitQueue queue = new CommitQueue();

    private CommitQueue.Pending add(ManifestOp... ops) {
        CommitQueue.Pending p = new CommitQueue.Pending(List.of(ops), new CompletableFuture<>());
        queue.add(p);
        return p;
    }

    private static ManifestOp put(String key) {
        return new ManifestOp.ByNode(1, 1, new ManifestOp.PutKv(key, new byte[]{1}));
    }

    private static ManifestOp cas(String key) {
        return new ManifestOp.CompareAndSetKv(key, null, new byte[]{2});
    }

    private List<List<CommitQueue.Pending>> drainAll() {
        List<List<CommitQueue.Pending>> groups = new ArrayList<>();
        for (List<CommitQueue.Pending> g = queue.next(); !g.isEmpty(); g = queue.next()) {
            groups.add(g);
        }
        return groups;
    }

    @Test
    void putsAndDeletesShareAnEntryEvenOnOneKeyInTheirOrder() {
        var a = add(put("k"));
        var b = add(new ManifestOp.DeleteKv("k"));
        var c = add(put("k"), put("other"));
        assertThat(drainAll()).containsExactly(List.of(a, b, c));
    }

    @Test
    void aCompareAndSetSharesNoKeyWithAnythingElseInItsEntry() {
        var put = add(put("k"));
        var casSameKey = add(cas("k"));
        var putOther = add(put("x"));
        var putSameKey = add(put("k"));
        var casOther = add(cas("y"));
        assertThat(drainAll()).containsExactly(List.of(put), List.of(casSameKey, putOther),
                List.of(putSameKey, casOther));
    }

    @Test
    void otherOperationsStayAloneAndKeepTheirPlace() {
        var before = add(put("a"));
        var open = add(new ManifestOp.OpenStream(1, 1, 1, 1));
        var after = add(put("b"));
        var twice = add(put("c"), new ManifestOp.DeleteKv("c"));
        var last = add(put("d"));
        assertThat(drainAll()).containsExactly(List.of(before), List.of(open), List.of(after), List.of(twice),
                List.of(last));
    }

    @Test
    void anEmptyBatchStaysAlone() {
        var before = add(put("a"));
        var empty = add();
        var after = add(put("b"));
        assertThat(drainAll()).containsExactly(List.of(before), List.of(empty), List.of(after));
    }

    @Test
    void anEntryHoldsAtMostMaxOps() {
        for (int i = 0; i < CommitQueue.MAX_OPS + 10; i++) {
            add(put("k" + i));
        }
        List<List<CommitQueue.Pending>> groups = drainAll();
        assertThat(groups).hasSize(2);
        assertThat(groups.getFirst()).hasSize(CommitQueue.MAX_OPS);
        assertThat(groups.get(1)).hasSize(10);
    }

    @Test
    void aCommitTakenBackIsNotDrained() {
        var kept = add(put("a"));
        var takenBack = add(put("b"));
        assertThat(queue.remove(takenBack)).isTrue();
        assertThat(drainAll()).containsExactly(List.of(kept));
        assertThat(queue.remove(kept)).as("already taken by the conductor").isFalse();
    }
}
