package io.s3stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Collection;
import java.util.ConcurrentModificationException;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link KeyValues#compute}'s retry loop on a store whose compare-and-set loses a given number of times, answering on
 * the calling thread or on another one. (ManifestEngineTest runs it on real engines.)
 */
class KeyValuesComputeTest {
    private final ExecutorService elsewhere = Executors.newSingleThreadExecutor();

    @AfterEach
    void stop() {
        elsewhere.shutdownNow();
    }

    /** A map whose first {@code losses} compare-and-sets fail as if another change had landed first. */
    private static final class LosingStore implements KeyValues {
        final Map<String, byte[]> map = new ConcurrentHashMap<>();
        final AtomicInteger casCalls = new AtomicInteger();
        final int losses;
        final ExecutorService answerOn; // null: answer on the calling thread

        LosingStore(int losses, ExecutorService answerOn) {
            this.losses = losses;
            this.answerOn = answerOn;
        }

        private <T> CompletableFuture<T> answer(T value) {
            return answerOn == null ? CompletableFuture.completedFuture(value)
                    : CompletableFuture.supplyAsync(() -> value, answerOn);
        }

        @Override
        public CompletableFuture<Optional<byte[]>> get(String key) {
            return answer(Optional.ofNullable(map.get(key)));
        }

        @Override
        public CompletableFuture<Boolean> compareAndSet(String key, byte[] expected, byte[] value) {
            if (casCalls.incrementAndGet() <= losses || !Arrays.equals(map.get(key), expected)) {
                return answer(false);
            }
            if (value == null) {
                map.remove(key);
            } else {
                map.put(key, value);
            }
            return answer(true);
        }

        @Override
        public CompletableFuture<Void> put(String key, byte[] value) {
            throw new UnsupportedOperationException();
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
        public CompletableFuture<Void> sync() {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<Void> update(Map<String, byte[]> puts, Collection<String> deletes) {
            throw new UnsupportedOperationException();
        }
    }

    @Test
    void aStoreAnsweringOnTheCallingThreadDoesNotGrowTheStackWithEachLostRace() {
        LosingStore store = new LosingStore(Integer.MAX_VALUE, null);
        // Before the loop, each lost race nested one more level of futures: this ended in a StackOverflowError.
        assertThatThrownBy(() -> store.compute("k", v -> new byte[]{1}, 200_000).join())
                .hasCauseInstanceOf(ConcurrentModificationException.class);
        assertThat(store.casCalls).hasValue(200_000);

        LosingStore wins = new LosingStore(99_999, null);
        assertThat(wins.compute("k", v -> new byte[]{2}, 100_000).join()).hasValue(new byte[]{2});
        assertThat(wins.casCalls).hasValue(100_000);
    }

    @Test
    void aStoreAnsweringElsewhereRetriesFromEachCompletion() throws Exception {
        LosingStore store = new LosingStore(40, elsewhere);
        store.map.put("k", new byte[]{5});
        assertThat(store.compute("k", v -> new byte[]{(byte) (v.orElseThrow()[0] + 1)}, 41).get(10, TimeUnit.SECONDS))
                .hasValue(new byte[]{6});
        assertThat(store.casCalls).hasValue(41);

        LosingStore never = new LosingStore(Integer.MAX_VALUE, elsewhere);
        assertThatThrownBy(() -> never.compute("k", v -> new byte[]{1}, 5).get(10, TimeUnit.SECONDS))
                .hasCauseInstanceOf(ConcurrentModificationException.class).hasMessageContaining("key k kept changing");
        assertThat(never.casCalls).hasValue(5);

        LosingStore failing = new LosingStore(2, elsewhere);
        AtomicInteger runs = new AtomicInteger();
        assertThatThrownBy(() -> failing.compute("k", v -> {
            if (runs.incrementAndGet() == 3) {
                throw new IllegalStateException("refused on the third run");
            }
            return new byte[]{1};
        }, 10).get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(IllegalStateException.class);
        assertThat(failing.map).isEmpty();
    }
}
