package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.s3stream.StorageIOException;
import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.FaultInjectingObjectStore;
import io.s3stream.testing.FaultInjectingObjectStore.Operation;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The shared layer above every object store: retries and their budget, length checks, priorities, read merging,
 * hedging, multipart with abort, and the cost counters; driven through a {@link FaultInjectingObjectStore} over
 * {@code mem://}.
 */
class ObjectStorageTest {
    private static final ObjectStorage.RetryPolicy FAST = new ObjectStorage.RetryPolicy(5, Duration.ofMillis(1),
            Duration.ofMillis(5), Duration.ofSeconds(5));

    private final String name = "os-" + UUID.randomUUID();
    private final FaultInjectingObjectStore faults = new FaultInjectingObjectStore(MemObjectStore.open(name, 1024), 7);
    private ObjectStorage storage;

    private ObjectStorage open(ObjectStorage.Settings settings) {
        storage = new ObjectStorage(faults, FAST, settings.withCostLogInterval(Duration.ZERO));
        return storage;
    }

    @AfterEach
    void close() {
        if (storage != null) {
            storage.close();
        }
        MemObjectStore.clear(name);
    }

    private static byte[] bytes(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private void putRaw(String key, byte[] payload) {
        ByteBuf buf = Unpooled.wrappedBuffer(payload);
        faults.delegate().put(key, buf).join();
        buf.release();
    }

    private static byte[] drain(ByteBuf buf) {
        try {
            return ByteBufUtil.getBytes(buf);
        } finally {
            buf.release();
        }
    }

    @Test
    void throttlingIsRetriedUntilThePutSucceedsAndEveryAttemptIsCounted() {
        ObjectStorage s = open(ObjectStorage.Settings.defaults());
        faults.on(Operation.PUT).nextCalls(3).failRetriable("503 SlowDown");
        ByteBuf data = Unpooled.wrappedBuffer(bytes(100, 1));
        s.put("k", data).join();
        data.release();
        assertThat(s.requestCounts().get("PUT")).isEqualTo(4);
        assertThat(s.retries()).isEqualTo(3);
        assertThat(s.bytesOut()).isEqualTo(100);
        assertThat(drain(faults.delegate().get("k").join())).isEqualTo(bytes(100, 1));
    }

    @Test
    void aPermanentlyFailingStoreGivesAnErrorNamingTheStoreKeyAndLastStatus() {
        ObjectStorage s = open(ObjectStorage.Settings.defaults());
        faults.on(Operation.PUT).always().failRetriable("503 SlowDown");
        ByteBuf data = Unpooled.wrappedBuffer(bytes(10, 1));
        assertThatThrownBy(() -> s.put("data/0001", data).join())
                .isInstanceOf(CompletionException.class)
                .cause().isInstanceOf(StorageIOException.class)
                .hasMessageContaining(faults.description())
                .hasMessageContaining("data/0001")
                .hasMessageContaining("after 5 attempts")
                .hasMessageContaining("503 SlowDown");
        data.release();
    }

    @Test
    void finalErrorsAreNotRetried() {
        ObjectStorage s = open(ObjectStorage.Settings.defaults());
        faults.on(Operation.PUT).always().failFatal("403 AccessDenied");
        ByteBuf data = Unpooled.wrappedBuffer(bytes(10, 1));
        assertThatThrownBy(() -> s.put("k", data).join()).hasMessageContaining("403 AccessDenied");
        assertThat(faults.calls(Operation.PUT)).isEqualTo(1);
        data.release();
    }

    @Test
    void aTruncatedGetIsRetriedAndNeverReturnedAsData() {
        ObjectStorage s = open(ObjectStorage.Settings.defaults());
        byte[] payload = bytes(4096, 2);
        putRaw("obj", payload);
        faults.on(Operation.GET).nextCalls(2).truncateTo(100);
        assertThat(drain(s.get("obj", 1000, 2000).join())).isEqualTo(Arrays.copyOfRange(payload, 1000, 3000));
        assertThat(s.retries()).isEqualTo(2);

        faults.on(Operation.GET).always().truncateTo(100);
        assertThatThrownBy(() -> s.get("obj", 0, 4096).join()).cause().isInstanceOf(StorageIOException.class)
                .hasMessageContaining("returned 100 bytes instead of 4096");
    }

    @Test
    void aSplitGetIsRetriedLikeAGetAndItsBuffersHaveTheAskedLengths() {
        ObjectStorage s = open(ObjectStorage.Settings.defaults());
        byte[] payload = bytes(4096, 3);
        putRaw("obj", payload);
        faults.on(Operation.GET).nextCalls(2).failRetriable("503 SlowDown");
        List<ByteBuf> parts = s.getSplit("obj", 96, new int[] {1000, 3000}, ObjectStorage.Priority.CATCH_UP_READ).join();
        assertThat(parts).hasSize(2);
        assertThat(drain(parts.get(0))).isEqualTo(Arrays.copyOfRange(payload, 96, 1096));
        assertThat(drain(parts.get(1))).isEqualTo(Arrays.copyOfRange(payload, 1096, 4096));
        assertThat(s.retries()).isEqualTo(2);
        assertThat(s.requestCounts().get("GET")).isEqualTo(3);
        assertThat(s.bytesIn()).isEqualTo(4000);

        // A cut answer (the fault store's split reads are the SPI's default, over its get) is retried, never data.
        faults.on(Operation.GET).nextCalls(1).truncateTo(100);
        parts = s.getSplit("obj", 0, new int[] {2048, 2048}, ObjectStorage.Priority.TAIL_READ).join();
        assertThat(drain(parts.get(1))).isEqualTo(Arrays.copyOfRange(payload, 2048, 4096));
        parts.getFirst().release();
        assertThat(s.retries()).isEqualTo(3);
    }

    @Test
    void aGetAnsweringAfterItsDeadlineIsRetriedAndItsLateBufferIsReleased() throws Exception {
        List<ByteBuf> answered = new java.util.concurrent.CopyOnWriteArrayList<>();
        ObjectStore recording = new ObjectStore() { // the backend's answers, as the layer receives them
            @Override
            public CompletableFuture<Void> put(String key, ByteBuf data) {
                return faults.put(key, data);
            }

            @Override
            public CompletableFuture<Boolean> putIfAbsent(String key, ByteBuf data) {
                return faults.putIfAbsent(key, data);
            }

            @Override
            public CompletableFuture<ByteBuf> get(String key, long position, int length) {
                return faults.get(key, position, length).thenApply(b -> {
                    answered.add(b);
                    return b;
                });
            }

            @Override
            public CompletableFuture<ByteBuf> get(String key) {
                return faults.get(key);
            }

            @Override
            public CompletableFuture<java.util.Optional<io.s3stream.spi.ObjectInfo>> head(String key) {
                return faults.head(key);
            }

            @Override
            public CompletableFuture<List<io.s3stream.spi.ObjectInfo>> list(String prefix) {
                return faults.list(prefix);
            }

            @Override
            public CompletableFuture<Void> delete(java.util.Collection<String> keys) {
                return faults.delete(keys);
            }

            @Override
            public CompletableFuture<MultipartUpload> startMultipart(String key) {
                return faults.startMultipart(key);
            }

            @Override
            public String description() {
                return "recording " + faults.description();
            }

            @Override
            public void close() {
            }
        };
        storage = new ObjectStorage(recording, new ObjectStorage.RetryPolicy(3, Duration.ofMillis(1), Duration.ofMillis(5),
                Duration.ofMillis(200)), ObjectStorage.Settings.defaults().withCostLogInterval(Duration.ZERO));
        byte[] payload = bytes(1000, 9);
        putRaw("obj", payload);
        faults.on(Operation.GET).nthCall(1).delay(Duration.ofMillis(600)); // past the 200 ms deadline
        assertThat(drain(storage.get("obj", 0, 1000, ObjectStorage.Priority.TAIL_READ).get(5, TimeUnit.SECONDS)))
                .isEqualTo(payload);
        assertThat(storage.retries()).isEqualTo(1);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (answered.size() < 2 && System.nanoTime() < deadline) {
            Thread.sleep(10); // the late answer arrives about 400 ms after the retry's
        }
        assertThat(answered).hasSize(2);
        assertThat(answered).allSatisfy(b -> assertThat(b.refCnt()).as("every answer released").isZero());
    }

    @Test
    void theRetryBudgetTurnsADeadStoreIntoFastFailuresInsteadOfARetryStorm() {
        ObjectStorage s = open(ObjectStorage.Settings.defaults().withRetryBudget(5, 0.1));
        faults.on(Operation.PUT).always().failRetriable("503 SlowDown");
        ByteBuf data = Unpooled.wrappedBuffer(bytes(10, 1));
        List<CompletableFuture<Void>> puts = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            puts.add(s.put("k" + i, data));
        }
        for (CompletableFuture<Void> f : puts) {
            assertThatThrownBy(f::join).cause().isInstanceOf(StorageIOException.class);
        }
        data.release();
        // Without a budget: 50 x 5 attempts. With it: one attempt each plus the 5 budgeted retries.
        assertThat(faults.calls(Operation.PUT)).isEqualTo(55);
        assertThat(s.budgetRefusals()).isGreaterThanOrEqualTo(45);

        // Recovery: first attempts are never budgeted, and successes refill the budget.
        faults.clearFaults();
        ByteBuf again = Unpooled.wrappedBuffer(bytes(10, 1));
        s.put("after", again).join();
        again.release();
    }

    @Test
    void uploadsOvertakeQueuedCatchUpReads() throws Exception {
        ObjectStorage s = open(ObjectStorage.Settings.defaults().withMaxInFlight(2).withMerging(-1, 0));
        byte[] payload = bytes(1 << 16, 3);
        putRaw("obj", payload);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        // Occupy the catch-up share (1 of 2 slots) and the other slot with slow reads.
        faults.on(Operation.GET).nextCalls(2).delay(Duration.ofMillis(300));
        CompletableFuture<ByteBuf> slow1 = s.get("obj", 0, 10, ObjectStorage.Priority.CATCH_UP_READ);
        CompletableFuture<ByteBuf> slow2 = s.get("obj", 0, 10, ObjectStorage.Priority.TAIL_READ);
        List<CompletableFuture<ByteBuf>> catchUp = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            int n = i;
            catchUp.add(s.get("obj", 100L * i, 10, ObjectStorage.Priority.CATCH_UP_READ)
                    .whenComplete((b, e) -> order.add("read" + n)));
        }
        ByteBuf data = Unpooled.wrappedBuffer(bytes(10, 1));
        CompletableFuture<Void> upload = s.put("up", data, ObjectStorage.Priority.UPLOAD)
                .whenComplete((v, e) -> order.add("upload"));
        upload.get(5, TimeUnit.SECONDS);
        data.release();
        drain(slow1.join());
        drain(slow2.join());
        for (CompletableFuture<ByteBuf> f : catchUp) {
            drain(f.get(5, TimeUnit.SECONDS));
        }
        assertThat(order.getFirst()).as("completion order %s", order).isEqualTo("upload");
    }

    @Test
    void nearbyQueuedReadsOfOneObjectAreMergedIntoOneGet() throws Exception {
        ObjectStorage s = open(ObjectStorage.Settings.defaults().withMaxInFlight(1).withMerging(8192, 1 << 20));
        byte[] payload = bytes(1 << 16, 4);
        putRaw("obj", payload);
        faults.on(Operation.GET).nthCall(1).delay(Duration.ofMillis(200));
        CompletableFuture<ByteBuf> first = s.get("obj", 60_000, 10); // occupies the only slot (delayed)
        List<CompletableFuture<ByteBuf>> reads = new ArrayList<>();
        int[][] ranges = {{0, 1000}, {1000, 1000}, {2500, 500}, {8000, 100}, {3000, 4000}};
        for (int[] r : ranges) {
            reads.add(s.get("obj", r[0], r[1]));
        }
        assertThat(drain(first.get(5, TimeUnit.SECONDS))).isEqualTo(Arrays.copyOfRange(payload, 60_000, 60_010));
        for (int i = 0; i < ranges.length; i++) {
            ByteBuf buf = reads.get(i).get(5, TimeUnit.SECONDS);
            assertThat(buf.unwrap()).as("a buffer of its own, not a slice pinning the merged GET's").isNull();
            assertThat(drain(buf)).isEqualTo(Arrays.copyOfRange(payload, ranges[i][0], ranges[i][0] + ranges[i][1]));
        }
        // The first read went alone; the five queued behind it became one (split) GET [0, 8100).
        assertThat(s.mergedReads()).as("merged reads").isEqualTo(4);
        assertThat(faults.calls(Operation.GET)).as("GET calls").isEqualTo(2);
    }

    @Test
    void aSlowGetIsHedgedAndTheFirstAnswerWins() throws Exception {
        ObjectStorage s = open(ObjectStorage.Settings.defaults().withHedgeAfter(Duration.ofMillis(50)));
        byte[] payload = bytes(1000, 5);
        putRaw("obj", payload);
        faults.on(Operation.GET).nthCall(1).delay(Duration.ofSeconds(2));
        long start = System.nanoTime();
        assertThat(drain(s.get("obj", 0, 1000).get(5, TimeUnit.SECONDS))).isEqualTo(payload);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(1500));
        assertThat(s.hedgedReads()).isEqualTo(1);
        assertThat(s.requestCounts().get("GET")).isEqualTo(2);
    }

    @Test
    void multipartUploadsPartsAndAbortsOnFailure() {
        ObjectStorage s = open(ObjectStorage.Settings.defaults());
        byte[] payload = bytes(10_000, 6);
        ByteBuf data = Unpooled.wrappedBuffer(payload);
        s.putMultipart("big", data, 1024, ObjectStorage.Priority.UPLOAD).join();
        assertThat(drain(faults.delegate().get("big").join())).isEqualTo(payload);
        assertThat(s.requestCounts().get("PART")).isEqualTo(10);
        assertThat(s.requestCounts().get("COMPLETE")).isEqualTo(1);

        faults.on(Operation.PART).nthCall(3).failFatal("400 InvalidPart");
        assertThatThrownBy(() -> s.putMultipart("broken", data, 1024, ObjectStorage.Priority.UPLOAD).join())
                .hasMessageContaining("400 InvalidPart");
        assertThat(faults.calls(Operation.ABORT)).isEqualTo(1);
        assertThat(faults.delegate().head("broken").join()).isEmpty();
        data.release();
    }

    @Test
    void theCostReportNamesEveryKindAndTheWriteRequestsPerGiB() {
        ObjectStorage s = open(ObjectStorage.Settings.defaults());
        ByteBuf data = Unpooled.wrappedBuffer(bytes(1024, 1));
        s.put("k", data).join();
        data.release();
        String report = s.costReport();
        assertThat(report).contains(faults.description()).contains("PUT=1").contains("GET=0")
                .contains("write requests/GiB").contains("retries 0");
    }

    @Test
    void thePeriodicCostReportIsSkippedWhenNothingHappened() {
        ObjectStorage s = open(ObjectStorage.Settings.defaults());
        assertThat(s.periodicCostReport()).as("the first report").isNotNull();
        assertThat(s.periodicCostReport()).as("idle since").isNull();
        ByteBuf data = Unpooled.wrappedBuffer(bytes(16, 2));
        s.put("k2", data).join();
        data.release();
        assertThat(s.periodicCostReport()).contains("PUT=1");
        assertThat(s.periodicCostReport()).isNull();
    }
}
