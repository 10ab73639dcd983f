package io.s3stream.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.s3stream.internal.store.MemObjectStore;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import io.s3stream.testing.FaultInjectingObjectStore.Operation;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static io.s3stream.testing.ObjectStoreContractTest.await;
import static io.s3stream.testing.ObjectStoreContractTest.drain;
import static io.s3stream.testing.ObjectStoreContractTest.failure;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Shows that each fault of {@link FaultInjectingObjectStore} does what it says, and that without rules it is a
 * transparent wrapper (the whole contract passes through it). */
class FaultInjectingObjectStoreTest {
    private static final long SEED = 42;
    private String name;
    private FaultInjectingObjectStore store;

    @BeforeEach
    void open() {
        name = "faults-" + UUID.randomUUID();
        store = new FaultInjectingObjectStore(MemObjectStore.open(name, 1024), SEED);
    }

    @AfterEach
    void close() {
        store.close();
        MemObjectStore.clear(name);
    }

    @Test
    void nthCallFailsOnlyThatCall() {
        put("k", 10);
        store.on(Operation.GET).nthCall(2).failRetriable("503 SlowDown");
        assertThat(drain(await(store.get("k")))).hasSize(10);
        Throwable failure = failure(store.get("k"));
        assertThat(failure).isInstanceOf(ObjectStoreException.class).hasMessageContaining("503 SlowDown");
        assertThat(((ObjectStoreException) failure).isRetriable()).isTrue();
        assertThat(drain(await(store.get("k", 0, 5)))).hasSize(5);
        assertThat(store.calls(Operation.GET)).isEqualTo(3);
        assertThat(store.faultsInjected(Operation.GET)).isEqualTo(1);
    }

    @Test
    void alwaysFailsEveryCallUntilRemoved() {
        FaultInjectingObjectStore.Rule rule = store.on(Operation.PUT).always().failFatal("403 AccessDenied");
        for (int i = 0; i < 3; i++) {
            Throwable failure = failure(putAsync("k", 10));
            assertThat(((ObjectStoreException) failure).isRetriable()).isFalse();
            assertThat(failure).hasMessageContaining("403 AccessDenied");
        }
        assertThat(await(store.head("k"))).as("the failed puts never reached the store").isEmpty();
        assertThat(rule.fired()).isEqualTo(3);
        rule.remove();
        put("k", 10);
        assertThat(await(store.head("k"))).isPresent();
    }

    @Test
    void nextCallsFailThenTheStoreRecovers() {
        store.on(Operation.LIST).nextCalls(2).failRetriable("500 InternalError");
        assertThat(failure(store.list(""))).hasMessageContaining("500");
        assertThat(failure(store.list(""))).hasMessageContaining("500");
        assertThat(await(store.list(""))).isEmpty();
    }

    @Test
    void probabilisticFaultsAreReproducibleForASeed() {
        List<Boolean> first = headFailures(SEED);
        List<Boolean> second = headFailures(SEED);
        assertThat(first).isEqualTo(second);
        long failed = first.stream().filter(f -> f).count();
        assertThat(failed).isBetween(30L, 90L); // p = 0.3 of 200
        assertThat(headFailures(SEED + 1)).isNotEqualTo(first);
    }

    private List<Boolean> headFailures(long seed) {
        String bucket = "faults-p-" + UUID.randomUUID();
        List<Boolean> failures = new ArrayList<>();
        try (FaultInjectingObjectStore faulty = new FaultInjectingObjectStore(MemObjectStore.open(bucket, 1024), seed)) {
            faulty.on(Operation.HEAD).withProbability(0.3).failRetriable("503 SlowDown");
            for (int i = 0; i < 200; i++) {
                failures.add(faulty.head("k").isCompletedExceptionally());
            }
        } finally {
            MemObjectStore.clear(bucket);
        }
        return failures;
    }

    @Test
    void delayPostponesTheCall() {
        put("d/1", 1);
        store.on(Operation.LIST).always().delay(Duration.ofMillis(200));
        long start = System.nanoTime();
        CompletableFuture<?> listed = store.list("d/");
        assertThat(listed).isNotDone();
        assertThat(await(store.list("d/"))).hasSize(1);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isGreaterThanOrEqualTo(200);
        await(listed);
    }

    @Test
    void truncateShortensWhatAGetReturns() {
        byte[] payload = new byte[100];
        for (int i = 0; i < payload.length; i++) {
            payload[i] = (byte) i;
        }
        ByteBuf data = Unpooled.wrappedBuffer(payload);
        try {
            await(store.put("t", data));
        } finally {
            data.release();
        }
        store.on(Operation.GET).nthCall(1).truncateTo(10);
        byte[] torn = drain(await(store.get("t")));
        assertThat(torn).hasSize(10).containsExactly(0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
        assertThat(drain(await(store.get("t")))).isEqualTo(payload);
        assertThatThrownBy(() -> store.on(Operation.PUT).always().truncateTo(1))
                .isInstanceOf(IllegalStateException.class);
    }

    @Test
    void hangNeverCompletesUntilTheStoreCloses() throws Exception {
        store.on(Operation.COMPLETE).always().hang();
        ObjectStore.MultipartUpload upload = await(store.startMultipart("h"));
        ByteBuf part = Unpooled.wrappedBuffer(new byte[10]);
        try {
            await(upload.uploadPart(1, part));
        } finally {
            part.release();
        }
        CompletableFuture<Void> completion = upload.complete();
        try {
            completion.get(200, TimeUnit.MILLISECONDS);
            throw new AssertionError("a hung call completed");
        } catch (TimeoutException expected) {
            // the caller's timeout is what ends the wait
        }
        assertThat(store.hangingCalls()).isEqualTo(1);
        assertThat(await(store.head("h"))).as("the hung complete never reached the store").isEmpty();
        store.close();
        assertThatThrownBy(() -> completion.get(1, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(ObjectStoreException.class);
    }

    @Test
    void lostResponseAppliesTheCallButReportsAFailure() {
        store.on(Operation.PUT_IF_ABSENT).nthCall(1).loseResponse("timeout", true);
        Throwable failure = failure(putIfAbsentAsync("once"));
        assertThat(((ObjectStoreException) failure).isRetriable()).isTrue();
        assertThat(await(store.head("once"))).as("the request took effect").isPresent();
        // What a naive retry of a conditional create sees: the key exists, although this writer created it.
        assertThat(await(putIfAbsentAsync("once"))).isFalse();
    }

    @Test
    void lostGetResponseReleasesTheBuffer() {
        put("g", 100);
        store.on(Operation.GET).nthCall(1).loseResponse("connection reset", true);
        assertThat(failure(store.get("g"))).hasMessageContaining("connection reset");
        // PARANOID leak detection would report the dropped buffer if it were not released
    }

    @Test
    void partAndCompleteFaults() {
        store.on(Operation.PART).nthCall(2).failRetriable("503 SlowDown");
        store.on(Operation.COMPLETE).nthCall(1).failRetriable("500 InternalError");
        ObjectStore.MultipartUpload upload = await(store.startMultipart("mp"));
        ByteBuf part = Unpooled.wrappedBuffer(new byte[1024]);
        try {
            await(upload.uploadPart(1, part));
            assertThat(failure(upload.uploadPart(2, part))).hasMessageContaining("503");
            await(upload.uploadPart(2, part)); // the retry
        } finally {
            part.release();
        }
        assertThat(failure(upload.complete())).hasMessageContaining("500");
        await(upload.complete());
        assertThat(await(store.head("mp")).orElseThrow().sizeBytes()).isEqualTo(2048);
        assertThat(store.calls(Operation.PART)).isEqualTo(3);
        assertThat(store.calls(Operation.COMPLETE)).isEqualTo(2);
    }

    @Test
    void countsCallsOfEveryKind() {
        put("c", 10);
        await(putIfAbsentAsync("c2"));
        drain(await(store.get("c")));
        await(store.head("c"));
        await(store.list(""));
        await(store.delete(List.of("c")));
        ObjectStore.MultipartUpload upload = await(store.startMultipart("m"));
        await(upload.uploadPartCopy(1, "c2", 0, 1));
        await(upload.abort());
        for (Operation operation : Operation.values()) {
            long expected = operation == Operation.COMPLETE ? 0 : 1;
            assertThat(store.calls(operation)).as(operation.name()).isEqualTo(expected);
            assertThat(store.faultsInjected(operation)).as(operation.name()).isZero();
        }
    }

    private void put(String key, int size) {
        await(putAsync(key, size));
    }

    private CompletableFuture<Void> putAsync(String key, int size) {
        ByteBuf data = Unpooled.wrappedBuffer(new byte[size]);
        return store.put(key, data).whenComplete((v, e) -> data.release());
    }

    private CompletableFuture<Boolean> putIfAbsentAsync(String key) {
        ByteBuf data = Unpooled.wrappedBuffer(new byte[] {1, 2, 3});
        return store.putIfAbsent(key, data).whenComplete((v, e) -> data.release());
    }

    /** Without rules the wrapper is transparent: the whole contract holds through it. */
    @Nested
    class PassThroughContractTest extends ObjectStoreContractTest {
        private final String bucket = "faults-contract-" + UUID.randomUUID();

        @Override
        protected ObjectStore createStore() {
            return new FaultInjectingObjectStore(MemObjectStore.open(bucket, 64 * 1024), SEED);
        }

        @Override
        protected boolean splitGetKnowsTheObjectsEnd() {
            return false; // the fault injector has no getSplit of its own: the SPI's default, over its get
        }

        @Override
        protected void cleanUpStore() {
            MemObjectStore.clear(bucket);
        }
    }
}
