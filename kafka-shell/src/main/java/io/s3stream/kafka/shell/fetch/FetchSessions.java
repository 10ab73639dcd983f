package io.s3stream.kafka.shell.fetch;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.FetchMetadata;
import org.apache.kafka.common.requests.FetchResponse;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Incremental fetch sessions (KIP-227). A client's first fetch (epoch 0) lists every partition it reads and creates a
 * session; the next ones list only the partitions whose position changed and name those to forget, and the response
 * carries only the partitions with news: records, an error, or a moved high watermark, last stable offset or log
 * start offset. A consumer of a thousand partitions then sends and receives a few bytes per idle fetch instead of a
 * thousand partitions each way.
 *
 * <p>As in Kafka: a partition that returns records moves to the end of its session's order, so the response's byte
 * budget goes round the partitions; a full fetch (epoch 0 or -1) closes the session it names; a fetch naming an unknown
 * session gets FETCH_SESSION_ID_NOT_FOUND and one with the wrong epoch INVALID_FETCH_SESSION_EPOCH, after which the
 * client starts over with a full fetch. At most {@code maxSessions} are kept ({@code
 * max.incremental.fetch.session.cache.slots}); a new one evicts the least recently used session idle for
 * {@link #EVICTION_IDLE_MS}, else the smallest session older than that if it is smaller, else the fetch is answered
 * without a session. Sessions are this shell's alone: a client fetching from another shell creates one there.
 *
 * <p>Thread safety: the cache is guarded by its own lock, each session by its own; a session is touched by one fetch
 * at a time unless a client sends two at once, which the epoch check refuses.
 */
public final class FetchSessions {
    /** How long a session must have been idle, or alive, before a newcomer may evict it (Kafka's fixed 120 s). */
    static final long EVICTION_IDLE_MS = 120_000;

    private final int maxSessions;
    private final LongSupplier nanoClock;
    /** Sessions by id, least recently used first. */
    private final LinkedHashMap<Integer, Session> sessions = new LinkedHashMap<>(16, 0.75f, true);
    private long cachedPartitions;
    private Counter evictions;

    /** @param maxSessions sessions kept at most; 0 answers every fetch without a session */
    public FetchSessions(int maxSessions) {
        this(maxSessions, System::nanoTime);
    }

    FetchSessions(int maxSessions, LongSupplier nanoClock) {
        if (maxSessions < 0) {
            throw new IllegalArgumentException("maxSessions must be >= 0, was " + maxSessions);
        }
        this.maxSessions = maxSessions;
        this.nanoClock = nanoClock;
    }

    /** Registers the session gauges and the eviction counter (Kafka's NumIncrementalFetchSessions and friends). */
    public void bindTo(MeterRegistry registry) {
        Gauge.builder("kafka.server.fetch.sessions", this, FetchSessions::size)
                .description("incremental fetch sessions kept (KIP-227)").register(registry);
        Gauge.builder("kafka.server.fetch.session.partitions", this, FetchSessions::partitions)
                .description("partitions cached across the incremental fetch sessions").register(registry);
        evictions = Counter.builder("kafka.server.fetch.session.evictions")
                .description("incremental fetch sessions evicted to make room for a new one").register(registry);
    }

    /** Sessions kept now. */
    public synchronized int size() {
        return sessions.size();
    }

    /** Partitions cached across the sessions. */
    public synchronized long partitions() {
        return cachedPartitions;
    }

    /** One partition a fetch reads, at the client's position. */
    public record Wanted(String topic, Uuid topicId, int partition, long fetchOffset, int maxBytes) {
        static Wanted of(FetchRequestData.FetchTopic t, FetchRequestData.FetchPartition p) {
            return new Wanted(t.topic(), t.topicId(), p.partition(), p.fetchOffset(), p.partitionMaxBytes());
        }

        Key key() {
            return new Key(topic, partition);
        }
    }

    private record Key(String topic, int partition) {
    }

    /** A partition in a session: the client's position and what the last response told it. */
    private static final class Cached {
        Wanted wanted;
        /** -1 until a response carries the partition, so the first one always does. */
        long highWatermark = -1;
        long lastStableOffset = -1;
        long logStartOffset = -1;

        Cached(Wanted wanted) {
            this.wanted = wanted;
        }

        /** Whether a response must carry {@code data}; remembers what it tells the client. */
        boolean mustRespond(FetchResponseData.PartitionData data) {
            boolean must = FetchResponse.recordsSize(data) > 0 || data.preferredReadReplica() >= 0;
            if (data.errorCode() != Errors.NONE.code()) {
                highWatermark = -1; // sent again once the error is gone
                return true;
            }
            if (highWatermark != data.highWatermark() || lastStableOffset != data.lastStableOffset()
                    || logStartOffset != data.logStartOffset()) {
                highWatermark = data.highWatermark();
                lastStableOffset = data.lastStableOffset();
                logStartOffset = data.logStartOffset();
                must = true;
            }
            return must;
        }
    }

    private static final class Session {
        final int id;
        final long createdNanos;
        /** The epoch the next incremental fetch must carry. */
        int epoch = FetchMetadata.nextEpoch(FetchMetadata.INITIAL_EPOCH);
        long lastUsedNanos;
        /** Its partitions as counted in {@link #cachedPartitions}; read and written under the cache's lock. */
        int counted;
        final LinkedHashMap<Key, Cached> partitions = new LinkedHashMap<>();

        Session(int id, long now) {
            this.id = id;
            this.createdNanos = now;
            this.lastUsedNanos = now;
        }
    }

    /**
     * What one fetch request reads and how its response is shaped. Built when the request arrives (the session's
     * epoch moves on then, as in Kafka); {@link #respond} is called once, when the fetch answers.
     */
    public final class Context {
        private final Errors error;
        private final List<Wanted> wanted;
        /** The session this fetch continues, or null. */
        private final Session session;
        /** Whether answering creates a session (a full fetch with epoch 0). */
        private final boolean create;

        private Context(Errors error, List<Wanted> wanted, Session session, boolean create) {
            this.error = error;
            this.wanted = wanted;
            this.session = session;
            this.create = create;
        }

        /** NONE, or the session error the whole fetch is answered with (read nothing then). */
        public Errors error() {
            return error;
        }

        /** The partitions to read, in the order their data goes into the response's byte budget. */
        public List<Wanted> partitions() {
            return wanted;
        }

        /**
         * The response, from the data read for each of {@link #partitions()} (same order): all of it for a full
         * fetch, the partitions with news for an incremental one. Data left out carries no records.
         */
        public FetchResponseData respond(List<FetchResponseData.PartitionData> data) {
            if (error != Errors.NONE) {
                return new FetchResponseData().setErrorCode(error.code())
                        .setSessionId(FetchMetadata.INVALID_SESSION_ID);
            }
            FetchResponseData response = new FetchResponseData().setErrorCode(Errors.NONE.code());
            if (session != null) {
                synchronized (session) {
                    List<Key> rotate = new ArrayList<>();
                    for (int i = 0; i < wanted.size(); i++) {
                        Cached c = session.partitions.get(wanted.get(i).key());
                        FetchResponseData.PartitionData d = data.get(i);
                        if (c == null || c.mustRespond(d)) {
                            add(response, wanted.get(i), d);
                            if (c != null && FetchResponse.recordsSize(d) > 0) {
                                rotate.add(wanted.get(i).key());
                            }
                        }
                    }
                    for (Key k : rotate) {
                        session.partitions.put(k, session.partitions.remove(k));
                    }
                }
                return response.setSessionId(session.id);
            }
            for (int i = 0; i < wanted.size(); i++) {
                add(response, wanted.get(i), data.get(i));
            }
            return response.setSessionId(create ? create(wanted, data) : FetchMetadata.INVALID_SESSION_ID);
        }
    }

    /** Adds one partition's data, under its topic's entry if the previous partition added was the same topic's. */
    private static void add(FetchResponseData response, Wanted w, FetchResponseData.PartitionData d) {
        List<FetchResponseData.FetchableTopicResponse> topics = response.responses();
        FetchResponseData.FetchableTopicResponse last = topics.isEmpty() ? null : topics.getLast();
        if (last == null || !last.topic().equals(w.topic()) || !last.topicId().equals(w.topicId())) {
            last = new FetchResponseData.FetchableTopicResponse().setTopic(w.topic()).setTopicId(w.topicId());
            topics.add(last);
        }
        last.partitions().add(d);
    }

    /** Reads a request's session fields and moves its session on. */
    public Context open(FetchRequestData request) {
        int id = request.sessionId();
        int epoch = request.sessionEpoch();
        if (epoch == FetchMetadata.INITIAL_EPOCH || epoch == FetchMetadata.FINAL_EPOCH) {
            if (id != FetchMetadata.INVALID_SESSION_ID) {
                close(id); // a full fetch closes the session it names
            }
            return new Context(Errors.NONE, requested(request), null,
                    epoch == FetchMetadata.INITIAL_EPOCH && maxSessions > 0);
        }
        Session session;
        synchronized (this) {
            session = sessions.get(id); // access order: now the most recently used
        }
        if (session == null) {
            return new Context(Errors.FETCH_SESSION_ID_NOT_FOUND, List.of(), null, false);
        }
        List<Wanted> wanted;
        synchronized (session) {
            if (session.epoch != epoch) {
                return new Context(Errors.INVALID_FETCH_SESSION_EPOCH, List.of(), null, false);
            }
            for (FetchRequestData.FetchTopic t : request.topics()) {
                for (FetchRequestData.FetchPartition p : t.partitions()) {
                    Wanted w = Wanted.of(t, p);
                    Cached c = session.partitions.get(w.key());
                    if (c == null) {
                        session.partitions.put(w.key(), new Cached(w));
                    } else {
                        c.wanted = w;
                    }
                }
            }
            for (FetchRequestData.ForgottenTopic t : request.forgottenTopicsData()) {
                for (int p : t.partitions()) {
                    session.partitions.remove(new Key(t.topic(), p));
                }
            }
            session.epoch = FetchMetadata.nextEpoch(session.epoch);
            session.lastUsedNanos = nanoClock.getAsLong();
            wanted = new ArrayList<>(session.partitions.size());
            for (Cached c : session.partitions.values()) {
                wanted.add(c.wanted);
            }
        }
        synchronized (this) {
            if (sessions.get(id) == session) { // not closed or evicted meanwhile
                cachedPartitions += wanted.size() - session.counted;
                session.counted = wanted.size();
                if (wanted.isEmpty()) {
                    sessions.remove(id); // nothing left to fetch: as Kafka, the session ends
                }
            }
        }
        return new Context(Errors.NONE, wanted, wanted.isEmpty() ? null : session, false);
    }

    private static List<Wanted> requested(FetchRequestData request) {
        List<Wanted> wanted = new ArrayList<>();
        for (FetchRequestData.FetchTopic t : request.topics()) {
            for (FetchRequestData.FetchPartition p : t.partitions()) {
                wanted.add(Wanted.of(t, p));
            }
        }
        return wanted;
    }

    private synchronized void close(int id) {
        Session s = sessions.remove(id);
        if (s != null) {
            cachedPartitions -= s.counted;
        }
    }

    /** Creates a session holding what a full fetch answered; its id, or 0 when there is no room. */
    private int create(List<Wanted> wanted, List<FetchResponseData.PartitionData> data) {
        long now = nanoClock.getAsLong();
        synchronized (this) {
            if (sessions.size() >= maxSessions && !evictFor(wanted.size(), now)) {
                return FetchMetadata.INVALID_SESSION_ID;
            }
            int id;
            do {
                id = ThreadLocalRandom.current().nextInt(1, Integer.MAX_VALUE);
            } while (sessions.containsKey(id));
            Session session = new Session(id, now);
            for (int i = 0; i < wanted.size(); i++) {
                Cached c = new Cached(wanted.get(i));
                c.mustRespond(data.get(i));
                session.partitions.put(wanted.get(i).key(), c);
            }
            session.counted = session.partitions.size();
            sessions.put(id, session);
            cachedPartitions += session.counted;
            return id;
        }
    }

    /** Makes room for a session of {@code size} partitions; whether it did. Holds this cache's lock. */
    private boolean evictFor(int size, long now) {
        long idle = TimeUnit.MILLISECONDS.toNanos(EVICTION_IDLE_MS);
        Iterator<Map.Entry<Integer, Session>> lru = sessions.entrySet().iterator();
        if (lru.hasNext()) {
            Session oldest = lru.next().getValue();
            if (now - oldest.lastUsedNanos > idle) {
                evict(oldest);
                return true;
            }
        }
        Session smallest = null;
        for (Session s : sessions.values()) {
            if (now - s.createdNanos > idle && (smallest == null || s.counted < smallest.counted)) {
                smallest = s;
            }
        }
        if (smallest != null && smallest.counted < size) {
            evict(smallest);
            return true;
        }
        return false;
    }

    private void evict(Session s) {
        sessions.remove(s.id);
        cachedPartitions -= s.counted;
        if (evictions != null) {
            evictions.increment();
        }
    }
}
