package io.s3stream.kafka.shell.group;

import io.s3stream.KeyValues;
import io.s3stream.NodeFencedException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class OffsetWriterTest {

    /** A key-value space whose changes complete when the test says so; it records each change. */
    private static final class HeldKeyValues implements KeyValues {
        final List<Map<String, byte[]>> changes = new ArrayList<>();
        final List<CompletableFuture<Void>> pending = new ArrayList<>();

        @Override
        public synchronized CompletableFuture<Void> update(Map<String, byte[]> puts, Collection<String> deletes) {
            changes.add(Map.copyOf(puts));
            CompletableFuture<Void> f = new CompletableFuture<>();
            pending.add(f);
            return f;
        }

        synchronized CompletableFuture<Void> change(int i) {
            return pending.get(i);
        }

        synchronized int count() {
            return changes.size();
        }

        @Override
        public CompletableFuture<Void> sync() {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Optional<byte[]>> get(String key) {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<Void> put(String key, byte[] value) {
            throw new UnsupportedOperationException("offsets are written with update");
        }

        @Override
        public CompletableFuture<Void> delete(String key) {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<SortedMap<String, byte[]>> list(String prefix) {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<Boolean> compareAndSet(String key, byte[] expected, byte[] value) {
            throw new UnsupportedOperationException();
        }
    }

    private static void awaitChanges(HeldKeyValues kv, int n) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (kv.count() < n) {
            assertThat(System.nanoTime()).as("change %d written", n).isLessThan(deadline);
            Thread.sleep(1);
        }
    }

    @Test
    void commitsArrivingDuringAWriteGoTogetherInTheNextChange() throws Exception {
        HeldKeyValues kv = new HeldKeyValues();
        OffsetWriter writer = new OffsetWriter(kv, Runnable::run);
        CompletableFuture<Void> first = writer.write(Map.of("o/g/t/0", new byte[] {1}));
        assertThat(kv.count()).as("the first commit is written at once").isEqualTo(1);

        List<CompletableFuture<Void>> queued = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            queued.add(writer.write(Map.of("o/g/t/0", new byte[] {(byte) (10 + i)}, "o/h/t/" + i, new byte[] {2})));
        }
        assertThat(kv.count()).as("nothing more while the first change is in flight").isEqualTo(1);
        assertThat(queued).noneMatch(CompletableFuture::isDone);

        kv.change(0).complete(null);
        assertThat(first).isCompleted();
        awaitChanges(kv, 2);
        Map<String, byte[]> second = kv.changes.get(1);
        assertThat(second).as("all five queued commits in one change").hasSize(6);
        assertThat(second.get("o/g/t/0")).as("the later commit of a key wins").containsExactly(14);
        assertThat(queued).noneMatch(CompletableFuture::isDone);

        kv.change(1).complete(null);
        for (CompletableFuture<Void> f : queued) {
            f.get(10, TimeUnit.SECONDS);
        }
        assertThat(kv.count()).isEqualTo(2);
    }

    @Test
    void aFailedChangeFailsEveryCommitInItAndTheWriterGoesOn() throws Exception {
        HeldKeyValues kv = new HeldKeyValues();
        OffsetWriter writer = new OffsetWriter(kv, Runnable::run);
        CompletableFuture<Void> first = writer.write(Map.of("a", new byte[] {1}));
        CompletableFuture<Void> second = writer.write(Map.of("b", new byte[] {1}));
        CompletableFuture<Void> third = writer.write(Map.of("c", new byte[] {1}));
        kv.change(0).complete(null);
        awaitChanges(kv, 2);
        kv.change(1).completeExceptionally(new NodeFencedException("node 1 at node epoch 3 is fenced"));
        first.get(10, TimeUnit.SECONDS);
        for (CompletableFuture<Void> f : List.of(second, third)) {
            assertThatThrownBy(() -> f.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(NodeFencedException.class);
        }
        CompletableFuture<Void> later = writer.write(Map.of("d", new byte[] {1}));
        awaitChanges(kv, 3);
        kv.change(2).complete(null);
        later.get(10, TimeUnit.SECONDS);
    }

    @Test
    void withALingerTheFirstCommitWaitsForOthersAndTheyGoTogether() throws Exception {
        HeldKeyValues kv = new HeldKeyValues();
        java.util.concurrent.ScheduledExecutorService timer = java.util.concurrent.Executors
                .newSingleThreadScheduledExecutor();
        try {
            OffsetWriter writer = new OffsetWriter(kv, Runnable::run, timer, 2_000);
            List<CompletableFuture<Void>> commits = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                commits.add(writer.write(Map.of("o/g/t/" + i, new byte[] {1})));
            }
            assertThat(kv.count()).as("nothing written before the linger").isZero();
            awaitChanges(kv, 1);
            assertThat(kv.changes.getFirst()).as("the three commits in one change").hasSize(3);
            kv.change(0).complete(null);
            for (CompletableFuture<Void> f : commits) {
                f.get(10, TimeUnit.SECONDS);
            }
        } finally {
            timer.shutdownNow();
        }
    }

    @Test
    void aChangeHoldsAtMostMaxKeys() throws Exception {
        HeldKeyValues kv = new HeldKeyValues();
        OffsetWriter writer = new OffsetWriter(kv, Runnable::run);
        writer.write(Map.of("first", new byte[] {1}));
        List<CompletableFuture<Void>> queued = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Map<String, byte[]> big = new HashMap<>();
            for (int k = 0; k < OffsetWriter.MAX_KEYS_PER_CHANGE / 2 + 1; k++) {
                big.put("o/g" + i + "/t/" + k, new byte[] {1});
            }
            queued.add(writer.write(big));
        }
        kv.change(0).complete(null);
        awaitChanges(kv, 2);
        assertThat(kv.changes.get(1)).as("two halves would exceed the limit: one commit per change")
                .hasSize(OffsetWriter.MAX_KEYS_PER_CHANGE / 2 + 1);
        kv.change(1).complete(null);
        awaitChanges(kv, 3);
        kv.change(2).complete(null);
        awaitChanges(kv, 4);
        kv.change(3).complete(null);
        for (CompletableFuture<Void> f : queued) {
            f.get(10, TimeUnit.SECONDS);
        }
    }
}
