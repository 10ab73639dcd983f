package io.s3stream.kafka.shell.fetch;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.FetchSessionHandler;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.FetchMetadata;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.utils.LogContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fetch sessions against Kafka's own client-side session handler ({@link FetchSessionHandler}, what the Java consumer
 * uses), with requests and responses serialized at version 12 as on the wire.
 */
class FetchSessionsTest {
    private static final short VERSION = 12;

    /** What one partition holds, as the broker knows it. */
    private static final class Log {
        long logStart;
        long highWatermark;
        boolean failing;
    }

    /** A client of the sessions: Kafka's handler and the positions and offsets it has been told. */
    private static final class Client {
        FetchSessionHandler handler = new FetchSessionHandler(new LogContext(), 1);
        final Map<TopicPartition, Long> position = new LinkedHashMap<>();
        final Map<TopicPartition, Long> seenHighWatermark = new HashMap<>();
        final Map<TopicPartition, Long> seenLogStart = new HashMap<>();
        /** The partitions of the last response, in its order, and those of them that carried an error. */
        final List<TopicPartition> lastResponse = new ArrayList<>();
        final List<TopicPartition> lastErrors = new ArrayList<>();

        FetchRequest request() {
            FetchSessionHandler.Builder builder = handler.newBuilder();
            position.forEach((tp, offset) -> builder.add(tp, new FetchRequest.PartitionData(Uuid.ZERO_UUID, offset,
                    -1, 1 << 20, Optional.empty())));
            FetchSessionHandler.FetchRequestData data = builder.build();
            return FetchRequest.Builder.forConsumer(VERSION, 0, 1, data.toSend()).metadata(data.metadata())
                    .removed(data.toForget()).replaced(data.toReplace()).build(VERSION);
        }

        /** Takes a response in as the consumer would; whether the handler accepted it. */
        boolean receive(FetchResponse response) {
            FetchResponse wire = onTheWire(response);
            if (!handler.handleResponse(wire, VERSION)) {
                return false;
            }
            take(wire);
            return true;
        }

        /**
         * Closes the session as a closing consumer does, with a full fetch of epoch -1 that names it, and starts a
         * new handler, as a new consumer of the same partitions would. Returns that fetch.
         */
        FetchRequest closing() {
            Map<TopicPartition, FetchRequest.PartitionData> all = new LinkedHashMap<>();
            position.forEach((tp, offset) -> all.put(tp, new FetchRequest.PartitionData(Uuid.ZERO_UUID, offset,
                    -1, 1 << 20, Optional.empty())));
            FetchMetadata close = new FetchMetadata(handler.sessionId(), FetchMetadata.FINAL_EPOCH);
            handler = new FetchSessionHandler(new LogContext(), 1);
            return FetchRequest.Builder.forConsumer(VERSION, 0, 1, all).metadata(close).build(VERSION);
        }

        static FetchResponse onTheWire(FetchResponse response) {
            return FetchResponse.parse(MessageUtil.toByteBufferAccessor(response.data(), VERSION), VERSION);
        }

        void take(FetchResponse wire) {
            lastResponse.clear();
            lastErrors.clear();
            for (FetchResponseData.FetchableTopicResponse t : wire.data().responses()) {
                for (FetchResponseData.PartitionData p : t.partitions()) {
                    TopicPartition tp = new TopicPartition(t.topic(), p.partitionIndex());
                    lastResponse.add(tp);
                    if (p.errorCode() == Errors.OFFSET_OUT_OF_RANGE.code()) {
                        position.put(tp, p.logStartOffset()); // auto.offset.reset=earliest
                    }
                    if (p.errorCode() != Errors.NONE.code()) {
                        lastErrors.add(tp);
                    }
                    seenHighWatermark.put(tp, p.highWatermark());
                    seenLogStart.put(tp, p.logStartOffset());
                    for (RecordBatch b : ((MemoryRecords) p.records()).batches()) {
                        assertThat(b.baseOffset()).as("records of %s", tp).isEqualTo(position.get(tp));
                        position.put(tp, b.nextOffset());
                    }
                }
            }
        }
    }

    private final Map<TopicPartition, Log> logs = new TreeMap<>((a, b) -> a.toString().compareTo(b.toString()));
    private final AtomicLong clock = new AtomicLong();

    /** The broker's answer to one request: what {@link FetchApis} would read, with a budget of a few partitions. */
    private FetchResponse answer(FetchSessions sessions, FetchRequest request, Client client, int budget) {
        FetchSessions.Context ctx = sessions.open(FetchRequest.parse(MessageUtil.toByteBufferAccessor(request.data(),
                VERSION), VERSION).data());
        List<FetchResponseData.PartitionData> data = new ArrayList<>();
        if (ctx.error() == Errors.NONE) {
            assertThat(ctx.partitions()).extracting(w -> new TopicPartition(w.topic(), w.partition()))
                    .as("the session's partitions are the client's").containsExactlyInAnyOrderElementsOf(
                            client.position.keySet());
            for (FetchSessions.Wanted w : ctx.partitions()) {
                TopicPartition tp = new TopicPartition(w.topic(), w.partition());
                assertThat(w.fetchOffset()).as("the session's position of %s", tp).isEqualTo(client.position.get(tp));
                Log log = logs.get(tp);
                FetchResponseData.PartitionData d = new FetchResponseData.PartitionData().setPartitionIndex(
                        w.partition()).setPreferredReadReplica(-1).setRecords(MemoryRecords.EMPTY);
                if (log.failing) {
                    d.setErrorCode(Errors.NOT_LEADER_OR_FOLLOWER.code()).setHighWatermark(-1)
                            .setLastStableOffset(-1).setLogStartOffset(-1);
                } else if (w.fetchOffset() < log.logStart || w.fetchOffset() > log.highWatermark) {
                    d.setErrorCode(Errors.OFFSET_OUT_OF_RANGE.code()).setHighWatermark(-1)
                            .setLastStableOffset(-1).setLogStartOffset(log.logStart);
                } else {
                    d.setHighWatermark(log.highWatermark).setLastStableOffset(log.highWatermark)
                            .setLogStartOffset(log.logStart);
                    if (w.fetchOffset() < log.highWatermark && budget-- > 0) {
                        d.setRecords(records(w.fetchOffset(), (int) Math.min(20, log.highWatermark - w.fetchOffset())));
                    }
                }
                data.add(d);
            }
        }
        return FetchResponse.of(ctx.respond(data));
    }

    private static MemoryRecords records(long base, int count) {
        SimpleRecord[] records = new SimpleRecord[count];
        for (int i = 0; i < count; i++) {
            records[i] = new SimpleRecord(("v" + (base + i)).getBytes());
        }
        return MemoryRecords.withRecords(base, Compression.NONE, records);
    }

    /** A client of every log from offset 0, its session opened by a first (full) fetch. */
    private Client sessionOfAll(FetchSessions sessions) {
        Client client = new Client();
        logs.keySet().forEach(tp -> client.position.put(tp, 0L));
        assertThat(client.receive(answer(sessions, client.request(), client, 10))).isTrue();
        return client;
    }

    private void addLogs(String topic, int partitions) {
        for (int p = 0; p < partitions; p++) {
            logs.put(new TopicPartition(topic, p), new Log());
        }
    }

    @Test
    void anIdlePartitionIsLeftOutOfIncrementalResponsesAndOneWithNewsIsIn() {
        addLogs("a", 3);
        FetchSessions sessions = new FetchSessions(10, clock::get);
        Client client = new Client();
        logs.keySet().forEach(tp -> client.position.put(tp, 0L));

        FetchRequest first = client.request();
        assertThat(first.data().sessionEpoch()).isEqualTo(FetchMetadata.INITIAL_EPOCH);
        FetchResponse full = answer(sessions, first, client, 10);
        assertThat(full.data().sessionId()).isNotZero();
        assertThat(client.receive(full)).isTrue();
        assertThat(client.lastResponse).hasSize(3);
        assertThat(sessions.size()).isEqualTo(1);
        assertThat(sessions.partitions()).isEqualTo(3);

        FetchRequest idle = client.request();
        assertThat(idle.data().sessionEpoch()).isEqualTo(1);
        assertThat(idle.data().topics()).as("nothing moved: the request lists no partition").isEmpty();
        assertThat(client.receive(answer(sessions, idle, client, 10))).isTrue();
        assertThat(client.lastResponse).as("nothing new: the response carries no partition").isEmpty();

        TopicPartition added = new TopicPartition("b", 0);
        logs.put(added, new Log());
        client.position.put(added, 0L);
        assertThat(client.receive(answer(sessions, client.request(), client, 10))).isTrue();
        assertThat(client.lastResponse).as("a partition added to the session is answered, empty or not")
                .containsExactly(added);
        assertThat(client.seenHighWatermark.get(added)).isZero();

        logs.get(new TopicPartition("a", 1)).highWatermark = 2;
        assertThat(client.receive(answer(sessions, client.request(), client, 10))).isTrue();
        assertThat(client.lastResponse).containsExactly(new TopicPartition("a", 1));
        assertThat(client.position.get(new TopicPartition("a", 1))).isEqualTo(2);

        // Caught up: only the moved position goes to the broker, and the partition has nothing new to say.
        FetchRequest moved = client.request();
        assertThat(moved.data().topics()).singleElement().satisfies(t -> assertThat(t.partitions()).singleElement()
                .satisfies(p -> assertThat(p.fetchOffset()).isEqualTo(2)));
        assertThat(client.receive(answer(sessions, moved, client, 10))).isTrue();
        assertThat(client.lastResponse).isEmpty();

        logs.get(new TopicPartition("a", 0)).failing = true;
        assertThat(client.receive(answer(sessions, client.request(), client, 10))).isTrue();
        assertThat(client.lastResponse).containsExactly(new TopicPartition("a", 0));
        assertThat(client.receive(answer(sessions, client.request(), client, 10))).isTrue();
        assertThat(client.lastResponse).as("an error is sent every time").containsExactly(new TopicPartition("a", 0));
        logs.get(new TopicPartition("a", 0)).failing = false;
        assertThat(client.receive(answer(sessions, client.request(), client, 10))).isTrue();
        assertThat(client.lastResponse).as("and once more when it is gone").containsExactly(new TopicPartition("a", 0));
        assertThat(client.seenHighWatermark.get(new TopicPartition("a", 0))).isZero();
    }

    @Test
    void aPartitionThatReturnedRecordsGoesToTheEndOfTheSessionsOrder() {
        addLogs("a", 3);
        FetchSessions sessions = new FetchSessions(10, clock::get);
        Client client = sessionOfAll(sessions);
        logs.values().forEach(l -> l.highWatermark = 100);

        // A budget of one partition's records per response: each partition gets its turn.
        List<TopicPartition> served = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            assertThat(client.receive(answer(sessions, client.request(), client, 1))).isTrue();
            for (TopicPartition tp : client.lastResponse) {
                if (client.position.get(tp) > 0 && !served.contains(tp)) {
                    served.add(tp);
                }
            }
        }
        assertThat(served).as("each fetch's records came from the partition served longest ago")
                .containsExactly(new TopicPartition("a", 0), new TopicPartition("a", 1), new TopicPartition("a", 2));
        FetchSessions.Context next = sessions.open(client.request().data());
        assertThat(next.partitions()).extracting(FetchSessions.Wanted::partition).containsExactly(0, 1, 2);
    }

    @Test
    void sessionErrorsMakeTheClientStartOverWithAFullFetch() {
        addLogs("a", 2);
        FetchSessions sessions = new FetchSessions(10, clock::get);
        Client client = sessionOfAll(sessions);
        FetchRequest incremental = client.request();

        FetchResponse unknown = answer(new FetchSessions(10, clock::get), incremental, client, 10);
        assertThat(unknown.error()).as("a shell that restarted does not know the session")
                .isEqualTo(Errors.FETCH_SESSION_ID_NOT_FOUND);
        assertThat(client.receive(unknown)).isFalse();
        assertThat(client.request().data().sessionEpoch()).isEqualTo(FetchMetadata.INITIAL_EPOCH);

        FetchSessions.Context again = sessions.open(incremental.data());
        assertThat(again.error()).isEqualTo(Errors.NONE);
        assertThat(sessions.open(incremental.data()).error()).as("the same epoch twice")
                .isEqualTo(Errors.INVALID_FETCH_SESSION_EPOCH);

        FetchRequestData close = new FetchRequestData().setSessionId(incremental.data().sessionId())
                .setSessionEpoch(FetchMetadata.FINAL_EPOCH).setMaxBytes(1 << 20);
        FetchSessions.Context sessionless = sessions.open(close);
        assertThat(sessionless.respond(List.of()).sessionId()).isZero();
        assertThat(sessions.size()).as("a full fetch closes the session it names").isZero();
        assertThat(sessions.partitions()).isZero();
    }

    @Test
    void forgettingEveryPartitionEndsTheSession() {
        addLogs("a", 2);
        FetchSessions sessions = new FetchSessions(10, clock::get);
        Client client = sessionOfAll(sessions);
        client.position.remove(new TopicPartition("a", 0));
        FetchRequest forget = client.request();
        assertThat(forget.data().forgottenTopicsData()).singleElement()
                .satisfies(t -> assertThat(t.partitions()).containsExactly(0));
        assertThat(client.receive(answer(sessions, forget, client, 10))).isTrue();
        assertThat(sessions.partitions()).isEqualTo(1);

        client.position.clear();
        FetchResponse last = answer(sessions, client.request(), client, 10);
        assertThat(last.data().sessionId()).isZero();
        assertThat(sessions.size()).isZero();
        assertThat(sessions.partitions()).isZero();
    }

    @Test
    void aFullCacheEvictsAnIdleSessionThenASmallerOldOneAndOtherwiseAnswersWithoutASession() {
        addLogs("a", 4);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        FetchSessions sessions = new FetchSessions(1, clock::get);
        sessions.bindTo(registry);
        Client small = new Client();
        small.position.put(new TopicPartition("a", 0), 0L);
        assertThat(small.receive(answer(sessions, small.request(), small, 10))).isTrue();

        Client big = new Client();
        logs.keySet().forEach(tp -> big.position.put(tp, 0L));
        assertThat(answer(sessions, big.request(), big, 10).data().sessionId())
                .as("the only session is young and in use: no room").isZero();

        clock.addAndGet(TimeUnit.SECONDS.toNanos(100));
        assertThat(small.receive(answer(sessions, small.request(), small, 10))).isTrue(); // used again
        clock.addAndGet(TimeUnit.SECONDS.toNanos(30));
        FetchResponse evicting = answer(sessions, big.request(), big, 10);
        assertThat(evicting.data().sessionId()).as("older than 120 s and smaller: evicted").isNotZero();
        assertThat(big.receive(evicting)).isTrue();
        assertThat(sessions.partitions()).isEqualTo(4);
        assertThat(registry.get("kafka.server.fetch.session.evictions").counter().count()).isEqualTo(1);
        assertThat(registry.get("kafka.server.fetch.sessions").gauge().value()).isEqualTo(1);
        assertThat(registry.get("kafka.server.fetch.session.partitions").gauge().value()).isEqualTo(4);

        assertThat(small.receive(answer(sessions, small.request(), small, 10))).as("evicted").isFalse();
        assertThat(answer(sessions, small.request(), small, 10).data().sessionId())
                .as("a smaller newcomer does not evict a bigger session in use").isZero();
        clock.addAndGet(TimeUnit.SECONDS.toNanos(121));
        assertThat(answer(sessions, small.request(), small, 10).data().sessionId())
                .as("but it does evict one idle for 120 s").isNotZero();
    }

    @Test
    void noSessionsAtAllWhenTheCacheHasNoSlots() {
        addLogs("a", 1);
        FetchSessions sessions = new FetchSessions(0, clock::get);
        Client client = new Client();
        client.position.put(new TopicPartition("a", 0), 0L);
        for (int i = 0; i < 3; i++) {
            FetchRequest request = client.request();
            assertThat(request.data().sessionEpoch()).isEqualTo(FetchMetadata.INITIAL_EPOCH);
            FetchResponse response = answer(sessions, request, client, 10);
            assertThat(response.data().sessionId()).isZero();
            assertThat(client.receive(response)).isTrue();
            assertThat(client.lastResponse).hasSize(1);
        }
    }

    /**
     * Random appends, trims, failing partitions, assignment changes, closed sessions and shell restarts: after every
     * accepted response the client knows every partition's high watermark and log start offset as the broker does (an
     * incremental response that left out a partition with news would break this), the session's positions are the
     * client's (checked in {@link #answer}), records arrive in order without gaps, and the client catches up.
     */
    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8})
    void theClientsViewMatchesTheBrokersAfterEveryResponse(long seed) {
        Random random = new Random(seed);
        addLogs("a", 6);
        addLogs("b", 5);
        List<TopicPartition> all = new ArrayList<>(logs.keySet());
        FetchSessions sessions = new FetchSessions(2, clock::get);
        Client client = new Client();
        all.forEach(tp -> client.position.put(tp, 0L));
        int accepted = 0;
        for (int step = 0; step < 400; step++) {
            boolean quiet = step >= 360; // the last steps only fetch: the client must catch up
            for (TopicPartition tp : all) {
                Log log = logs.get(tp);
                if (!quiet && random.nextInt(4) == 0) {
                    log.highWatermark += 1 + random.nextInt(3);
                }
                if (!quiet && random.nextInt(30) == 0) {
                    log.logStart = Math.min(log.highWatermark, log.logStart + random.nextInt(4));
                }
                log.failing = !quiet && random.nextInt(40) == 0;
            }
            if (!quiet && random.nextInt(10) == 0) {
                TopicPartition tp = all.get(random.nextInt(all.size()));
                if (client.position.remove(tp) == null) {
                    client.position.put(tp, logs.get(tp).logStart);
                }
            }
            if (!quiet && random.nextInt(50) == 0) {
                sessions = new FetchSessions(2, clock::get); // the shell restarted
            }
            if (!quiet && random.nextInt(50) == 0) {
                Client other = new Client(); // another consumer takes a slot
                other.position.put(all.getFirst(), 0L);
                other.receive(answer(sessions, other.request(), other, 10));
            }
            clock.addAndGet(TimeUnit.SECONDS.toNanos(random.nextInt(40)));
            int budget = 1 + random.nextInt(4);
            if (!quiet && random.nextInt(60) == 0) {
                int before = sessions.size();
                FetchResponse closed = Client.onTheWire(answer(sessions, client.closing(), client, budget));
                assertThat(closed.data().sessionId()).isZero();
                assertThat(sessions.size()).as("the closing fetch ends the session, if it is kept")
                        .isLessThanOrEqualTo(before);
                client.take(closed);
                continue;
            }
            if (client.receive(answer(sessions, client.request(), client, budget))) {
                accepted++;
                for (TopicPartition tp : client.position.keySet()) {
                    Log log = logs.get(tp);
                    if (!client.lastErrors.contains(tp)) {
                        assertThat(client.seenHighWatermark.get(tp)).as("step %d: high watermark of %s", step, tp)
                                .isEqualTo(log.highWatermark);
                        assertThat(client.seenLogStart.get(tp)).as("step %d: log start of %s", step, tp)
                                .isEqualTo(log.logStart);
                    }
                }
            }
        }
        assertThat(accepted).isGreaterThan(300);
        for (TopicPartition tp : client.position.keySet()) {
            assertThat(client.position.get(tp)).as("caught up on %s", tp).isEqualTo(logs.get(tp).highWatermark);
        }
    }
}
