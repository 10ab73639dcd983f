package io.s3stream.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectKeys;
import io.s3stream.spi.ObjectNotFoundException;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The {@link ObjectStore} contract, run against every backend: extend it, return a fresh, empty store from
 * {@link #createStore()}, and remove what the test left behind in {@link #cleanUpStore()}.
 *
 * <p>Every buffer a test allocates or receives is released, so Netty's leak detector (PARANOID in surefire) reports
 * leaks of the store under test, not of the suite. Keys are used as given: a store that adds a prefix of its own
 * must hide it from callers (listed keys are the keys that {@code get} and {@code delete} take).
 *
 * <p>Multipart tests upload parts of {@link ObjectStore#minPartSizeBytes()} bytes, so a backend that keeps S3's
 * 5 MiB floor makes them move about 10 MiB each; backends may lower the floor through their URI for speed.
 */
public abstract class ObjectStoreContractTest {
    /** Seed of the payload generator; payload bytes are deterministic so failures reproduce. */
    private static final long SEED = 0x5EEDL;
    /** How long any single store operation may take before the test fails instead of hanging. */
    protected static final long TIMEOUT_SECONDS = 60;

    /** The store under test, fresh for each test. */
    protected ObjectStore store;
    private final Random random = new Random(SEED);

    /** Returns a new, empty store, isolated from every other test's store. */
    protected abstract ObjectStore createStore() throws Exception;

    /**
     * Whether the store's {@link ObjectStore#getSplit} knows where an object ends (so a split read past it is final);
     * a store on the SPI's default cannot tell a short object from a cut answer and may call it retriable.
     */
    protected boolean splitGetKnowsTheObjectsEnd() {
        return true;
    }

    /**
     * Whether ranged reads answer in direct memory (the remote stores: a heap array of a block's size is a humongous
     * object to G1, and the block cache would keep it on the heap).
     */
    protected boolean rangedGetInDirectMemory() {
        return false;
    }

    /** Removes whatever the test left in the backend; called after the store is closed. */
    protected void cleanUpStore() throws Exception {
    }

    @BeforeEach
    final void openStore() throws Exception {
        store = createStore();
    }

    @AfterEach
    final void closeStore() throws Exception {
        try {
            if (store != null) {
                store.close();
                store.close(); // idempotent
            }
        } finally {
            cleanUpStore();
        }
    }

    // --------------------------------------------------------------------------------------------------------------
    // put and get

    @Test
    void putThenGetRoundTripsSmallObject() {
        byte[] payload = bytes(1000);
        put("small", payload);
        assertThat(getBytes("small")).isEqualTo(payload);
    }

    @Test
    void emptyObjectRoundTrips() {
        put("empty", new byte[0]);
        assertThat(getBytes("empty")).isEmpty();
        assertThat(await(store.head("empty"))).get().extracting(ObjectInfo::sizeBytes).isEqualTo(0L);
        assertThat(failure(store.get("empty", 0, 1))).isInstanceOf(ObjectStoreException.class)
                .isNotInstanceOf(ObjectNotFoundException.class);
    }

    @Test
    void largeObjectRoundTrips() {
        byte[] payload = bytes(20 * 1024 * 1024 + 17);
        ByteBuf data = PooledByteBufAllocator.DEFAULT.directBuffer(payload.length);
        try {
            data.writeBytes(payload);
            await(store.put("large", data));
        } finally {
            data.release();
        }
        assertThat(getBytes("large")).isEqualTo(payload);
        int at = 13 * 1024 * 1024 + 5;
        assertThat(getBytes("large", at, 1024 * 1024)).isEqualTo(Arrays.copyOfRange(payload, at, at + 1024 * 1024));
    }

    @Test
    void putReadsTheReadableBytesAndLeavesTheBufferToTheCaller() {
        byte[] payload = bytes(100);
        ByteBuf data = Unpooled.buffer(200);
        try {
            data.writeBytes(new byte[30]).writeBytes(payload);
            data.readerIndex(30);
            await(store.put("readable", data));
            assertThat(data.refCnt()).isEqualTo(1);
            assertThat(data.readerIndex()).isEqualTo(30);
            assertThat(data.readableBytes()).isEqualTo(100);
            assertThat(await(store.putIfAbsent("readable-2", data))).isTrue();
            assertThat(data.refCnt()).isEqualTo(1);
            assertThat(data.readerIndex()).isEqualTo(30);
        } finally {
            data.release();
        }
        assertThat(getBytes("readable")).isEqualTo(payload);
        assertThat(getBytes("readable-2")).isEqualTo(payload);
    }

    @Test
    void getReturnsABufferOwnedByTheCaller() {
        byte[] payload = bytes(64);
        put("owned", payload);
        ByteBuf first = await(store.get("owned"));
        try {
            assertThat(first.refCnt()).isEqualTo(1);
            first.setByte(first.readerIndex(), first.getByte(first.readerIndex()) + 1); // scribble on our copy
        } finally {
            first.release();
        }
        assertThat(getBytes("owned")).isEqualTo(payload);
        assertThat(getBytes("owned", 0, 64)).isEqualTo(payload);
    }

    @Test
    void rangedGetReturnsTheMiddle() {
        byte[] payload = bytes(10_000);
        put("ranged", payload);
        assertThat(getBytes("ranged", 1234, 4321)).isEqualTo(Arrays.copyOfRange(payload, 1234, 1234 + 4321));
        assertThat(getBytes("ranged", 0, 1)).isEqualTo(Arrays.copyOfRange(payload, 0, 1));
        assertThat(getBytes("ranged", 9_999, 1)).isEqualTo(Arrays.copyOfRange(payload, 9_999, 10_000));
    }

    @Test
    void rangedGetPastTheEndIsClipped() {
        byte[] payload = bytes(1000);
        put("clipped", payload);
        assertThat(getBytes("clipped", 900, 500)).isEqualTo(Arrays.copyOfRange(payload, 900, 1000));
        assertThat(getBytes("clipped", 0, Integer.MAX_VALUE)).isEqualTo(payload);
    }

    @Test
    void largeRangedGetsReturnWhatTheObjectHolds() {
        byte[] payload = bytes(3 << 20); // past any first buffer a store sizes before it knows the body's length
        put("large-ranges", payload);
        int at = (1 << 20) + 5;
        ByteBuf inside = await(store.get("large-ranges", at, 700 << 10));
        ByteBuf clipped = await(store.get("large-ranges", 0, Integer.MAX_VALUE));
        if (rangedGetInDirectMemory()) {
            assertThat(List.of(inside, clipped)).as("ranged reads in direct memory").allMatch(ByteBuf::isDirect);
        }
        assertThat(drain(inside)).isEqualTo(Arrays.copyOfRange(payload, at, at + (700 << 10)));
        assertThat(drain(clipped)).isEqualTo(payload);
    }

    @Test
    void rangedGetStartingAtOrPastTheEndFails() {
        put("short", bytes(1000));
        for (long position : new long[] {1000, 1001, 1L << 40}) {
            Throwable failure = failure(store.get("short", position, 10));
            assertThat(failure).as("get at %d", position).isInstanceOf(ObjectStoreException.class)
                    .isNotInstanceOf(ObjectNotFoundException.class);
            assertThat(((ObjectStoreException) failure).isRetriable()).as("an invalid range is final").isFalse();
        }
    }

    @Test
    void splitGetReturnsEachRangeInABufferOfItsOwn() {
        byte[] payload = bytes(300_000);
        put("split", payload);
        int[] lengths = {1, 131_072, 7, 100_000, 68_919}; // to the last byte
        List<ByteBuf> parts = await(store.getSplit("split", 1, lengths));
        assertThat(parts).hasSize(lengths.length);
        int at = 1;
        for (int i = 0; i < lengths.length; i++) {
            ByteBuf part = parts.get(i);
            assertThat(part.refCnt()).as("part %d is the caller's", i).isEqualTo(1);
            assertThat(drain(part)).as("part %d", i).isEqualTo(Arrays.copyOfRange(payload, at, at + lengths[i]));
            at += lengths[i];
        }
        assertThat(drain(await(store.getSplit("split", 299_990, new int[] {10}).thenApply(List::getFirst))))
                .isEqualTo(Arrays.copyOfRange(payload, 299_990, 300_000));
    }

    @Test
    void closingTheStoreDuringSplitReadsLeavesNoBufferBehind() throws Exception {
        // A client may go on writing a body after the read was given up (a close interrupts the waiting thread): what
        // it writes then must not allocate buffers that no one owns.
        put("split-closed", bytes(4 * 1024 * 1024));
        int[] lengths = new int[64];
        Arrays.fill(lengths, 64 * 1024);
        List<CompletableFuture<List<ByteBuf>>> reads = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            reads.add(store.getSplit("split-closed", 0, lengths));
        }
        Thread.sleep(100 + random.nextInt(200));
        store.close();
        for (CompletableFuture<List<ByteBuf>> read : reads) {
            try {
                read.get(TIMEOUT_SECONDS, TimeUnit.SECONDS).forEach(ByteBuf::release);
            } catch (ExecutionException e) {
                assertThat(e.getCause()).isInstanceOf(ObjectStoreException.class);
            }
        }
        Thread.sleep(500); // what the client still had in flight when the reads settled
        LeakCheck.assertNoLeaks();
    }

    @Test
    void splitGetPastTheEndOrWithBadLengthsFailsAndIsFinal() {
        put("split-short", bytes(1000));
        List<CompletableFuture<List<ByteBuf>>> bad = List.of(
                store.getSplit("split-short", 900, new int[] {50, 51}), // ends one byte past the object
                store.getSplit("split-short", 1000, new int[] {1}),
                store.getSplit("split-short", 0, new int[] {10, 0}),
                store.getSplit("split-short", 0, new int[] {}),
                store.getSplit("split-short", -1, new int[] {10}));
        for (CompletableFuture<List<ByteBuf>> f : bad) {
            Throwable failure = failure(f);
            assertThat(failure).isInstanceOf(ObjectStoreException.class).isNotInstanceOf(ObjectNotFoundException.class);
            if (splitGetKnowsTheObjectsEnd() || failure.getMessage().contains("invalid split read")) {
                assertThat(((ObjectStoreException) failure).isRetriable()).as(failure.getMessage()).isFalse();
            }
            assertThat(failure.getMessage()).contains("split-short");
        }
        Throwable missing = failure(store.getSplit("split-missing", 0, new int[] {1, 2}));
        assertThat(missing).isInstanceOf(ObjectNotFoundException.class);
    }

    @Test
    void missingKeyIsNotFound() {
        for (CompletableFuture<ByteBuf> get : List.of(store.get("missing"), store.get("missing", 0, 10))) {
            Throwable failure = failure(get);
            assertThat(failure).isInstanceOf(ObjectNotFoundException.class);
            assertThat(((ObjectStoreException) failure).isRetriable()).isFalse();
            assertThat(failure.getMessage()).contains("missing");
        }
        assertThat(await(store.head("missing"))).isEmpty();
        assertThat(await(store.head("missing/deeper"))).isEmpty();
    }

    @Test
    void headReportsSize() {
        put("sized", bytes(4567));
        Optional<ObjectInfo> info = await(store.head("sized"));
        assertThat(info).isPresent();
        assertThat(info.get().key()).isEqualTo("sized");
        assertThat(info.get().sizeBytes()).isEqualTo(4567);
        assertThat(info.get().lastModifiedMs()).isNotNegative();
    }

    @Test
    void putReplacesAnExistingObject() {
        put("replaced", bytes(5000));
        byte[] second = bytes(300);
        put("replaced", second);
        assertThat(getBytes("replaced")).isEqualTo(second);
        assertThat(await(store.head("replaced")).orElseThrow().sizeBytes()).isEqualTo(300);
    }

    @Test
    void readersDuringAnOverwriteSeeTheOldOrTheNewBytesNeverAMix() throws Exception {
        // Objects of different sizes, so that a read taking its size from one and its bytes from the other shows.
        byte[] a = new byte[256 * 1024];
        byte[] b = new byte[320 * 1024 + 5];
        Arrays.fill(a, (byte) 'A');
        Arrays.fill(b, (byte) 'B');
        put("flip", a);
        int at = 1000;
        int length = a.length; // past the end of a: clipped there, not in b
        byte[] rangeOfA = Arrays.copyOfRange(a, at, a.length);
        byte[] rangeOfB = Arrays.copyOfRange(b, at, at + length);
        try (ExecutorService pool = Executors.newFixedThreadPool(3)) {
            Future<?> writer = pool.submit(() -> {
                for (int i = 0; i < 40; i++) {
                    put("flip", i % 2 == 0 ? b : a);
                }
            });
            List<Future<?>> readers = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                readers.add(pool.submit(() -> {
                    while (!writer.isDone()) {
                        byte[] seen = getBytes("flip");
                        assertThat(Arrays.equals(seen, a) || Arrays.equals(seen, b)).as("torn read").isTrue();
                        byte[] range = getBytes("flip", at, length);
                        assertThat(Arrays.equals(range, rangeOfA) || Arrays.equals(range, rangeOfB))
                                .as("torn ranged read").isTrue();
                    }
                }));
            }
            writer.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            for (Future<?> reader : readers) {
                reader.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
        }
    }

    // --------------------------------------------------------------------------------------------------------------
    // putIfAbsent

    @Test
    void putIfAbsentCreatesOnlyOnce() {
        byte[] first = bytes(100);
        byte[] second = bytes(200);
        assertThat(putIfAbsent("once", first)).isTrue();
        assertThat(putIfAbsent("once", second)).isFalse();
        assertThat(getBytes("once")).isEqualTo(first);
    }

    @Test
    void putIfAbsentSucceedsAgainAfterDelete() {
        assertThat(putIfAbsent("again", bytes(10))).isTrue();
        await(store.delete(List.of("again")));
        byte[] second = bytes(20);
        assertThat(putIfAbsent("again", second)).isTrue();
        assertThat(getBytes("again")).isEqualTo(second);
    }

    @Test
    void putIfAbsentDoesNotCreateOverAnObjectWrittenByPut() {
        byte[] first = bytes(10);
        put("existing", first);
        assertThat(putIfAbsent("existing", bytes(11))).isFalse();
        assertThat(getBytes("existing")).isEqualTo(first);
    }

    @Test
    void concurrentPutIfAbsentHasExactlyOneWinner() throws Exception {
        int threads = 8;
        for (int round = 0; round < 5; round++) {
            String key = "race/" + round;
            List<byte[]> payloads = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                payloads.add(bytes(1000 + i * 100)); // distinct sizes and contents
            }
            CyclicBarrier start = new CyclicBarrier(threads);
            List<Future<Boolean>> results = new ArrayList<>();
            try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
                for (int i = 0; i < threads; i++) {
                    byte[] payload = payloads.get(i);
                    results.add(pool.submit(() -> {
                        start.await(TIMEOUT_SECONDS, TimeUnit.SECONDS);
                        return putIfAbsent(key, payload);
                    }));
                }
            }
            List<Integer> winners = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                if (results.get(i).get()) {
                    winners.add(i);
                }
            }
            assertThat(winners).as("winners of round %d", round).hasSize(1);
            assertThat(getBytes(key)).isEqualTo(payloads.get(winners.getFirst()));
        }
    }

    // --------------------------------------------------------------------------------------------------------------
    // list and delete

    @Test
    void listReturnsExactlyTheKeysWithThePrefixInOrder() {
        List<String> keys = new ArrayList<>(List.of("a/b/1", "a/b/2", "a/bc/1", "a/b2", "ab/1", "b/1", "a/b/sub/x"));
        Collections.shuffle(keys, new Random(SEED));
        for (String key : keys) {
            put(key, bytes(key.length()));
        }
        assertThat(listKeys("a/b/")).containsExactly("a/b/1", "a/b/2", "a/b/sub/x");
        assertThat(listKeys("a/b")).containsExactly("a/b/1", "a/b/2", "a/b/sub/x", "a/b2", "a/bc/1");
        assertThat(listKeys("a/bc")).containsExactly("a/bc/1");
        assertThat(listKeys("a")).containsExactly("a/b/1", "a/b/2", "a/b/sub/x", "a/b2", "a/bc/1", "ab/1");
        assertThat(listKeys("")).containsExactly("a/b/1", "a/b/2", "a/b/sub/x", "a/b2", "a/bc/1", "ab/1", "b/1");
        assertThat(listKeys("a/b/1")).containsExactly("a/b/1");
        assertThat(listKeys("a/b/3")).isEmpty();
        assertThat(listKeys("zzz")).isEmpty();
        assertThat(listKeys("zzz/")).isEmpty();
        for (ObjectInfo info : await(store.list("a/"))) {
            assertThat(info.sizeBytes()).as(info.key()).isEqualTo(info.key().length());
        }
    }

    @Test
    void listOfAnEmptyStoreIsEmpty() {
        assertThat(await(store.list(""))).isEmpty();
    }

    @Test
    void listDoesNotShowDeletedObjects() {
        put("gone/1", bytes(1));
        put("gone/2", bytes(1));
        await(store.delete(List.of("gone/1")));
        assertThat(listKeys("gone/")).containsExactly("gone/2");
        await(store.delete(List.of("gone/2")));
        assertThat(listKeys("gone/")).isEmpty();
        assertThat(listKeys("")).isEmpty();
    }

    @Test
    void deleteRemovesABatchAndIgnoresMissingKeys() {
        put("d/1", bytes(10));
        put("d/2", bytes(10));
        put("d/3", bytes(10));
        await(store.delete(List.of("d/1", "d/3", "d/missing", "elsewhere/missing")));
        assertThat(await(store.head("d/1"))).isEmpty();
        assertThat(await(store.head("d/3"))).isEmpty();
        assertThat(await(store.head("d/2"))).isPresent();
        assertThat(failure(store.get("d/1"))).isInstanceOf(ObjectNotFoundException.class);
        await(store.delete(List.of()));
        await(store.delete(List.of("d/1"))); // deleting twice is fine
        assertThat(listKeys("d/")).containsExactly("d/2");
    }

    @Test
    void deleteOfManyKeys() {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 1500; i++) { // more than one S3 DeleteObjects request holds
            keys.add(String.format("many/%05d", i));
        }
        for (String key : keys.subList(0, 50)) {
            put(key, bytes(1));
        }
        await(store.delete(keys));
        assertThat(listKeys("many/")).isEmpty();
    }

    // --------------------------------------------------------------------------------------------------------------
    // multipart

    @Test
    void multipartAssemblesPartsInNumberOrder() {
        int partSize = store.minPartSizeBytes();
        byte[] p1 = bytes(partSize);
        byte[] p2 = bytes(partSize + 3);
        byte[] p3 = bytes(1234);
        ObjectStore.MultipartUpload upload = await(store.startMultipart("mp/object"));
        assertThat(upload.key()).isEqualTo("mp/object");
        ByteBuf b1 = Unpooled.wrappedBuffer(p1);
        ByteBuf b2 = Unpooled.wrappedBuffer(p2);
        ByteBuf b3 = Unpooled.wrappedBuffer(p3);
        try {
            // Out of order and in flight together.
            CompletableFuture<Void> f3 = upload.uploadPart(3, b3);
            CompletableFuture<Void> f1 = upload.uploadPart(1, b1);
            CompletableFuture<Void> f2 = upload.uploadPart(2, b2);
            await(CompletableFuture.allOf(f3, f1, f2));
        } finally {
            b1.release();
            b2.release();
            b3.release();
        }
        assertThat(await(store.head("mp/object"))).as("invisible before complete").isEmpty();
        assertThat(listKeys("")).isEmpty();
        await(upload.complete());
        assertThat(getBytes("mp/object")).isEqualTo(concat(p1, p2, p3));
        assertThat(await(store.head("mp/object")).orElseThrow().sizeBytes()).isEqualTo(2L * partSize + 3 + 1234);
        assertThat(listKeys("")).containsExactly("mp/object");
    }

    @Test
    void multipartPartUploadedAgainReplacesTheEarlierOne() {
        int partSize = store.minPartSizeBytes();
        byte[] p1 = bytes(partSize);
        byte[] p2first = bytes(100);
        byte[] p2 = bytes(200);
        ObjectStore.MultipartUpload upload = await(store.startMultipart("mp/retried"));
        uploadPart(upload, 1, p1);
        uploadPart(upload, 2, p2first);
        uploadPart(upload, 2, p2);
        await(upload.complete());
        assertThat(getBytes("mp/retried")).isEqualTo(concat(p1, p2));
    }

    @Test
    void multipartWithASinglePart() {
        byte[] only = bytes(777);
        ObjectStore.MultipartUpload upload = await(store.startMultipart("mp/single"));
        uploadPart(upload, 1, only);
        await(upload.complete());
        assertThat(getBytes("mp/single")).isEqualTo(only);
    }

    @Test
    void multipartCompleteReplacesAnExistingObject() {
        put("mp/existing", bytes(50));
        byte[] only = bytes(60);
        ObjectStore.MultipartUpload upload = await(store.startMultipart("mp/existing"));
        uploadPart(upload, 1, only);
        await(upload.complete());
        assertThat(getBytes("mp/existing")).isEqualTo(only);
    }

    @Test
    void abortedMultipartLeavesNoObject() {
        ObjectStore.MultipartUpload upload = await(store.startMultipart("mp/aborted"));
        uploadPart(upload, 1, bytes(store.minPartSizeBytes()));
        uploadPart(upload, 2, bytes(10));
        await(upload.abort());
        await(upload.abort()); // idempotent
        assertThat(await(store.head("mp/aborted"))).isEmpty();
        assertThat(listKeys("")).isEmpty();
        assertThat(failure(store.get("mp/aborted"))).isInstanceOf(ObjectNotFoundException.class);
    }

    @Test
    void abortWithoutPartsIsFine() {
        ObjectStore.MultipartUpload upload = await(store.startMultipart("mp/nothing"));
        await(upload.abort());
        assertThat(listKeys("")).isEmpty();
    }

    @Test
    void uploadPartCopyTakesARangeOfAnExistingObject() {
        int partSize = store.minPartSizeBytes();
        byte[] source = bytes(partSize + 5000);
        put("src/object", source);
        byte[] head = bytes(partSize);
        ObjectStore.MultipartUpload upload = await(store.startMultipart("mp/copied"));
        uploadPart(upload, 1, head);
        await(upload.uploadPartCopy(2, "src/object", 100, partSize));
        await(upload.uploadPartCopy(3, "src/object", partSize + 10, 4000));
        await(upload.complete());
        byte[] expected = concat(head, Arrays.copyOfRange(source, 100, 100 + partSize),
                Arrays.copyOfRange(source, partSize + 10, partSize + 4010));
        assertThat(getBytes("mp/copied")).isEqualTo(expected);
        assertThat(getBytes("src/object")).as("source untouched").isEqualTo(source);
    }

    @Test
    void uploadPartCopyOfTheWholeObject() {
        byte[] source = bytes(3000);
        put("src/whole", source);
        ObjectStore.MultipartUpload upload = await(store.startMultipart("mp/whole-copy"));
        await(upload.uploadPartCopy(1, "src/whole", 0, source.length));
        await(upload.complete());
        assertThat(getBytes("mp/whole-copy")).isEqualTo(source);
    }

    @Test
    void uploadPartCopyOfAMissingSourceFails() {
        ObjectStore.MultipartUpload upload = await(store.startMultipart("mp/copy-missing"));
        try {
            assertThat(failure(upload.uploadPartCopy(1, "src/missing", 0, 10)))
                    .isInstanceOf(ObjectNotFoundException.class);
        } finally {
            await(upload.abort());
        }
    }

    // --------------------------------------------------------------------------------------------------------------
    // keys

    @Test
    void keysWithManySegments() {
        String key = "s0/s1/s2/s3/s4/s5/s6/s7/s8/s9/s10/s11/s12/s13/s14/s15/leaf";
        byte[] payload = bytes(99);
        put(key, payload);
        put("s0/s1/other", bytes(1));
        assertThat(getBytes(key)).isEqualTo(payload);
        assertThat(listKeys("s0/s1/s2/")).containsExactly(key);
        assertThat(listKeys("s0/")).containsExactly("s0/s1/other", key);
        await(store.delete(List.of(key)));
        assertThat(listKeys("s0/")).containsExactly("s0/s1/other");
    }

    @Test
    void keysWithUnusualCharacters() {
        List<String> keys = List.of("u/with space", "u/with-dash_and.dot", "u/\u00e9t\u00e9", "u/\uD83D\uDE00",
                "u/\uFF21", "u/per%cent", "u/a%41", "u/line\nbreak");
        for (String key : keys) {
            put(key, key.getBytes(StandardCharsets.UTF_8));
        }
        for (String key : keys) {
            assertThat(getBytes(key)).isEqualTo(key.getBytes(StandardCharsets.UTF_8));
        }
        // S3 lists in UTF-8 byte order: U+FF21 sorts before U+1F600 although its UTF-16 unit is larger.
        assertThat(listKeys("u/")).containsExactly("u/a%41", "u/line\nbreak", "u/per%cent", "u/with space",
                "u/with-dash_and.dot", "u/\u00e9t\u00e9", "u/\uFF21", "u/\uD83D\uDE00");
        assertThat(listKeys("u/\u00e9")).containsExactly("u/\u00e9t\u00e9");
    }

    @Test
    void dataKeysRoundTrip() {
        List<String> keys = new ArrayList<>();
        for (long id = 0; id < 40; id++) {
            String key = ObjectKeys.dataKey(id * 7919);
            keys.add(key);
            put(key, Long.toString(id).getBytes(StandardCharsets.UTF_8));
        }
        for (int i = 0; i < keys.size(); i++) {
            assertThat(new String(getBytes(keys.get(i)), StandardCharsets.UTF_8)).isEqualTo(Integer.toString(i));
        }
        List<String> sorted = new ArrayList<>(keys);
        Collections.sort(sorted); // ASCII keys: String order is byte order
        assertThat(listKeys("data/")).containsExactlyElementsOf(sorted);
        await(store.delete(keys));
        assertThat(listKeys("data/")).isEmpty();
    }

    @Test
    void descriptionIsNotBlank() {
        assertThat(store.description()).isNotBlank();
        assertThat(store.minPartSizeBytes()).isPositive();
    }

    // --------------------------------------------------------------------------------------------------------------
    // helpers (protected: backend-specific tests reuse them)

    /** Deterministic pseudo-random bytes. */
    protected byte[] bytes(int length) {
        byte[] bytes = new byte[length];
        random.nextBytes(bytes);
        return bytes;
    }

    protected void put(String key, byte[] payload) {
        ByteBuf data = Unpooled.wrappedBuffer(payload);
        try {
            await(store.put(key, data));
        } finally {
            data.release();
        }
    }

    protected boolean putIfAbsent(String key, byte[] payload) {
        ByteBuf data = Unpooled.wrappedBuffer(payload);
        try {
            return await(store.putIfAbsent(key, data));
        } finally {
            data.release();
        }
    }

    protected static void uploadPart(ObjectStore.MultipartUpload upload, int partNumber, byte[] payload) {
        ByteBuf data = Unpooled.wrappedBuffer(payload);
        try {
            await(upload.uploadPart(partNumber, data));
        } finally {
            data.release();
        }
    }

    protected byte[] getBytes(String key) {
        return drain(await(store.get(key)));
    }

    protected byte[] getBytes(String key, long position, int length) {
        return drain(await(store.get(key, position, length)));
    }

    protected List<String> listKeys(String prefix) {
        return await(store.list(prefix)).stream().map(ObjectInfo::key).toList();
    }

    /** Copies a buffer's readable bytes and releases it. */
    protected static byte[] drain(ByteBuf buf) {
        try {
            byte[] bytes = new byte[buf.readableBytes()];
            buf.getBytes(buf.readerIndex(), bytes);
            return bytes;
        } finally {
            buf.release();
        }
    }

    protected static byte[] concat(byte[]... parts) {
        int total = 0;
        for (byte[] part : parts) {
            total += part.length;
        }
        byte[] all = new byte[total];
        int at = 0;
        for (byte[] part : parts) {
            System.arraycopy(part, 0, all, at, part.length);
            at += part.length;
        }
        return all;
    }

    /** Waits for a future, failing the test after {@link #TIMEOUT_SECONDS}; rethrows its failure unwrapped. */
    protected static <T> T await(CompletableFuture<T> future) {
        try {
            return future.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new AssertionError(e.getCause());
        } catch (TimeoutException e) {
            throw new AssertionError("store operation did not complete within " + TIMEOUT_SECONDS + " s", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Waits for a future that must fail and returns its failure; a buffer it returns after all is released. */
    protected static Throwable failure(CompletableFuture<?> future) {
        try {
            Object value = future.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            if (value instanceof ByteBuf buf) {
                buf.release();
            } else if (value instanceof List<?> list) {
                list.forEach(v -> {
                    if (v instanceof ByteBuf buf) {
                        buf.release();
                    }
                });
            }
            return fail("expected a failure, got " + value);
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (TimeoutException e) {
            throw new AssertionError("store operation did not complete within " + TIMEOUT_SECONDS + " s", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
