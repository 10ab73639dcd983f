package io.s3stream.testing;

import io.s3stream.NodeFencedException;
import io.s3stream.StreamFencedException;
import io.s3stream.StreamNotFoundException;
import io.s3stream.StreamOptions;
import io.s3stream.spi.CommitRequest.NewObject;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.MetadataConflictException;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.NodeMetadata;
import io.s3stream.spi.ObjectKeys;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamMetadata;
import io.s3stream.spi.StreamRange;
import io.s3stream.spi.StreamState;
import io.s3stream.spi.WalContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The contract of {@link MetadataStore}, run against every implementation: a subclass supplies a fresh, empty store
 * driven by the given clock. The rules checked here are spelled out in the Javadoc of
 * {@code io.s3stream.internal.metadata.InMemoryMetadataStore}, the reference implementation.
 *
 * <p>Tests never assume concrete id values (only that they increase), so stores that number from elsewhere pass.
 */
public abstract class MetadataStoreContractTest {

    /** Node ids chosen so that a message naming one cannot match by accident. */
    protected static final long NODE_A = 101;
    protected static final long NODE_B = 202;
    protected static final Duration TTL = Duration.ofMinutes(10);
    private static final long TIMEOUT_SECONDS = 30;

    protected ManualClock clock;
    protected MetadataStore store;
    /** Node epochs of {@link #NODE_A} and {@link #NODE_B}, registered before each test. */
    protected long epochA;
    protected long epochB;

    /** A new, empty store whose time is {@code clock}. */
    protected abstract MetadataStore createStore(InstantSource clock) throws Exception;

    /**
     * Commits per writer in {@code Concurrency.parallelUploadsAndTrimsEndInTheSerialState} (8 writers and a trimmer);
     * must be even. A store on a real server, where each commit is several network round trips, may lower it to keep
     * the case within a test's time; the assertions do not change.
     */
    protected int concurrencyUploadsPerWriter() {
        return 200;
    }

    @BeforeEach
    void setUpStore() throws Exception {
        clock = new ManualClock();
        store = createStore(clock);
        epochA = join(store.registerNode(NODE_A));
        epochB = join(store.registerNode(NODE_B));
    }

    @AfterEach
    void closeStore() {
        if (store != null) {
            store.close();
        }
    }

    // ------------------------------------------------------------------------------------------------ helpers

    protected static <T> T join(CompletableFuture<T> future) {
        try {
            return future.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new AssertionError("call failed: " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        } catch (TimeoutException e) {
            throw new AssertionError("call did not complete within " + TIMEOUT_SECONDS + " s", e);
        }
    }

    /**
     * Asserts that {@code call} returns a future (it must not throw) that fails with {@code type}, whose message
     * contains every fragment.
     */
    protected static <E extends Throwable> E assertFails(Class<E> type, Supplier<CompletableFuture<?>> call,
                                                         String... fragments) {
        CompletableFuture<?> future;
        try {
            future = call.get();
        } catch (RuntimeException e) {
            throw new AssertionError("the call threw instead of failing its future", e);
        }
        assertNotNull(future, "the call returned no future");
        Throwable cause;
        try {
            Object value = future.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            throw new AssertionError("expected " + type.getSimpleName() + " but the call succeeded with " + value);
        } catch (ExecutionException e) {
            cause = e.getCause();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        } catch (TimeoutException e) {
            throw new AssertionError("call did not complete within " + TIMEOUT_SECONDS + " s", e);
        }
        E failure = assertInstanceOf(type, cause, () -> "wrong failure: " + cause);
        for (String fragment : fragments) {
            String message = String.valueOf(failure.getMessage());
            assertTrue(message.contains(fragment), () -> "message \"" + message + "\" lacks \"" + fragment + "\"");
        }
        return failure;
    }

    protected static StreamRange range(long streamId, long epoch, long start, long end) {
        return new StreamRange(streamId, epoch, start, end);
    }

    protected static NewObject streamObject(long objectId, StreamRange range) {
        return new NewObject(objectId, ObjectType.STREAM, 100, List.of(range));
    }

    protected static NewObject streamSetObject(long objectId, StreamRange... ranges) {
        return new NewObject(objectId, ObjectType.STREAM_SET, 100, List.of(ranges));
    }

    protected CommitRequest upload(NewObject... objects) {
        return new CommitRequest(NODE_A, epochA, List.of(objects), List.of());
    }

    protected CommitRequest compaction(List<Long> inputs, NewObject... outputs) {
        return new CommitRequest(NODE_A, epochA, List.of(outputs), inputs);
    }

    protected StreamMetadata createStream() {
        return join(store.createStream(NODE_A, epochA, StreamOptions.defaults()));
    }

    protected long prepare() {
        return join(store.prepareObjects(1, TTL));
    }

    /** Prepares and commits a stream object holding {@code range}; returns its id. */
    protected long commitStreamObject(StreamRange range) {
        long id = prepare();
        join(store.commitObjects(upload(streamObject(id, range))));
        return id;
    }

    /** Prepares and commits a stream set object holding {@code ranges}; returns its id. */
    protected long commitStreamSetObject(StreamRange... ranges) {
        long id = prepare();
        join(store.commitObjects(upload(streamSetObject(id, ranges))));
        return id;
    }

    /**
     * A deleted stream is unknown to {@code getStream} (the built-in stores forget it) or, in a store that keeps
     * history, reported {@code DELETED} with no owner.
     */
    protected void assertDeleted(long streamId) {
        Optional<StreamMetadata> s = join(store.getStream(streamId));
        s.ifPresent(m -> {
            assertEquals(StreamState.DELETED, m.state(), "stream " + streamId + " after its deletion");
            assertEquals(-1, m.ownerNodeId());
        });
    }

    protected StreamMetadata stream(long streamId) {
        return join(store.getStream(streamId)).orElseThrow(() -> new AssertionError("no stream " + streamId));
    }

    protected ObjectMetadata object(long objectId) {
        for (ObjectMetadata o : join(store.listObjects())) {
            if (o.objectId() == objectId) {
                return o;
            }
        }
        throw new AssertionError("object " + objectId + " is not listed");
    }

    protected ObjectState state(long objectId) {
        return object(objectId).state();
    }

    protected List<Long> objectIds(long streamId, long start, long end, int limit) {
        return join(store.getObjects(streamId, start, end, limit)).stream().map(ObjectMetadata::objectId).toList();
    }

    protected List<Long> ids(ObjectState... states) {
        return join(store.listObjects(states)).stream().map(ObjectMetadata::objectId).toList();
    }

    // ------------------------------------------------------------------------------------------------ nodes

    /** Node registration and node-epoch fencing. */
    @Nested
    class Nodes {

        @Test
        void nodeEpochsStartAtOneAndStrictlyIncreasePerNode() {
            long c1 = join(store.registerNode(303));
            long c2 = join(store.registerNode(303));
            long c3 = join(store.registerNode(303));
            assertTrue(c1 >= 1, "first node epoch " + c1);
            assertTrue(c1 < c2 && c2 < c3, c1 + ", " + c2 + ", " + c3);
            assertTrue(epochA >= 1 && epochB >= 1);
        }

        @Test
        void staleNodeEpochIsFencedOnEveryCallThatCarriesIt() {
            StreamMetadata s = createStream();
            long newer = join(store.registerNode(NODE_A));
            long id = prepare();
            assertFails(NodeFencedException.class,
                    () -> store.createStream(NODE_A, epochA, StreamOptions.defaults()), "" + NODE_A, "" + newer);
            assertFails(NodeFencedException.class,
                    () -> store.openStream(s.streamId(), 1, NODE_A, epochA), "" + NODE_A, "" + newer);
            assertFails(NodeFencedException.class,
                    () -> store.closeStream(s.streamId(), 0, NODE_A, epochA), "" + NODE_A, "" + newer);
            assertFails(NodeFencedException.class,
                    () -> store.commitObjects(upload(streamObject(id, range(s.streamId(), 0, 0, 10)))),
                    "" + NODE_A, "" + newer);
            assertEquals(s, stream(s.streamId()));
            assertEquals(ObjectState.PREPARED, state(id));
            // The new instance works.
            join(store.commitObjects(new CommitRequest(NODE_A, newer,
                    List.of(streamObject(id, range(s.streamId(), 0, 0, 10))), List.of())));
            assertEquals(10, stream(s.streamId()).endOffset());
        }

        @Test
        void aConditionalRegistrationFencesOnlyTheInstanceItNames() {
            long takenOver = join(store.registerNode(NODE_A, epochA)); // the instance judged dead is fenced
            assertTrue(takenOver > epochA);
            // A second survivor judging the same instance dead finds it fenced already: refused, nothing changes.
            assertFails(MetadataConflictException.class, () -> store.registerNode(NODE_A, epochA), "" + NODE_A,
                    "" + takenOver);
            long restarted = join(store.registerNode(NODE_A)); // the node restarts
            assertFails(MetadataConflictException.class, () -> store.registerNode(NODE_A, takenOver), "" + restarted);
            assertEquals(restarted, join(store.getNode(NODE_A)).orElseThrow().nodeEpoch());
            assertFails(MetadataConflictException.class, () -> store.registerNode(404_404, 1), "never registered");
            assertTrue(join(store.getNode(404_404)).isEmpty());
        }

        @Test
        void unregisteredNodeAndUnissuedNodeEpochFail() {
            assertFails(MetadataConflictException.class,
                    () -> store.createStream(404, 1, StreamOptions.defaults()), "404");
            assertFails(MetadataConflictException.class,
                    () -> store.createStream(NODE_A, epochA + 1, StreamOptions.defaults()), "" + NODE_A);
            assertTrue(join(store.listStreams()).isEmpty());
        }
    }

    // ------------------------------------------------------------------------------------------------ streams

    /** Stream creation, opening, closing and listing, with stream fencing. */
    @Nested
    class Streams {

        @Test
        void createStreamOpensAtEpochZeroWithItsStartOffsetAndTags() {
            StreamMetadata a = join(store.createStream(NODE_A, epochA,
                    StreamOptions.builder().startOffset(1000).tags(Map.of("topic", "t-0")).build()));
            StreamMetadata b = createStream();
            assertTrue(b.streamId() > a.streamId(), "ids increase");
            assertEquals(0, a.epoch());
            assertEquals(StreamState.OPENED, a.state());
            assertEquals(NODE_A, a.ownerNodeId());
            assertEquals(1000, a.startOffset());
            assertEquals(1000, a.endOffset());
            assertEquals(Map.of("topic", "t-0"), a.tags());
            assertEquals(a, stream(a.streamId()));
            assertEquals(List.of(a, b), join(store.listStreams()));
        }

        @Test
        void openUnknownOrDeletedStreamIsNotFound() {
            assertFails(StreamNotFoundException.class, () -> store.openStream(987_654, 0, NODE_A, epochA), "987654");
            StreamMetadata s = createStream();
            join(store.deleteStream(s.streamId(), 0));
            assertFails(StreamNotFoundException.class, () -> store.openStream(s.streamId(), 1, NODE_A, epochA));
        }

        @Test
        void openWithOlderEpochIsFencedNamingTheCurrentEpoch() {
            StreamMetadata s = createStream();
            join(store.openStream(s.streamId(), 7, NODE_A, epochA));
            assertFails(StreamFencedException.class, () -> store.openStream(s.streamId(), 6, NODE_A, epochA), "7");
            assertEquals(7, stream(s.streamId()).epoch());
        }

        @Test
        void openHeldByAnotherNodeIsFencedNamingTheHolderUntilItCloses() {
            StreamMetadata s = createStream();
            assertFails(StreamFencedException.class, () -> store.openStream(s.streamId(), 5, NODE_B, epochB),
                    "node " + NODE_A);
            StreamMetadata unchanged = stream(s.streamId());
            assertEquals(NODE_A, unchanged.ownerNodeId());
            assertEquals(0, unchanged.epoch());

            StreamMetadata closed = join(store.closeStream(s.streamId(), 0, NODE_A, epochA));
            assertEquals(StreamState.CLOSED, closed.state());
            assertEquals(-1, closed.ownerNodeId());

            StreamMetadata opened = join(store.openStream(s.streamId(), 5, NODE_B, epochB));
            assertEquals(StreamState.OPENED, opened.state());
            assertEquals(NODE_B, opened.ownerNodeId());
            assertEquals(5, opened.epoch());
            assertEquals(opened, stream(s.streamId()));
        }

        @Test
        void reopenBySameNodeAfterRestartSucceedsAtEqualOrHigherEpoch() {
            StreamMetadata s = createStream();
            long restarted = join(store.registerNode(NODE_A));
            StreamMetadata same = join(store.openStream(s.streamId(), 0, NODE_A, restarted));
            assertEquals(0, same.epoch());
            StreamMetadata higher = join(store.openStream(s.streamId(), 3, NODE_A, restarted));
            assertEquals(3, higher.epoch());
            assertEquals(NODE_A, higher.ownerNodeId());
            assertEquals(StreamState.OPENED, higher.state());
        }

        @Test
        void closedStreamReopensAtTheSameEpoch() {
            StreamMetadata s = createStream();
            join(store.closeStream(s.streamId(), 0, NODE_A, epochA));
            StreamMetadata opened = join(store.openStream(s.streamId(), 0, NODE_B, epochB));
            assertEquals(NODE_B, opened.ownerNodeId());
            assertEquals(0, opened.epoch());
        }

        @Test
        void onlyTheOwnerAtTheCurrentEpochCloses() {
            StreamMetadata s = createStream();
            join(store.openStream(s.streamId(), 4, NODE_A, epochA));
            assertFails(StreamFencedException.class, () -> store.closeStream(s.streamId(), 4, NODE_B, epochB),
                    "node " + NODE_A);
            assertFails(StreamFencedException.class, () -> store.closeStream(s.streamId(), 3, NODE_A, epochA), "4");
            assertFails(MetadataConflictException.class, () -> store.closeStream(s.streamId(), 5, NODE_A, epochA));
            assertEquals(StreamState.OPENED, stream(s.streamId()).state());
            assertFails(StreamNotFoundException.class, () -> store.closeStream(987_654, 0, NODE_A, epochA));

            StreamMetadata closed = join(store.closeStream(s.streamId(), 4, NODE_A, epochA));
            assertEquals(StreamState.CLOSED, closed.state());
            assertEquals(-1, closed.ownerNodeId());
            assertEquals(4, closed.epoch());
            // A retried close is harmless.
            assertEquals(closed, join(store.closeStream(s.streamId(), 4, NODE_A, epochA)));
        }

        @Test
        void takeoverRegistersAsTheDeadNodeToCloseItsStreams() {
            StreamMetadata s = createStream();
            long takeover = join(store.registerNode(NODE_A)); // fences the dead instance of NODE_A
            join(store.closeStream(s.streamId(), 0, NODE_A, takeover));
            assertEquals(NODE_B, join(store.openStream(s.streamId(), 1, NODE_B, epochB)).ownerNodeId());
        }

        @Test
        void listStreamsExcludesDeletedStreamsInIdOrder() {
            StreamMetadata a = createStream();
            StreamMetadata b = createStream();
            StreamMetadata c = createStream();
            join(store.deleteStream(b.streamId(), 0));
            assertEquals(List.of(a.streamId(), c.streamId()),
                    join(store.listStreams()).stream().map(StreamMetadata::streamId).toList());
            assertDeleted(b.streamId());
            assertEquals(Optional.empty(), join(store.getStream(987_654)));
        }
    }

    // ------------------------------------------------------------------------------------------------ trim and delete

    /** Trims and deletions, and the objects they kill. */
    @Nested
    class TrimAndDelete {

        @Test
        void trimMarksStreamObjectsWhollyBelowTheNewStart() {
            long s = createStream().streamId();
            long o1 = commitStreamObject(range(s, 0, 0, 10));
            long o2 = commitStreamObject(range(s, 0, 10, 20));
            long o3 = commitStreamObject(range(s, 0, 20, 30));

            StreamMetadata trimmed = join(store.trimStream(s, 0, 15));
            assertEquals(15, trimmed.startOffset());
            assertEquals(30, trimmed.endOffset());
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(o1));
            assertEquals(ObjectState.COMMITTED, state(o2), "straddles the new start");
            assertEquals(ObjectState.COMMITTED, state(o3));
            assertEquals(List.of(o2, o3), objectIds(s, 0, 100, 100));

            join(store.trimStream(s, 0, 20)); // end == new start: dead
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(o2));
            assertEquals(List.of(o3), objectIds(s, 0, 100, 100));
        }

        @Test
        void trimBackwardsIsANoOp() {
            long s = createStream().streamId();
            commitStreamObject(range(s, 0, 0, 10));
            join(store.trimStream(s, 0, 8));
            StreamMetadata after = join(store.trimStream(s, 0, 3));
            assertEquals(8, after.startOffset());
            assertEquals(8, stream(s).startOffset());
        }

        @Test
        void trimChecksTheEpochAndTheStream() {
            long s = createStream().streamId();
            join(store.openStream(s, 3, NODE_A, epochA));
            assertFails(StreamFencedException.class, () -> store.trimStream(s, 2, 5), "3");
            assertFails(MetadataConflictException.class, () -> store.trimStream(s, 4, 5));
            assertFails(StreamNotFoundException.class, () -> store.trimStream(987_654, 0, 5));
            assertEquals(0, stream(s).startOffset());
            join(store.deleteStream(s, 3));
            assertFails(StreamNotFoundException.class, () -> store.trimStream(s, 3, 5));
        }

        @Test
        void trimOfAClosedStreamWorks() {
            long s = createStream().streamId();
            commitStreamObject(range(s, 0, 0, 10));
            join(store.closeStream(s, 0, NODE_A, epochA));
            assertEquals(6, join(store.trimStream(s, 0, 6)).startOffset());
        }

        @Test
        void trimMayPassTheEndOffsetAndLaterUploadsBelowTheStartAreDeadOnArrival() {
            long s = createStream().streamId();
            commitStreamObject(range(s, 0, 0, 30));
            StreamMetadata trimmed = join(store.trimStream(s, 0, 50));
            assertEquals(50, trimmed.startOffset());
            assertEquals(30, trimmed.endOffset());

            long below = commitStreamObject(range(s, 0, 30, 40));
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(below));
            assertEquals(40, stream(s).endOffset());
            long straddling = commitStreamObject(range(s, 0, 40, 60));
            assertEquals(ObjectState.COMMITTED, state(straddling));
            assertEquals(60, stream(s).endOffset());
            assertEquals(List.of(straddling), objectIds(s, 0, 100, 100));
        }

        @Test
        void aGapIsAcceptedOnlyWhereItLiesWhollyBelowTheStartOffset() {
            long s = createStream().streamId();
            commitStreamObject(range(s, 0, 0, 30));
            join(store.trimStream(s, 0, 50));
            long id = prepare();
            // [30, 51) would hide offset 50, which is readable.
            assertFails(MetadataConflictException.class,
                    () -> store.commitObjects(upload(streamObject(id, range(s, 0, 51, 60)))), "gap");
            assertEquals(30, stream(s).endOffset());
            // The trimmed prefix [30, 45) was never uploaded: the range after it is accepted and live.
            long after = commitStreamObject(range(s, 0, 45, 60));
            assertEquals(ObjectState.COMMITTED, state(after));
            assertEquals(60, stream(s).endOffset());
            assertEquals(List.of(after), objectIds(s, 50, 60, 100));
            // Past the start offset, continuity is exact again.
            long next = prepare();
            assertFails(MetadataConflictException.class,
                    () -> store.commitObjects(upload(streamObject(next, range(s, 0, 61, 70)))), "gap");
            // A range may also start exactly at the start offset.
            long t = createStream().streamId();
            join(store.trimStream(t, 0, 20));
            commitStreamObject(range(t, 0, 20, 25));
            assertEquals(25, stream(t).endOffset());
        }

        @Test
        void streamSetObjectDiesOnlyWhenEveryRangeIsDead() {
            long s1 = createStream().streamId();
            long s2 = createStream().streamId();
            long s3 = createStream().streamId();
            long sso = commitStreamSetObject(range(s1, 0, 0, 10), range(s2, 0, 0, 10), range(s3, 0, 0, 10));

            join(store.trimStream(s1, 0, 10));
            assertEquals(ObjectState.COMMITTED, state(sso));
            assertEquals(List.of(), objectIds(s1, 0, 10, 10), "trimmed range is not read");
            assertEquals(List.of(sso), objectIds(s2, 0, 10, 10));

            join(store.deleteStream(s2, 0));
            assertEquals(ObjectState.COMMITTED, state(sso));
            join(store.trimStream(s3, 0, 9));
            assertEquals(ObjectState.COMMITTED, state(sso));
            join(store.trimStream(s3, 0, 10));
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(sso));
            assertEquals(List.of(), objectIds(s3, 0, 10, 10));
        }

        @Test
        void deleteStreamNeedsAnEpochAtLeastTheCurrentAndKillsItsObjects() {
            long s1 = createStream().streamId();
            long s2 = createStream().streamId();
            join(store.openStream(s1, 2, NODE_A, epochA));
            long so = commitStreamObject(range(s1, 2, 0, 10));
            long sso = commitStreamSetObject(range(s1, 2, 10, 20), range(s2, 0, 0, 5));

            assertFails(StreamFencedException.class, () -> store.deleteStream(s1, 1), "2");
            assertEquals(StreamState.OPENED, stream(s1).state());
            assertEquals(ObjectState.COMMITTED, state(so));

            join(store.deleteStream(s1, 2));
            assertDeleted(s1);
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(so));
            assertEquals(ObjectState.COMMITTED, state(sso), "s2 still lives in it");
            assertEquals(List.of(), objectIds(s1, 0, 100, 10));
            assertEquals(List.of(sso), objectIds(s2, 0, 100, 10));
            assertFails(StreamNotFoundException.class, () -> store.deleteStream(s1, 2), "was deleted");
            assertFails(StreamNotFoundException.class, () -> store.openStream(s1, 3, NODE_A, epochA), "was deleted");
            assertFails(StreamNotFoundException.class, () -> store.deleteStream(987_654, 0), "does not exist");

            join(store.deleteStream(s2, 9)); // a higher epoch deletes too, whoever holds it
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(sso));
            assertTrue(join(store.listStreams()).isEmpty());
        }

        @Test
        void uploadForAStreamDeletedMeanwhileIsAcceptedAsGarbage() {
            long live = createStream().streamId();
            long gone = createStream().streamId();
            commitStreamObject(range(gone, 0, 0, 10));
            join(store.deleteStream(gone, 0));

            long so = prepare();
            long sso = prepare();
            // Not even continuity is checked for the deleted stream: its data is garbage.
            join(store.commitObjects(upload(streamObject(so, range(gone, 0, 50, 60)),
                    streamSetObject(sso, range(live, 0, 0, 10), range(gone, 0, 60, 70)))));
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(so));
            assertEquals(ObjectState.COMMITTED, state(sso));
            assertEquals(10, stream(live).endOffset());
            assertEquals(List.of(sso), objectIds(live, 0, 10, 10));
            assertEquals(List.of(), objectIds(gone, 0, 100, 10));
        }
    }

    // ------------------------------------------------------------------------------------------------ prepare and commit

    /** Object id reservation and expiry, and the checks and atomicity of uploads. */
    @Nested
    class PrepareAndCommit {

        @Test
        void prepareReservesConsecutiveIds() {
            long first = join(store.prepareObjects(3, TTL));
            long next = join(store.prepareObjects(2, TTL));
            assertTrue(next >= first + 3, first + " then " + next);
            assertEquals(List.of(first, first + 1, first + 2, next, next + 1), ids(ObjectState.PREPARED));
        }

        @Test
        void expiredPreparedIdsAreMarkedAndCannotBeCommitted() {
            long s = createStream().streamId();
            long shortLived = join(store.prepareObjects(1, Duration.ofMinutes(1)));
            long longLived = join(store.prepareObjects(1, Duration.ofMinutes(5)));
            clock.advance(Duration.ofSeconds(59));
            assertEquals(List.of(shortLived, longLived), ids(ObjectState.PREPARED));

            clock.advance(Duration.ofSeconds(2));
            assertEquals(List.of(shortLived), ids(ObjectState.MARKED_FOR_DELETION));
            assertEquals(List.of(longLived), ids(ObjectState.PREPARED));
            assertFails(MetadataConflictException.class,
                    () -> store.commitObjects(upload(streamObject(shortLived, range(s, 0, 0, 10)))),
                    "" + shortLived, "expired");
            // Atomic: the valid object of a request holding an expired one is not committed either.
            assertFails(MetadataConflictException.class, () -> store.commitObjects(upload(
                    streamObject(longLived, range(s, 0, 0, 10)), streamObject(shortLived, range(s, 0, 10, 20)))));
            assertEquals(ObjectState.PREPARED, state(longLived));
            assertEquals(0, stream(s).endOffset());
            join(store.commitObjects(upload(streamObject(longLived, range(s, 0, 0, 10)))));
            assertEquals(ObjectState.COMMITTED, state(longLived));
        }

        @Test
        void expiryIsCheckedLazilyOnAnyCall() {
            long id = join(store.prepareObjects(1, Duration.ofSeconds(1)));
            clock.advance(Duration.ofSeconds(5));
            long s = createStream().streamId(); // any call
            assertFails(MetadataConflictException.class,
                    () -> store.commitObjects(upload(streamObject(id, range(s, 0, 0, 10)))), "" + id);
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(id));
        }

        @Test
        void unknownAndDoublyCommittedIdsAreRejected() {
            long s = createStream().streamId();
            long id = commitStreamObject(range(s, 0, 0, 10));
            assertFails(MetadataConflictException.class,
                    () -> store.commitObjects(upload(streamObject(id, range(s, 0, 10, 20)))), "" + id);
            long unknown = id + 1_000_000;
            assertFails(MetadataConflictException.class,
                    () -> store.commitObjects(upload(streamObject(unknown, range(s, 0, 10, 20)))), "" + unknown);
            long twice = prepare();
            assertFails(MetadataConflictException.class, () -> store.commitObjects(upload(
                    streamObject(twice, range(s, 0, 10, 20)), streamObject(twice, range(s, 0, 20, 30)))));
            assertEquals(10, stream(s).endOffset());
            assertEquals(ObjectState.PREPARED, state(twice));
        }

        @Test
        void uploadCommitsStreamSetAndStreamObjectsAndMovesEndOffsets() {
            long s1 = createStream().streamId();
            long s2 = join(store.createStream(NODE_A, epochA,
                    StreamOptions.builder().startOffset(100).build())).streamId();
            long sso = prepare();
            long so = prepare();
            clock.advance(Duration.ofSeconds(3));
            join(store.commitObjects(upload(
                    streamSetObject(sso, range(s1, 0, 0, 10), range(s2, 0, 100, 105)),
                    streamObject(so, range(s2, 0, 105, 200)))));

            assertEquals(10, stream(s1).endOffset());
            assertEquals(200, stream(s2).endOffset());
            assertEquals(100, stream(s2).startOffset());
            ObjectMetadata committed = object(sso);
            assertEquals(ObjectState.COMMITTED, committed.state());
            assertEquals(ObjectType.STREAM_SET, committed.type());
            assertEquals(NODE_A, committed.nodeId());
            assertEquals(clock.millis(), committed.committedAtMs());
            assertEquals(List.of(range(s1, 0, 0, 10), range(s2, 0, 100, 105)), committed.ranges());
            assertEquals(List.of(sso, so), objectIds(s2, 100, 200, 10));
            assertEquals(List.of(sso), objectIds(s1, 0, 10, 10));
        }

        @Test
        void rangesOfOneStreamAreSortedAcrossObjectsBeforeTheContinuityCheck() {
            long s = createStream().streamId();
            long so = prepare();
            long sso = prepare();
            join(store.commitObjects(upload(streamObject(so, range(s, 0, 10, 20)),
                    streamSetObject(sso, range(s, 0, 0, 10)))));
            assertEquals(20, stream(s).endOffset());
            assertEquals(List.of(sso, so), objectIds(s, 0, 20, 10));
        }

        @Test
        void firstUploadMustStartAtTheStreamsStartOffset() {
            long s = join(store.createStream(NODE_A, epochA,
                    StreamOptions.builder().startOffset(100).build())).streamId();
            long id = prepare();
            assertFails(MetadataConflictException.class,
                    () -> store.commitObjects(upload(streamObject(id, range(s, 0, 0, 10)))), "100");
            join(store.commitObjects(upload(streamObject(id, range(s, 0, 100, 110)))));
            assertEquals(110, stream(s).endOffset());
        }

        @Test
        void gapsAndOverlapsAreRejected() {
            long s = createStream().streamId();
            commitStreamObject(range(s, 0, 0, 10));
            long id = prepare();
            long id2 = prepare();
            assertFails(MetadataConflictException.class,
                    () -> store.commitObjects(upload(streamObject(id, range(s, 0, 12, 20)))), "gap");
            assertFails(MetadataConflictException.class,
                    () -> store.commitObjects(upload(streamObject(id, range(s, 0, 5, 20)))), "overlap");
            assertFails(MetadataConflictException.class, () -> store.commitObjects(upload(
                    streamObject(id, range(s, 0, 10, 20)), streamObject(id2, range(s, 0, 15, 25)))));
            assertFails(MetadataConflictException.class, () -> store.commitObjects(upload(
                    streamObject(id, range(s, 0, 10, 20)), streamObject(id2, range(s, 0, 21, 25)))));
            assertFails(MetadataConflictException.class, () -> store.commitObjects(upload(
                    streamObject(id, range(s, 0, 10, 20)), streamObject(id2, range(s, 0, 10, 20)))));
            assertEquals(10, stream(s).endOffset());
            assertEquals(List.of(id, id2), ids(ObjectState.PREPARED));
        }

        @Test
        void staleRangeEpochIsFencedAndNewerIsAConflict() {
            long s = createStream().streamId();
            join(store.openStream(s, 5, NODE_A, epochA));
            long id = prepare();
            assertFails(StreamFencedException.class,
                    () -> store.commitObjects(upload(streamObject(id, range(s, 4, 0, 10)))), "5");
            assertFails(MetadataConflictException.class,
                    () -> store.commitObjects(upload(streamObject(id, range(s, 6, 0, 10)))));
            assertEquals(0, stream(s).endOffset());
            join(store.commitObjects(upload(streamObject(id, range(s, 5, 0, 10)))));
            assertEquals(10, stream(s).endOffset());
        }

        @Test
        void unknownStreamFailsTheWholeUpload() {
            long s = createStream().streamId();
            long id = prepare();
            assertFails(StreamNotFoundException.class, () -> store.commitObjects(upload(
                    streamSetObject(id, range(s, 0, 0, 10), range(987_654, 0, 0, 10)))), "987654");
            assertEquals(0, stream(s).endOffset());
            assertEquals(ObjectState.PREPARED, state(id));
        }

        @Test
        void uploadIsNotTiedToTheStreamsOwner() {
            // A node that took over another node's WAL uploads data of streams the other node holds open.
            long s = createStream().streamId();
            long id = prepare();
            join(store.commitObjects(new CommitRequest(NODE_B, epochB,
                    List.of(streamObject(id, range(s, 0, 0, 10))), List.of())));
            assertEquals(10, stream(s).endOffset());
            assertEquals(NODE_B, object(id).nodeId());
        }

        @Test
        void malformedObjectsAreRejected() {
            long s1 = createStream().streamId();
            long s2 = createStream().streamId();
            long a = prepare();
            long b = prepare();
            assertFails(MetadataConflictException.class, () -> store.commitObjects(upload(new NewObject(a,
                    ObjectType.STREAM, 1, List.of(range(s1, 0, 0, 10), range(s2, 0, 0, 10))))));
            assertFails(MetadataConflictException.class, () -> store.commitObjects(upload(
                    streamSetObject(a, range(s2, 0, 0, 10), range(s1, 0, 0, 10)))), "sorted");
            assertFails(MetadataConflictException.class, () -> store.commitObjects(upload(
                    streamSetObject(a, range(s1, 0, 0, 10), range(s1, 0, 10, 20)))));
            assertFails(MetadataConflictException.class, () -> store.commitObjects(upload(
                    new NewObject(a, ObjectType.STREAM_SET, 1, List.of()))));
            assertFails(MetadataConflictException.class, () -> store.commitObjects(upload(
                    streamSetObject(a, range(s1, 0, 0, 10)), streamSetObject(b, range(s2, 0, 0, 10)))),
                    "stream set");
            assertEquals(0, stream(s1).endOffset());
            assertEquals(0, stream(s2).endOffset());
            assertEquals(List.of(a, b), ids(ObjectState.PREPARED));
        }

        @Test
        void aMultiObjectRequestWithOneBadRangeChangesNothing() {
            long s1 = createStream().streamId();
            long s2 = createStream().streamId();
            long s3 = createStream().streamId();
            join(store.openStream(s3, 2, NODE_A, epochA));
            commitStreamObject(range(s1, 0, 0, 5));
            long sso = prepare();
            long so1 = prepare();
            long so2 = prepare();
            List<Long> ours = List.of(sso, so1, so2);

            // A gap in s2, after valid ranges of s1.
            assertFails(MetadataConflictException.class, () -> store.commitObjects(upload(
                    streamSetObject(sso, range(s1, 0, 5, 10), range(s2, 0, 0, 10)),
                    streamObject(so1, range(s1, 0, 10, 20)),
                    streamObject(so2, range(s2, 0, 11, 20)))));
            assertNothingChanged(s1, s2, s3, ours);

            // A stale epoch in s3: the fencing exception, and still nothing changes.
            assertFails(StreamFencedException.class, () -> store.commitObjects(upload(
                    streamSetObject(sso, range(s1, 0, 5, 10), range(s2, 0, 0, 10), range(s3, 1, 0, 10)),
                    streamObject(so1, range(s1, 0, 10, 20)))));
            assertNothingChanged(s1, s2, s3, ours);

            // The corrected request succeeds with the same ids.
            join(store.commitObjects(upload(
                    streamSetObject(sso, range(s1, 0, 5, 10), range(s2, 0, 0, 10), range(s3, 2, 0, 10)),
                    streamObject(so1, range(s1, 0, 10, 20)),
                    streamObject(so2, range(s2, 0, 10, 20)))));
            assertEquals(20, stream(s1).endOffset());
            assertEquals(20, stream(s2).endOffset());
            assertEquals(10, stream(s3).endOffset());
            for (long id : ours) {
                assertEquals(ObjectState.COMMITTED, state(id));
            }
        }

        private void assertNothingChanged(long s1, long s2, long s3, List<Long> prepared) {
            assertEquals(5, stream(s1).endOffset());
            assertEquals(0, stream(s2).endOffset());
            assertEquals(0, stream(s3).endOffset());
            for (long id : prepared) {
                assertEquals(ObjectState.PREPARED, state(id), "object " + id);
            }
            assertEquals(1, objectIds(s1, 0, 100, 100).size());
            assertEquals(List.of(), objectIds(s2, 0, 100, 100));
            assertEquals(List.of(), objectIds(s3, 0, 100, 100));
        }
    }

    // ------------------------------------------------------------------------------------------------ adoption

    /** Objects written outside the prepare/commit protocol (WAL segments) and the nodes' WAL positions. */
    @Nested
    class AdoptionAndWalPositions {

        @Test
        void adoptedObjectsGetFreshIdsKeepTheirKeysAndNeedNoPrepare() {
            long s = createStream().streamId();
            long before = prepare();
            join(store.commitObjects(new CommitRequest(NODE_A, epochA, List.of(
                    NewObject.adopted("wal/101/0000000000000001", 500, List.of(range(s, 0, 0, 10))),
                    NewObject.adopted("wal/101/0000000000000002", 400, List.of(range(s, 0, 10, 25)))),
                    List.of(), 7)));
            assertEquals(25, stream(s).endOffset());
            List<ObjectMetadata> objects = join(store.getObjects(s, 0, 25, 10));
            assertEquals(List.of("wal/101/0000000000000001", "wal/101/0000000000000002"),
                    objects.stream().map(ObjectMetadata::key).toList());
            assertTrue(objects.get(0).objectId() > before && objects.get(1).objectId() > objects.get(0).objectId(),
                    "adopted objects get fresh, increasing ids: " + objects);
            assertEquals(500, objects.get(0).sizeBytes());
            assertEquals(ObjectType.STREAM_SET, objects.get(0).type());
            assertEquals(ObjectKeys.dataKey(before), object(before).key(), "a prepared id keeps its data key");
        }

        @Test
        void severalAdoptedStreamSetObjectsMayJoinOnePreparedOne() {
            long s = createStream().streamId();
            long t = createStream().streamId();
            long sso = prepare();
            join(store.commitObjects(new CommitRequest(NODE_A, epochA, List.of(
                    NewObject.adopted("wal/101/a", 10, List.of(range(s, 0, 0, 5))),
                    NewObject.adopted("wal/101/b", 10, List.of(range(t, 0, 0, 5))),
                    streamSetObject(sso, range(s, 0, 5, 9))), List.of(), 3)));
            assertEquals(9, stream(s).endOffset());
            assertEquals(5, stream(t).endOffset());
        }

        @Test
        void anAdoptedObjectWithoutRangesIsMarkedForDeletionAtOnce() {
            join(store.commitObjects(new CommitRequest(NODE_A, epochA,
                    List.of(NewObject.adopted("wal/101/seal", 64, List.of())), List.of(), 2)));
            ObjectMetadata seal = join(store.listObjects(ObjectState.MARKED_FOR_DELETION)).stream()
                    .filter(o -> o.key().equals("wal/101/seal")).findFirst()
                    .orElseThrow(() -> new AssertionError("the empty adopted object is not marked for deletion"));
            assertEquals(List.of(), seal.ranges());
        }

        @Test
        void aKeyIsAdoptedOnceWhileTheManifestKnowsIt() {
            long s = createStream().streamId();
            join(store.commitObjects(new CommitRequest(NODE_A, epochA,
                    List.of(NewObject.adopted("wal/101/x", 10, List.of(range(s, 0, 0, 5)))), List.of(), 1)));
            assertFails(MetadataConflictException.class, () -> store.commitObjects(new CommitRequest(NODE_A, epochA,
                    List.of(NewObject.adopted("wal/101/x", 10, List.of(range(s, 0, 5, 6)))), List.of(), 2)),
                    "wal/101/x", "already adopted");
            assertFails(MetadataConflictException.class, () -> store.commitObjects(new CommitRequest(NODE_A, epochA,
                    List.of(NewObject.adopted("wal/101/y", 10, List.of(range(s, 0, 5, 6))),
                            NewObject.adopted("wal/101/y", 10, List.of())), List.of(), 2)), "twice");
            assertEquals(5, stream(s).endOffset());

            // Marked, still known: still refused. Deleted and forgotten: the key is free again (its bytes are gone,
            // so nothing the manifest references can be deleted by a second adoption).
            join(store.trimStream(s, 0, 5));
            long x = join(store.listObjects(ObjectState.MARKED_FOR_DELETION)).stream()
                    .filter(o -> o.key().equals("wal/101/x")).findFirst().orElseThrow().objectId();
            assertFails(MetadataConflictException.class, () -> store.commitObjects(new CommitRequest(NODE_A, epochA,
                    List.of(NewObject.adopted("wal/101/x", 10, List.of(range(s, 0, 5, 6)))), List.of(), 2)),
                    "already adopted");
            join(store.objectsDeleted(List.of(x)));
            join(store.commitObjects(new CommitRequest(NODE_A, epochA,
                    List.of(NewObject.adopted("wal/101/x", 10, List.of(range(s, 0, 5, 6)))), List.of(), 2)));
            assertEquals(6, stream(s).endOffset());
        }

        @Test
        void aCompactionCannotAdopt() {
            long s = createStream().streamId();
            long input = commitStreamSetObject(range(s, 0, 0, 10));
            assertFails(MetadataConflictException.class, () -> store.commitObjects(compaction(List.of(input),
                    NewObject.adopted("wal/101/z", 10, List.of(range(s, 0, 0, 10))))), "adopt");
        }

        @Test
        void anUploadRecordsTheNodesWalPositionWhichOnlyMovesForward() {
            assertEquals(WalContext.NO_POSITION, join(store.getNode(NODE_A)).orElseThrow().walCommittedPosition());
            long s = createStream().streamId();
            long id = prepare();
            join(store.commitObjects(new CommitRequest(NODE_A, epochA, List.of(streamSetObject(id, range(s, 0, 0, 5))),
                    List.of(), 4096)));
            assertEquals(4096, join(store.getNode(NODE_A)).orElseThrow().walCommittedPosition());
            long later = prepare();
            join(store.commitObjects(new CommitRequest(NODE_A, epochA,
                    List.of(streamSetObject(later, range(s, 0, 5, 6))), List.of(), 1024)));
            assertEquals(4096, join(store.getNode(NODE_A)).orElseThrow().walCommittedPosition(),
                    "a lower position never moves it back");
            assertEquals(WalContext.NO_POSITION, join(store.getNode(NODE_B)).orElseThrow().walCommittedPosition(),
                    "positions are per node");
        }

        @Test
        void aFencedNodesUploadRecordsNothing() {
            long s = createStream().streamId();
            long id = prepare();
            long newer = join(store.registerNode(NODE_A));
            assertFails(NodeFencedException.class, () -> store.commitObjects(new CommitRequest(NODE_A, epochA,
                    List.of(NewObject.adopted("wal/101/q", 10, List.of(range(s, 0, 0, 5)))), List.of(), 99)));
            assertEquals(WalContext.NO_POSITION, join(store.getNode(NODE_A)).orElseThrow().walCommittedPosition());
            assertEquals(newer, join(store.getNode(NODE_A)).orElseThrow().nodeEpoch());
            assertEquals(ObjectState.PREPARED, state(id));
        }

        @Test
        void nodesAreListedInIdOrderWithTheirEpochs() {
            long epochC = join(store.registerNode(50));
            List<NodeMetadata> nodes = join(store.listNodes());
            assertEquals(List.of(50L, NODE_A, NODE_B), nodes.stream().map(NodeMetadata::nodeId).toList());
            assertEquals(List.of(epochC, epochA, epochB), nodes.stream().map(NodeMetadata::nodeEpoch).toList());
            assertTrue(join(store.getNode(999)).isEmpty());
        }
    }

    // ------------------------------------------------------------------------------------------------ compaction

    /** Compaction commits: replacement, containment and coverage. */
    @Nested
    class Compaction {
        long s1;
        long s2;
        long sso1;
        long sso2;

        @BeforeEach
        void twoStreamSetObjects() {
            s1 = createStream().streamId();
            s2 = createStream().streamId();
            sso1 = commitStreamSetObject(range(s1, 0, 0, 10), range(s2, 0, 0, 5));
            sso2 = commitStreamSetObject(range(s1, 0, 10, 20), range(s2, 0, 5, 8));
        }

        @Test
        void compactionReplacesInputsByOutputsAtomically() {
            long so = prepare();
            long merged = prepare();
            join(store.commitObjects(compaction(List.of(sso1, sso2),
                    streamObject(so, range(s1, 0, 0, 20)), streamSetObject(merged, range(s2, 0, 0, 8)))));
            assertEquals(List.of(so), objectIds(s1, 0, 20, 10));
            assertEquals(List.of(merged), objectIds(s2, 0, 8, 10));
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(sso1));
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(sso2));
            assertEquals(ObjectState.COMMITTED, state(so));
            assertEquals(20, stream(s1).endOffset(), "compaction does not move end offsets");
            assertEquals(8, stream(s2).endOffset());
        }

        @Test
        void outputsMustCoverTheLiveInputData() {
            long so = prepare();
            long merged = prepare();
            assertFails(MetadataConflictException.class, () -> store.commitObjects(compaction(List.of(sso1, sso2),
                    streamObject(so, range(s1, 0, 0, 15)), streamSetObject(merged, range(s2, 0, 0, 8)))), "" + s1);
            assertFails(MetadataConflictException.class, () -> store.commitObjects(compaction(List.of(sso1, sso2),
                    streamObject(so, range(s1, 0, 0, 20)))), "" + s2);
            assertFails(MetadataConflictException.class, () -> store.commitObjects(compaction(List.of(sso1, sso2),
                    streamObject(so, range(s1, 0, 0, 10)), streamSetObject(merged, range(s2, 0, 0, 8)))));
            assertCompactionChangedNothing(so, merged);
        }

        @Test
        void outputsMustNotHoldDataOutsideTheInputs() {
            long so = prepare();
            long merged = prepare();
            assertFails(MetadataConflictException.class, () -> store.commitObjects(compaction(List.of(sso1, sso2),
                    streamObject(so, range(s1, 0, 0, 25)), streamSetObject(merged, range(s2, 0, 0, 8)))));
            long s3 = createStream().streamId();
            assertFails(MetadataConflictException.class, () -> store.commitObjects(compaction(List.of(sso1, sso2),
                    streamObject(so, range(s1, 0, 0, 20)),
                    streamSetObject(merged, range(s2, 0, 0, 8), range(s3, 0, 0, 1)))));
            // Only sso1 as input: s1 [10, 20) is not in it.
            assertFails(MetadataConflictException.class, () -> store.commitObjects(compaction(List.of(sso1),
                    streamObject(so, range(s1, 0, 0, 20)), streamSetObject(merged, range(s2, 0, 0, 5)))));
            assertCompactionChangedNothing(so, merged);
        }

        @Test
        void overlappingOutputsAreRejected() {
            long a = prepare();
            long b = prepare();
            long merged = prepare();
            assertFails(MetadataConflictException.class, () -> store.commitObjects(compaction(List.of(sso1, sso2),
                    streamObject(a, range(s1, 0, 0, 12)), streamObject(b, range(s1, 0, 10, 20)),
                    streamSetObject(merged, range(s2, 0, 0, 8)))));
            assertCompactionChangedNothing(a, merged);
        }

        @Test
        void inputsMustBeCommitted() {
            long so = prepare();
            long merged = prepare();
            long prepared = prepare();
            assertFails(MetadataConflictException.class, () -> store.commitObjects(compaction(List.of(sso1, prepared),
                    streamObject(so, range(s1, 0, 0, 10)), streamSetObject(merged, range(s2, 0, 0, 5)))),
                    "" + prepared);
            long unknown = prepared + 1_000_000;
            assertFails(MetadataConflictException.class, () -> store.commitObjects(compaction(List.of(sso1, unknown),
                    streamObject(so, range(s1, 0, 0, 10)), streamSetObject(merged, range(s2, 0, 0, 5)))),
                    "" + unknown);
            join(store.commitObjects(compaction(List.of(sso1),
                    streamObject(so, range(s1, 0, 0, 10)), streamSetObject(merged, range(s2, 0, 0, 5)))));
            long again = prepare();
            assertFails(MetadataConflictException.class, () -> store.commitObjects(compaction(List.of(sso1),
                    streamObject(again, range(s1, 0, 0, 10)))), "" + sso1);
            assertEquals(ObjectState.PREPARED, state(again));
        }

        @Test
        void compactionMayDropTrimmedData() {
            join(store.trimStream(s1, 0, 12));
            long so = prepare();
            long merged = prepare();
            long bad = prepare();
            // Dropping live data above the start is still rejected.
            assertFails(MetadataConflictException.class, () -> store.commitObjects(compaction(List.of(sso1, sso2),
                    streamObject(bad, range(s1, 0, 13, 20)), streamSetObject(merged, range(s2, 0, 0, 8)))));
            assertEquals(ObjectState.COMMITTED, state(sso1));
            assertEquals(ObjectState.COMMITTED, state(sso2));
            assertEquals(List.of(sso2), objectIds(s1, 0, 20, 10), "sso1 holds only trimmed data of s1");
            join(store.commitObjects(compaction(List.of(sso1, sso2),
                    streamObject(so, range(s1, 0, 12, 20)), streamSetObject(merged, range(s2, 0, 0, 8)))));
            assertEquals(List.of(so), objectIds(s1, 0, 20, 10));
            assertEquals(List.of(merged), objectIds(s2, 0, 8, 10));
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(sso1));
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(sso2));
        }

        @Test
        void compactionMayKeepSomeTrimmedData() {
            join(store.trimStream(s1, 0, 12));
            long so = prepare();
            long merged = prepare();
            join(store.commitObjects(compaction(List.of(sso1, sso2),
                    streamObject(so, range(s1, 0, 10, 20)), streamSetObject(merged, range(s2, 0, 0, 8)))));
            assertEquals(List.of(so), objectIds(s1, 12, 20, 10));
        }

        @Test
        void compactionOutputsDieByLaterTrims() {
            long s3 = createStream().streamId();
            long a = commitStreamObject(range(s3, 0, 0, 10));
            long b = commitStreamObject(range(s3, 0, 10, 20));
            join(store.trimStream(s3, 0, 5));
            long so = prepare();
            join(store.commitObjects(compaction(List.of(a, b), streamObject(so, range(s3, 0, 5, 20)))));
            assertEquals(ObjectState.COMMITTED, state(so));
            join(store.trimStream(s3, 0, 20));
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(so));
        }

        @Test
        void compactionDropsAllDataOfADeletedStreamAndIgnoresEpochs() {
            join(store.deleteStream(s2, 0));
            join(store.openStream(s1, 4, NODE_A, epochA));
            long so = prepare();
            join(store.commitObjects(compaction(List.of(sso1, sso2), streamObject(so, range(s1, 0, 0, 20)))));
            assertEquals(List.of(so), objectIds(s1, 0, 20, 10));
            assertEquals(4, stream(s1).epoch());
        }

        @Test
        void compactionOutputOfADeletedStreamIsDeadOnArrival() {
            join(store.deleteStream(s2, 0));
            long so = prepare();
            long stale = prepare(); // a compactor that planned before the deletion still writes s2's data
            join(store.commitObjects(compaction(List.of(sso1, sso2),
                    streamObject(so, range(s1, 0, 0, 20)), streamSetObject(stale, range(s2, 0, 0, 8)))));
            assertEquals(ObjectState.COMMITTED, state(so));
            assertEquals(ObjectState.MARKED_FOR_DELETION, state(stale));
            assertEquals(List.of(), objectIds(s2, 0, 8, 10));
            assertDeleted(s2);
        }

        @Test
        void mergesAdjacentStreamObjectsAndReadsFollowOffsetsNotIds() {
            long s = createStream().streamId();
            long a = commitStreamObject(range(s, 0, 0, 10));
            long b = commitStreamObject(range(s, 0, 10, 20));
            long c = commitStreamObject(range(s, 0, 20, 30));
            long merged = prepare(); // a higher id than c, but earlier offsets
            join(store.commitObjects(compaction(List.of(a, b), streamObject(merged, range(s, 0, 0, 20)))));
            assertTrue(merged > c);
            assertEquals(List.of(merged, c), objectIds(s, 0, 30, 10));
            assertEquals(List.of(merged, c), objectIds(s, 19, 21, 10));
            assertEquals(List.of(c), objectIds(s, 20, 30, 10));
        }

        @Test
        void compactionFencesAStaleNode() {
            long so = prepare();
            long newer = join(store.registerNode(NODE_A));
            assertFails(NodeFencedException.class, () -> store.commitObjects(compaction(List.of(sso1),
                    streamObject(so, range(s1, 0, 0, 10)))), "" + newer);
            assertEquals(ObjectState.COMMITTED, state(sso1));
        }

        private void assertCompactionChangedNothing(long... outputs) {
            assertEquals(ObjectState.COMMITTED, state(sso1));
            assertEquals(ObjectState.COMMITTED, state(sso2));
            for (long id : outputs) {
                assertEquals(ObjectState.PREPARED, state(id));
            }
            assertEquals(List.of(sso1, sso2), objectIds(s1, 0, 20, 10));
            assertEquals(List.of(sso1, sso2), objectIds(s2, 0, 8, 10));
        }
    }

    // ------------------------------------------------------------------------------------------------ reads

    /** getObjects, listObjects and objectsDeleted. */
    @Nested
    class Reads {
        long s;
        long o1;
        long o2;
        long o3;
        long o4;

        @BeforeEach
        void fourObjects() {
            s = createStream().streamId();
            o1 = commitStreamObject(range(s, 0, 0, 10));
            o2 = commitStreamSetObject(range(s, 0, 10, 20));
            o3 = commitStreamObject(range(s, 0, 20, 30));
            o4 = commitStreamObject(range(s, 0, 30, 40));
        }

        @Test
        void getObjectsReturnsOverlappingObjectsInOffsetOrderWithEndExclusive() {
            assertEquals(List.of(o1, o2, o3, o4), objectIds(s, 0, 40, 100));
            assertEquals(List.of(o1, o2, o3, o4), objectIds(s, 0, Long.MAX_VALUE, 100));
            assertEquals(List.of(o2), objectIds(s, 10, 20, 100), "touching neighbours are not overlapping");
            assertEquals(List.of(o1, o2), objectIds(s, 9, 11, 100));
            assertEquals(List.of(o2), objectIds(s, 15, 16, 100));
            assertEquals(List.of(o1), objectIds(s, 0, 1, 100));
            assertEquals(List.of(o4), objectIds(s, 39, 40, 100));
            assertEquals(List.of(), objectIds(s, 40, 50, 100));
            assertEquals(List.of(), objectIds(s, 25, 25, 100), "empty interval");
            assertEquals(List.of(), objectIds(987_654, 0, 40, 100), "unknown stream");
        }

        @Test
        void getObjectsHonoursTheLimit() {
            assertEquals(List.of(o1, o2), objectIds(s, 0, 40, 2));
            assertEquals(List.of(o2, o3), objectIds(s, 15, 40, 2));
            assertEquals(List.of(o4), objectIds(s, 35, 40, 1));
        }

        @Test
        void getObjectsReturnsFullMetadataOfCommittedObjectsOnly() {
            long other = createStream().streamId();
            long shared = commitStreamSetObject(range(s, 0, 40, 50), range(other, 0, 0, 3));
            prepare();
            assertEquals(List.of(shared), objectIds(other, 0, 3, 10));
            ObjectMetadata read = join(store.getObjects(s, 45, 46, 10)).getFirst();
            assertEquals(object(shared), read);
            assertEquals(Optional.of(range(s, 0, 40, 50)), read.rangeOf(s));
        }

        @Test
        void listObjectsFiltersByStateInIdOrder() {
            long p = prepare();
            join(store.trimStream(s, 0, 10));
            assertEquals(List.of(o2, o3, o4), ids(ObjectState.COMMITTED));
            assertEquals(List.of(o1), ids(ObjectState.MARKED_FOR_DELETION));
            assertEquals(List.of(o1, p), ids(ObjectState.PREPARED, ObjectState.MARKED_FOR_DELETION));
            assertEquals(List.of(o1, o2, o3, o4, p), ids());
            assertEquals(List.of(), ids(ObjectState.DELETED));
        }

        @Test
        void objectsDeletedForgetsMarkedObjects() {
            join(store.trimStream(s, 0, 20));
            assertFails(MetadataConflictException.class, () -> store.objectsDeleted(List.of(o1, o3)), "" + o3);
            assertEquals(List.of(o1, o2), ids(ObjectState.MARKED_FOR_DELETION), "atomic");
            long p = prepare();
            assertFails(MetadataConflictException.class, () -> store.objectsDeleted(List.of(p)), "" + p);
            long unknown = p + 1_000_000;
            assertFails(MetadataConflictException.class, () -> store.objectsDeleted(List.of(unknown)),
                    "never prepared");

            join(store.objectsDeleted(List.of(o1, o2)));
            assertEquals(List.of(), ids(ObjectState.DELETED), "forgotten, not kept as history");
            assertEquals(List.of(), ids(ObjectState.MARKED_FOR_DELETION));
            assertEquals(List.of(o3, o4, p), ids());
            join(store.objectsDeleted(List.of(o1))); // a retried call succeeds
            join(store.objectsDeleted(List.of(o2, o2)));
            assertEquals(List.of(o3, o4, p), ids());
            assertFails(MetadataConflictException.class, () -> store.commitObjects(compaction(List.of(o1),
                    streamObject(prepare(), range(s, 0, 0, 10)))), "" + o1);
        }

        @Test
        void everyTrimmedOrCompactedObjectIsListedForDeletion() {
            long so = prepare();
            join(store.commitObjects(compaction(List.of(o3, o4), streamObject(so, range(s, 0, 20, 40)))));
            join(store.trimStream(s, 0, 20));
            assertEquals(List.of(o1, o2, o3, o4), ids(ObjectState.MARKED_FOR_DELETION));
            assertEquals(List.of(so), ids(ObjectState.COMMITTED));
        }
    }

    // ------------------------------------------------------------------------------------------------ key-value and futures

    /** The key-value space, and failures reported through futures. */
    @Nested
    class KeyValueAndFutures {

        @Test
        void putGetDeleteWithDefensiveCopies() {
            assertEquals(Optional.empty(), join(store.getKv("topic/p-0")));
            byte[] value = {1, 2, 3};
            join(store.putKv("topic/p-0", value));
            value[0] = 9;
            byte[] read = join(store.getKv("topic/p-0")).orElseThrow();
            assertArrayEquals(new byte[] {1, 2, 3}, read);
            read[1] = 9;
            assertArrayEquals(new byte[] {1, 2, 3}, join(store.getKv("topic/p-0")).orElseThrow());

            join(store.putKv("topic/p-0", new byte[] {4}));
            join(store.putKv("empty", new byte[0]));
            assertArrayEquals(new byte[] {4}, join(store.getKv("topic/p-0")).orElseThrow());
            assertArrayEquals(new byte[0], join(store.getKv("empty")).orElseThrow());
            join(store.deleteKv("topic/p-0"));
            assertEquals(Optional.empty(), join(store.getKv("topic/p-0")));
            join(store.deleteKv("never-there"));
        }

        @Test
        void listByPrefixIsOrderedAndExact() {
            join(store.putKv("topics/b", new byte[] {2}));
            join(store.putKv("topics/a", new byte[] {1}));
            join(store.putKv("topicsx", new byte[] {3}));
            join(store.putKv("other", new byte[] {4}));
            java.util.SortedMap<String, byte[]> listed = join(store.listKv("topics/"));
            assertEquals(List.of("topics/a", "topics/b"), new ArrayList<>(listed.keySet()));
            assertArrayEquals(new byte[] {2}, listed.get("topics/b"));
            assertEquals(4, join(store.listKv("")).size());
        }

        @Test
        void compareAndSetCreatesReplacesAndDeletesOnlyOnMatch() {
            assertTrue(join(store.compareAndSetKv("lease", null, new byte[] {1})));
            assertFalse(join(store.compareAndSetKv("lease", null, new byte[] {2})), "already exists");
            assertFalse(join(store.compareAndSetKv("lease", new byte[] {9}, new byte[] {2})), "wrong expectation");
            assertTrue(join(store.compareAndSetKv("lease", new byte[] {1}, new byte[] {2})));
            assertArrayEquals(new byte[] {2}, join(store.getKv("lease")).orElseThrow());
            assertTrue(join(store.compareAndSetKv("lease", new byte[] {2}, null)));
            assertEquals(Optional.empty(), join(store.getKv("lease")));
        }

        @Test
        void changesByAFencedNodeFailAndChangeNothing() {
            join(store.putKv(NODE_A, epochA, "offsets/g/t/0", new byte[] {1}));
            assertTrue(join(store.compareAndSetKv(NODE_A, epochA, "lease", null, new byte[] {1})));
            assertFalse(join(store.compareAndSetKv(NODE_A, epochA, "lease", null, new byte[] {2})), "a mismatch is false");
            long newer = join(store.registerNode(NODE_A)); // restarted elsewhere, or its WAL taken over
            join(store.putKv(NODE_A, newer, "offsets/g/t/0", new byte[] {5}));
            // The old instance, still running, cannot write over its successor, nor delete or swap anything.
            assertFails(NodeFencedException.class,
                    () -> store.putKv(NODE_A, epochA, "offsets/g/t/0", new byte[] {2}), "" + NODE_A, "" + newer);
            assertFails(NodeFencedException.class, () -> store.deleteKv(NODE_A, epochA, "lease"), "" + NODE_A);
            assertFails(NodeFencedException.class,
                    () -> store.compareAndSetKv(NODE_A, epochA, "lease", new byte[] {1}, null), "" + NODE_A);
            assertFails(NodeFencedException.class,
                    () -> store.compareAndSetKv(NODE_A, epochA, "lease", new byte[] {9}, null), "" + NODE_A);
            assertArrayEquals(new byte[] {5}, join(store.getKv("offsets/g/t/0")).orElseThrow());
            assertArrayEquals(new byte[] {1}, join(store.getKv("lease")).orElseThrow());
            // Other nodes and unfenced writers are unaffected; an epoch never issued or a node never registered is
            // a conflict, not a fence.
            join(store.putKv(NODE_B, epochB, "other", new byte[] {3}));
            join(store.deleteKv(NODE_A, newer, "lease"));
            assertEquals(Optional.empty(), join(store.getKv("lease")));
            assertFails(MetadataConflictException.class,
                    () -> store.putKv(NODE_A, newer + 1, "x", new byte[] {1}), "never issued");
            assertFails(MetadataConflictException.class,
                    () -> store.putKv(987_654, 1, "x", new byte[] {1}), "not registered");
            assertEquals(Optional.empty(), join(store.getKv("x")));
        }

        @Test
        void updateKvAppliesEveryChangeOrNone() {
            join(store.putKv(NODE_A, epochA, "offsets/g/t/0", new byte[] {1}));
            join(store.putKv(NODE_A, epochA, "staged/g/7/t/1", new byte[] {2}));
            java.util.Map<String, byte[]> puts = new java.util.HashMap<>();
            puts.put("offsets/g/t/0", new byte[] {10});
            puts.put("offsets/g/t/1", new byte[] {11});
            join(store.updateKv(NODE_A, epochA, puts, List.of("staged/g/7/t/1", "never-there")));
            assertArrayEquals(new byte[] {10}, join(store.getKv("offsets/g/t/0")).orElseThrow());
            assertArrayEquals(new byte[] {11}, join(store.getKv("offsets/g/t/1")).orElseThrow());
            assertEquals(Optional.empty(), join(store.getKv("staged/g/7/t/1")));
            puts.put("offsets/g/t/0", new byte[] {99}); // the caller's map and arrays are not kept
            assertArrayEquals(new byte[] {10}, join(store.getKv("offsets/g/t/0")).orElseThrow());

            // A key both put and deleted, a null value, a fenced node: refused as a whole, nothing changed.
            assertFails(IllegalArgumentException.class, () -> store.updateKv(NODE_A, epochA,
                    java.util.Map.of("offsets/g/t/2", new byte[] {1}), List.of("offsets/g/t/2")), "both put and deleted");
            java.util.Map<String, byte[]> withNull = new java.util.HashMap<>();
            withNull.put("offsets/g/t/3", null);
            assertFails(NullPointerException.class, () -> store.updateKv(NODE_A, epochA, withNull, List.of()));
            long newer = join(store.registerNode(NODE_A));
            assertFails(NodeFencedException.class, () -> store.updateKv(NODE_A, epochA,
                    java.util.Map.of("offsets/g/t/4", new byte[] {4}), List.of("offsets/g/t/0")), "" + NODE_A);
            assertEquals(List.of("offsets/g/t/0", "offsets/g/t/1"), List.copyOf(join(store.listKv("")).keySet()));

            join(store.updateKv(NODE_A, newer, java.util.Map.of(), List.of())); // nothing to do: fine
            join(store.updateKv(NODE_A, newer, java.util.Map.of(), List.of("offsets/g/t/0", "offsets/g/t/1")));
            assertEquals(0, join(store.listKv("")).size());
        }

        @Test
        void concurrentCompareAndSetHasExactlyOneWinner() throws Exception {
            int threads = 8;
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
            try {
                List<java.util.concurrent.Future<Boolean>> results = new ArrayList<>();
                for (int i = 0; i < threads; i++) {
                    byte[] mine = {(byte) i};
                    results.add(pool.submit(() -> join(store.compareAndSetKv("race", null, mine))));
                }
                int winners = 0;
                for (var r : results) {
                    winners += r.get() ? 1 : 0;
                }
                assertEquals(1, winners);
            } finally {
                pool.shutdownNow();
            }
        }

        @Test
        void badArgumentsFailTheFutureInsteadOfThrowing() {
            assertFails(RuntimeException.class, () -> store.putKv(null, new byte[0]));
            assertFails(RuntimeException.class, () -> store.putKv("k", null));
            assertFails(RuntimeException.class, () -> store.getKv(null));
            assertFails(RuntimeException.class, () -> store.createStream(NODE_A, epochA, null));
            assertFails(RuntimeException.class, () -> store.commitObjects(null));
            assertFails(RuntimeException.class, () -> store.prepareObjects(0, TTL));
            assertFails(RuntimeException.class, () -> store.prepareObjects(1, null));
            assertFails(RuntimeException.class, () -> store.objectsDeleted(null));
        }
    }

    // ------------------------------------------------------------------------------------------------ concurrency

    /** Parallel callers see the same outcome as a serial run. */
    @Nested
    class Concurrency {

        @Test
        void parallelUploadsAndTrimsEndInTheSerialState() throws Exception {
            int writers = 8;
            int uploads = concurrencyUploadsPerWriter();
            assertTrue(uploads >= 2 && uploads % 2 == 0, "concurrencyUploadsPerWriter must be even, was " + uploads);
            int recordsPerUpload = 10;
            long trimTarget = uploads * recordsPerUpload / 2;
            long[] streamIds = new long[writers];
            for (int i = 0; i < writers; i++) {
                streamIds[i] = createStream().streamId();
            }
            ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
            List<List<Long>> objectsByWriter = new ArrayList<>();
            for (int i = 0; i < writers; i++) {
                objectsByWriter.add(new ArrayList<>());
            }
            CountDownLatch start = new CountDownLatch(1);
            AtomicBoolean writing = new AtomicBoolean(true);
            ExecutorService pool = Executors.newFixedThreadPool(writers + 1);
            try {
                List<Future<?>> writerTasks = new ArrayList<>();
                for (int w = 0; w < writers; w++) {
                    int writer = w;
                    writerTasks.add(pool.submit(() -> {
                        try {
                            start.await();
                            for (int u = 0; u < uploads; u++) {
                                long id = join(store.prepareObjects(1, TTL));
                                long base = (long) u * recordsPerUpload;
                                join(store.commitObjects(upload(streamObject(id,
                                        range(streamIds[writer], 0, base, base + recordsPerUpload)))));
                                objectsByWriter.get(writer).add(id);
                            }
                        } catch (Throwable t) {
                            errors.add(t);
                        }
                        return null;
                    }));
                }
                Future<?> trimmer = pool.submit(() -> {
                    try {
                        start.await();
                        // Trims move forward in small steps, sometimes past what is committed yet.
                        long target = 0;
                        while (writing.get() || target < trimTarget) {
                            target = Math.min(trimTarget, target + 7);
                            for (long s : streamIds) {
                                join(store.trimStream(s, 0, target));
                            }
                            if (target == trimTarget) {
                                Thread.sleep(1);
                            }
                        }
                    } catch (Throwable t) {
                        errors.add(t);
                    }
                    return null;
                });
                start.countDown();
                for (Future<?> task : writerTasks) {
                    task.get(120, TimeUnit.SECONDS);
                }
                writing.set(false);
                trimmer.get(120, TimeUnit.SECONDS);
            } finally {
                pool.shutdownNow();
            }
            if (!errors.isEmpty()) {
                AssertionError failure = new AssertionError(errors.size() + " task(s) failed");
                errors.forEach(failure::addSuppressed);
                throw failure;
            }

            List<Long> committed = new ArrayList<>();
            List<Long> marked = new ArrayList<>();
            for (int w = 0; w < writers; w++) {
                StreamMetadata s = stream(streamIds[w]);
                assertEquals(trimTarget, s.startOffset(), "stream " + s.streamId());
                assertEquals((long) uploads * recordsPerUpload, s.endOffset(), "stream " + s.streamId());
                List<Long> ids = objectsByWriter.get(w);
                assertEquals(uploads, ids.size());
                List<Long> live = ids.subList(uploads / 2, uploads);
                marked.addAll(ids.subList(0, uploads / 2));
                committed.addAll(live);
                assertEquals(live, objectIds(s.streamId(), 0, Long.MAX_VALUE, Integer.MAX_VALUE));
            }
            committed.sort(null);
            marked.sort(null);
            assertEquals(committed, ids(ObjectState.COMMITTED));
            assertEquals(marked, ids(ObjectState.MARKED_FOR_DELETION));
            assertEquals(List.of(), ids(ObjectState.PREPARED));
            assertFalse(committed.isEmpty());
            assertEquals(writers * uploads, committed.size() + marked.size(),
                    () -> "objects " + Arrays.toString(committed.toArray()));
        }
    }
}
