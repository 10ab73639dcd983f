package io.s3stream.kafka.shell.topic;

import io.s3stream.KeyValues;
import io.s3stream.Stream;
import io.s3stream.StreamStorage;
import io.s3stream.kafka.shell.log.PartitionLog;
import io.s3stream.kafka.shell.log.TimeIndex;
import io.s3stream.kafka.shell.network.ApiFamily;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.protocol.Errors;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Topics, partition leadership and the broker list of a cluster of shells sharing one object store.
 *
 * <h2>Records in the manifest's key-value space</h2>
 * <ul>
 *   <li>{@code kafka/topic/<name>}: id, partition count, per partition the stream id, configs, and the node that
 *       created it (and each added partition), which leads it first.</li>
 *   <li>{@code kafka/leader/<topic>/<partition>}: {@code leader,epoch,target}. The leader is the one shell that has
 *       the partition's stream open; it opens it at {@code epoch} (bumped by compare-and-set on every open, which
 *       fences any earlier handle). {@code target >= 0} asks the leader to hand the partition over.</li>
 *   <li>{@code kafka/broker/<id>}: {@code host:port} of a running shell (written at start, deleted at clean stop).</li>
 *   <li>{@code kafka/destroy/<stream id>}: a stream of a deleted topic not destroyed yet ({@link StreamDestroyer}),
 *       or one no topic recorded because its creation did not finish ({@link OrphanStreams}).</li>
 * </ul>
 *
 * <h2>Reconciling</h2>
 * {@link #reconcile()} runs at start and then every {@code s3stream.kafka.reconcile.ms} on each shell: it picks up
 * topics created, grown or deleted elsewhere, opens partitions whose record names this shell (after a restart, or
 * when a partition was handed to it), hands over partitions whose record has a target (retire: appends answer
 * NOT_LEADER_OR_FOLLOWER, the stream is closed, which uploads its data, then the record names the target), and
 * drops partitions that another shell took. The stream's own ownership rule (openStream fails while another node
 * has it open) and epochs keep two shells from writing one partition even if records are stale.
 */
public final class TopicRegistry {
    static final String PREFIX = "kafka/topic/";
    public static final String LEADER_PREFIX = "kafka/leader/";
    public static final String BROKER_PREFIX = "kafka/broker/";
    private static final System.Logger LOG = System.getLogger(TopicRegistry.class.getName());

    /** One partition as this shell sees it: its stream, who leads it, and the open log when this shell does. */
    public static final class Slot {
        final int index;
        final long streamId;
        volatile PartitionLog log;
        volatile int leader = -1;
        volatile long epoch;
        volatile int target = -1;
        /** Set while the stream of a log whose append failed is being closed, before it is reopened. */
        volatile CompletableFuture<Void> reopening;

        Slot(int index, long streamId) {
            this.index = index;
            this.streamId = streamId;
        }

        public int index() {
            return index;
        }

        /** The shell that leads the partition, -1 while none does. */
        public int leader() {
            return leader;
        }

        /** The partition's leader epoch: the epoch its stream was last opened at. */
        public long epoch() {
            return epoch;
        }

        /** Whether an append failed here: the log says so, or its stream is being closed to be reopened. */
        public boolean appendFailed() {
            PartitionLog l = log;
            return reopening != null || l != null && l.failure() != null;
        }
    }

    /** A topic and its partitions. */
    public record Topic(String name, Uuid id, List<Slot> slots, Map<String, String> configs, BooleanSupplier serving) {
        /**
         * The open log if this shell leads partition {@code p} and may serve now (its cluster lease is surely valid),
         * else null: the caller answers NOT_LEADER_OR_FOLLOWER and the client refreshes its metadata.
         */
        public PartitionLog partition(int p) {
            if (!serving.getAsBoolean()) {
                return null;
            }
            Slot s = slot(p);
            PartitionLog log = s == null ? null : s.log;
            return log == null || log.retired() ? null : log;
        }

        public Slot slot(int p) {
            return p >= 0 && p < slots.size() ? slots.get(p) : null;
        }

        int partitionCount() {
            return slots.size();
        }

        /** The logs of the partitions this shell leads. */
        public List<PartitionLog> ledHere() {
            List<PartitionLog> out = new ArrayList<>();
            for (Slot s : slots) {
                PartitionLog log = s.log;
                if (log != null && !log.retired()) {
                    out.add(log);
                }
            }
            return out;
        }
    }

    private final StreamStorage storage;
    private final KeyValues kv;
    private final Executor blocking;
    private final int nodeId;
    private final TopicMap topics = new TopicMap();
    private final ConcurrentHashMap<String, CompletableFuture<Topic>> creating = new ConcurrentHashMap<>();
    private final java.util.Set<String> deleting = ConcurrentHashMap.newKeySet();
    private volatile SortedMap<Integer, String> brokers = new TreeMap<>();
    /** Each registered shell's endpoints by listener name (empty for a shell registered by an older version). */
    private volatile Map<Integer, Map<String, String>> endpoints = Map.of();
    private volatile BooleanSupplier servingCheck = () -> true;
    private final StreamDestroyer destroyer;
    private final OrphanStreams orphans;

    public TopicRegistry(StreamStorage storage, Executor blocking, int nodeId, long orphanGraceMs) {
        this.storage = storage;
        this.kv = storage.keyValues();
        this.blocking = blocking;
        this.nodeId = nodeId;
        this.destroyer = new StreamDestroyer(storage, kv, System::nanoTime, TimeUnit.SECONDS.toNanos(1));
        this.orphans = new OrphanStreams(storage, kv, nodeId, System::nanoTime,
                TimeUnit.MILLISECONDS.toNanos(orphanGraceMs));
    }

    /** Serving is allowed only while {@code check} says so (the cluster lease); until set, always. */
    public void servingWhile(BooleanSupplier check) {
        this.servingCheck = check;
    }

    private boolean serving() {
        return servingCheck.getAsBoolean();
    }

    // ---------------------------------------------------------------- brokers

    /**
     * Registers this shell with its endpoints, listener name → host:port, the first being the one older shells (and
     * {@link #brokers()}) know it by. Stored as that host:port on the first line, then one {@code NAME host:port} line
     * per listener.
     */
    public void registerBroker(java.util.SequencedMap<String, String> endpoints) {
        StringBuilder value = new StringBuilder(endpoints.firstEntry().getValue());
        endpoints.forEach((name, hostPort) -> value.append('\n').append(name).append(' ').append(hostPort));
        kv.put(BROKER_PREFIX + nodeId, value.toString().getBytes(StandardCharsets.UTF_8)).join();
        refreshBrokers();
    }

    public void unregisterBroker() {
        kv.delete(BROKER_PREFIX + nodeId).join();
    }

    /** Registered shells: node id → host:port (of each shell's first listener). */
    public SortedMap<Integer, String> brokers() {
        return brokers;
    }

    /**
     * Registered shells: node id → host:port on listener {@code name} (Kafka answers each client with the endpoints of
     * the listener it came in on), or on a shell's first listener when it has none of that name.
     */
    public SortedMap<Integer, String> brokersOn(String name) {
        SortedMap<Integer, String> out = new TreeMap<>(brokers);
        endpoints.forEach((id, byName) -> {
            String hostPort = byName.get(name);
            if (hostPort != null) {
                out.put(id, hostPort);
            }
        });
        return out;
    }

    /** The registered shells as the manifest has them now, not as of the last reconcile (to validate a request). */
    public SortedMap<Integer, String> brokersNow() {
        refreshBrokers();
        return brokers;
    }

    private void refreshBrokers() {
        SortedMap<Integer, String> m = new TreeMap<>();
        Map<Integer, Map<String, String>> e = new HashMap<>();
        kv.list(BROKER_PREFIX).join().forEach((k, v) -> {
            int id = Integer.parseInt(k.substring(BROKER_PREFIX.length()));
            String[] lines = new String(v, StandardCharsets.UTF_8).split("\n");
            m.put(id, lines[0]);
            Map<String, String> byName = new HashMap<>();
            for (int i = 1; i < lines.length; i++) {
                int space = lines[i].indexOf(' ');
                if (space > 0) {
                    byName.put(lines[i].substring(0, space), lines[i].substring(space + 1));
                }
            }
            e.put(id, Map.copyOf(byName));
        });
        endpoints = Map.copyOf(e);
        brokers = m;
    }

    // ---------------------------------------------------------------- reading

    /** Why partition {@code p} of {@code t} has no log here: no such partition, or another shell leads it. */
    public static Errors missing(Topic t, int p) {
        return t == null || t.slot(p) == null ? Errors.UNKNOWN_TOPIC_OR_PARTITION : Errors.NOT_LEADER_OR_FOLLOWER;
    }

    /** The shared key-value space the registry keeps topics in (also group configs). */
    public KeyValues kv() {
        return kv;
    }

    public Topic get(String name) {
        return topics.get(name);
    }

    public Topic byId(Uuid id) {
        return topics.byId(id);
    }

    public Collection<Topic> all() {
        return topics.sorted().values();
    }

    /**
     * Every topic's name, with the version of the layout: it moves when a name comes or goes or a topic's partition
     * count changes ({@link TopicMap}).
     */
    public TopicMap.Names names() {
        return topics.names();
    }

    // ---------------------------------------------------------------- reconcile

    /** Brings this shell in line with the records (see the class comment). Never throws; problems are logged. */
    public synchronized void reconcile() {
        try {
            refreshBrokers();
            SortedMap<String, byte[]> records = kv.list(PREFIX).join();
            for (String name : List.copyOf(topics.keySet())) {
                if (!records.containsKey(PREFIX + name) && !creating.containsKey(name)) {
                    Topic gone = topics.remove(name);
                    if (gone != null) {
                        destroyLedHere(gone);
                    }
                }
            }
            orphans.sweep(creating::containsKey);
            destroyer.sweep(this::openHere);
            SortedMap<String, byte[]> leaders = kv.list(LEADER_PREFIX).join();
            for (Map.Entry<String, byte[]> e : records.entrySet()) {
                String name = e.getKey().substring(PREFIX.length());
                if (creating.containsKey(name) || deleting.contains(name)) {
                    continue; // this shell is creating it (create() installs it) or deleting it
                }
                Properties p = StoredProperties.parse(e.getValue());
                Topic t = topicFrom(name, p);
                for (Slot s : t.slots()) {
                    try {
                        reconcileSlot(t, s, p, leaders.get(leaderKey(name, s.index)));
                    } catch (RuntimeException ex) {
                        LOG.log(System.Logger.Level.WARNING, () -> "partition " + name + "-" + s.index
                                + ": leadership not settled this round", ex);
                    }
                }
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "reconciling topics failed; retried next round", e);
        }
    }

    /** Whether this shell has stream {@code streamId} open as a partition's log. */
    private boolean openHere(long streamId) {
        for (Topic t : topics.values()) {
            for (Slot s : t.slots()) {
                if (s.streamId == streamId && s.log != null) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The topic for record {@code p}: the known one, grown if the record has more partitions, or a new one. */
    private Topic topicFrom(String name, Properties p) {
        Uuid id = Uuid.fromString(p.getProperty("id"));
        int n = Integer.parseInt(p.getProperty("partitions"));
        Topic t = topics.get(name);
        if (t != null && t.id().equals(id) && t.partitionCount() >= n) {
            Map<String, String> configs = configsOf(p);
            if (!configs.equals(t.configs())) { // altered on some shell
                Topic altered = new Topic(name, id, t.slots(), configs, this::serving);
                topics.put(name, altered);
                return altered;
            }
            return t;
        }
        List<Slot> slots = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Slot known = t != null && t.id().equals(id) ? t.slot(i) : null;
            slots.add(known != null ? known : new Slot(i, TopicRecord.stream(p, i)));
        }
        Topic grown = new Topic(name, id, List.copyOf(slots), configsOf(p), this::serving);
        topics.put(name, grown);
        return grown;
    }

    private void reconcileSlot(Topic t, Slot s, Properties topicRecord, byte[] record) {
        String key = leaderKey(t.name(), s.index);
        if (record == null) {
            // Legacy topics (before leader records) are claimed by whoever gets there first; a new partition's
            // creator writes its record right after the topic record, so others wait for it.
            String creator = topicRecord.getProperty("creator." + s.index, topicRecord.getProperty("creator"));
            if (creator != null && Integer.parseInt(creator) != nodeId) {
                s.leader = Integer.parseInt(creator);
                return;
            }
            long legacyEpoch = Long.parseLong(topicRecord.getProperty("epoch." + s.index, "0"));
            byte[] mine = leaderRecord(nodeId, legacyEpoch, -1);
            if (kv.compareAndSet(key, null, mine).join()) {
                record = mine;
            } else {
                return; // someone else did; next round
            }
        }
        long[] r = parseLeader(record);
        int leader = (int) r[0];
        long epoch = r[1];
        int target = (int) r[2];
        s.leader = leader;
        s.epoch = epoch;
        s.target = target;
        PartitionLog log = s.log;
        if (leader == nodeId) {
            if (target >= 0 && target != nodeId) {
                handOver(t, s, key, record, target, epoch);
                return;
            }
            CompletableFuture<Void> closing = s.reopening;
            if (closing != null) {
                if (!closing.isDone()) {
                    return; // a failed stream is still being closed; reopened on the round after
                }
                s.reopening = null;
            }
            if (log != null && !log.retired() && log.failure() != null) {
                // An append failed (the WAL or log cache stayed full, an object-store error outlasted the retries):
                // the stream refuses appends from then on, so that it has no hole. Reopening it at a higher epoch
                // recovers it to its durable end and serves again, rather than failing every produce until a move.
                // Its close waits for its uploads (the store may still be failing), so it runs off this thread.
                Throwable why = log.failure();
                LOG.log(System.Logger.Level.WARNING, () -> "partition " + t.name() + "-" + s.index + ": an append "
                        + "failed (" + why + "); closing its stream to reopen it", why);
                s.log = null;
                s.reopening = log.retire().exceptionally(e -> null);
                return;
            }
            if (log == null || log.retired()) {
                byte[] bumped = leaderRecord(nodeId, epoch + 1, target);
                if (!kv.compareAndSet(key, record, bumped).join()) {
                    return; // changed meanwhile; next round
                }
                Stream stream = storage.openStream(s.streamId, epoch + 1).join();
                s.epoch = epoch + 1;
                s.log = new PartitionLog(t.name(), s.index, stream, blocking, kv);
                LOG.log(System.Logger.Level.DEBUG, () -> "partition " + t.name() + "-" + s.index + " led here at epoch "
                        + (epoch + 1));
            }
        } else if (log != null && !log.retired()) {
            // Another shell leads it now (it fenced us, or the record moved): stop serving it.
            s.log = null;
            log.retire().exceptionally(e -> null);
        }
    }

    /**
     * Retires the partition here (its stream is closed: data uploaded), then names {@code target} the leader. A shell
     * that restarted after the move was asked has no handle, but its previous instance may still hold the stream open
     * in the manifest, where only this node can close it: it opens the stream at the next epoch and closes it, so the
     * target can open it (ChaosIT seed 42: the target was refused "held open by node 3" until the end of the run).
     */
    private void handOver(Topic t, Slot s, String key, byte[] record, int target, long epoch) {
        long started = System.nanoTime();
        PartitionLog log = s.log;
        long handedEpoch = epoch;
        if (log != null) {
            log.retire().join();
        } else {
            storage.openStream(s.streamId, epoch + 1).thenCompose(Stream::close).join();
            handedEpoch = epoch + 1;
        }
        s.log = null;
        if (kv.compareAndSet(key, record, leaderRecord(target, handedEpoch, -1)).join()) {
            s.leader = target;
            s.target = -1;
            LOG.log(System.Logger.Level.INFO, () -> "partition " + t.name() + "-" + s.index + " handed to node " + target
                    + " (closed and uploaded in " + (System.nanoTime() - started) / 1_000_000 + " ms)");
        }
    }

    /**
     * Asks the leader of {@code topic-partition} to hand it to {@code target} (AlterPartitionReassignments); the move
     * completes asynchronously at the leader's and the target's next reconcile. {@code target < 0} cancels.
     */
    void reassign(String topic, int partition, int target) {
        String key = leaderKey(topic, partition);
        for (int attempt = 0; attempt < 10; attempt++) {
            byte[] record = kv.get(key).join().orElseThrow(() -> new UnknownTopicOrPartitionException(
                    "partition " + topic + "-" + partition + " has no leader yet"));
            long[] r = parseLeader(record);
            int newTarget = target == r[0] ? -1 : target;
            if (newTarget == r[2]) {
                return;
            }
            if (kv.compareAndSet(key, record, leaderRecord((int) r[0], r[1], newTarget)).join()) {
                Topic t = topics.get(topic);
                Slot s = t == null ? null : t.slot(partition);
                if (s != null) {
                    s.target = newTarget;
                }
                return;
            }
        }
        throw new IllegalStateException("partition " + topic + "-" + partition + " record kept changing");
    }

    /**
     * The shells that lead a partition or are the target of a move into one, as the manifest has them now; a shell
     * among them that is neither registered nor holding a lease strands those partitions (see
     * {@code ClusterMembership}).
     */
    public java.util.Set<Integer> leadersAndTargets() {
        java.util.Set<Integer> out = new java.util.TreeSet<>();
        for (byte[] record : kv.list(LEADER_PREFIX).join().values()) {
            long[] r = parseLeader(record);
            if (r[0] >= 0) {
                out.add((int) r[0]);
            }
            if (r[2] >= 0) {
                out.add((int) r[2]);
            }
        }
        return out;
    }

    /**
     * Failover: points every partition led by (or moving to) {@code deadId} at the live shell that leads the fewest
     * partitions, by compare-and-set on the leader records (the epoch is bumped by the new leader when it opens the
     * partition). Returns how many partitions were moved.
     */
    public int reassignAllFrom(int deadId, Collection<Integer> liveIds) {
        List<Integer> candidates = liveIds.stream().filter(id -> id != deadId).sorted().toList();
        if (candidates.isEmpty()) {
            LOG.log(System.Logger.Level.WARNING, "no live shell to take node " + deadId + "'s partitions");
            return 0;
        }
        SortedMap<String, byte[]> leaders = kv.list(LEADER_PREFIX).join();
        Map<Integer, Integer> load = new java.util.HashMap<>();
        candidates.forEach(id -> load.put(id, 0));
        for (byte[] record : leaders.values()) {
            load.computeIfPresent((int) parseLeader(record)[0], (k, v) -> v + 1);
        }
        int moved = 0;
        for (Map.Entry<String, byte[]> e : leaders.entrySet()) {
            long[] r = parseLeader(e.getValue());
            boolean ledByDead = r[0] == deadId;
            boolean movingToDead = r[2] == deadId;
            if (!ledByDead && !movingToDead) {
                continue;
            }
            int to = (int) r[0];
            if (ledByDead) {
                for (int id : candidates) {
                    if (to == deadId || load.get(id) < load.get(to)) {
                        to = id;
                    }
                }
            }
            if (kv.compareAndSet(e.getKey(), e.getValue(), leaderRecord(to, r[1], -1)).join()) {
                if (ledByDead) {
                    load.merge(to, 1, Integer::sum);
                    moved++;
                }
            }
        }
        return moved;
    }

    /**
     * Hands every partition this shell leads to the other live shells, least loaded first, and waits for the
     * handovers (each closes the stream, which uploads its data): the drain of a clean shutdown. Returns how many
     * partitions moved.
     */
    public int drainTo(Collection<Integer> others) {
        List<Integer> targets = others.stream().filter(id -> id != nodeId).sorted().toList();
        if (targets.isEmpty()) {
            return 0;
        }
        SortedMap<String, byte[]> leaders = kv.list(LEADER_PREFIX).join();
        Map<Integer, Integer> load = new java.util.HashMap<>();
        targets.forEach(id -> load.put(id, 0));
        for (byte[] record : leaders.values()) {
            load.computeIfPresent((int) parseLeader(record)[0], (k, v) -> v + 1);
        }
        int moved = 0;
        for (Map.Entry<String, byte[]> e : leaders.entrySet()) {
            long[] r = parseLeader(e.getValue());
            if (r[0] != nodeId) {
                continue;
            }
            int to = targets.getFirst();
            for (int id : targets) {
                if (load.get(id) < load.get(to)) {
                    to = id;
                }
            }
            if (kv.compareAndSet(e.getKey(), e.getValue(), leaderRecord(nodeId, r[1], to)).join()) {
                load.merge(to, 1, Integer::sum);
                moved++;
            }
        }
        reconcile(); // hands them over now
        return moved;
    }

    // ---------------------------------------------------------------- create, grow, delete

    /** Creates a topic with {@code partitions} streams, led by this shell; fails with TopicExistsException if it exists. */
    public CompletableFuture<Topic> create(String name, int partitions, Map<String, String> configs) {
        try {
            TopicMap.validateName(name);
        } catch (InvalidTopicException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (partitions < 1) {
            return CompletableFuture.failedFuture(new InvalidPartitionsException("Number of partitions must be at least 1"));
        }
        if (topics.containsKey(name)) {
            return CompletableFuture.failedFuture(new TopicExistsException("Topic '" + name + "' already exists."));
        }
        CompletableFuture<Topic> mine = new CompletableFuture<>();
        CompletableFuture<Topic> existing = creating.putIfAbsent(name, mine);
        if (existing != null) {
            return existing.thenCompose(t -> CompletableFuture.failedFuture(
                    new TopicExistsException("Topic '" + name + "' already exists.")));
        }
        List<CompletableFuture<Stream>> streams = new ArrayList<>();
        for (int i = 0; i < partitions; i++) {
            streams.add(storage.createStream(OrphanStreams.partitionStream(name, i)));
        }
        Uuid id = Uuid.randomUuid();
        CompletableFuture.allOf(streams.toArray(CompletableFuture[]::new)).thenCompose(v -> {
            Properties p = new Properties();
            p.setProperty("id", id.toString());
            p.setProperty("partitions", Integer.toString(partitions));
            p.setProperty("creator", Integer.toString(nodeId));
            for (int i = 0; i < partitions; i++) {
                TopicRecord.stream(p, i, streams.get(i).join().streamId());
            }
            configs.forEach((k, val) -> p.setProperty("config." + k, val));
            return kv.compareAndSet(PREFIX + name, null, StoredProperties.format(p));
        }).thenCompose(created -> {
            if (!created) {
                return CompletableFuture.completedFuture(false);
            }
            List<CompletableFuture<Void>> records = new ArrayList<>();
            for (int i = 0; i < partitions; i++) {
                records.add(kv.put(leaderKey(name, i), leaderRecord(nodeId, 0, -1)));
            }
            return CompletableFuture.allOf(records.toArray(CompletableFuture[]::new)).thenApply(v -> true);
        }).whenComplete((created, e) -> {
            if (e == null && !created) {
                e = new TopicExistsException("Topic '" + name + "' already exists.");
            }
            if (e != null) {
                for (CompletableFuture<Stream> s : streams) {
                    s.thenAccept(Stream::destroy);
                }
                creating.remove(name);
                mine.completeExceptionally(e);
                return;
            }
            List<Slot> slots = new ArrayList<>();
            for (int i = 0; i < partitions; i++) {
                Stream stream = streams.get(i).join();
                Slot s = new Slot(i, stream.streamId());
                s.leader = nodeId;
                s.log = new PartitionLog(name, i, stream, blocking, kv);
                slots.add(s);
            }
            Topic t = new Topic(name, id, List.copyOf(slots), Map.copyOf(configs), this::serving);
            topics.put(name, t);
            creating.remove(name);
            mine.complete(t);
        });
        return mine;
    }

    /**
     * Grows a topic to {@code count} partitions, led by this shell: creates the new streams, then records them with
     * a compare-and-set of the topic's key (so two shells cannot both add partitions); on failure they are destroyed.
     */
    synchronized CompletableFuture<Topic> addPartitions(String name, int count) {
        Topic t = topics.get(name);
        if (t == null) {
            return CompletableFuture.failedFuture(new UnknownTopicOrPartitionException("Topic '" + name + "' does not exist."));
        }
        int current = t.partitionCount();
        if (count <= current) {
            return CompletableFuture.failedFuture(new InvalidPartitionsException("Topic currently has " + current
                    + " partitions, which is higher than or equal to the requested " + count + "."));
        }
        List<Stream> created = new ArrayList<>();
        try {
            for (int i = current; i < count; i++) {
                created.add(storage.createStream(OrphanStreams.partitionStream(name, i)).join());
            }
            byte[] before = kv.get(PREFIX + name).join().orElseThrow(
                    () -> new UnknownTopicOrPartitionException("Topic '" + name + "' does not exist."));
            Properties p = StoredProperties.parse(before);
            if (Integer.parseInt(p.getProperty("partitions")) != current) {
                throw new InvalidPartitionsException("Topic '" + name + "' changed meanwhile; retry");
            }
            p.setProperty("partitions", Integer.toString(count));
            for (int i = current; i < count; i++) {
                TopicRecord.stream(p, i, created.get(i - current).streamId());
                p.setProperty("creator." + i, Integer.toString(nodeId));
            }
            if (!kv.compareAndSet(PREFIX + name, before, StoredProperties.format(p)).join()) {
                throw new InvalidPartitionsException("Topic '" + name + "' changed meanwhile; retry");
            }
            for (int i = current; i < count; i++) {
                kv.put(leaderKey(name, i), leaderRecord(nodeId, 0, -1)).join();
            }
        } catch (RuntimeException e) {
            created.forEach(Stream::destroy);
            Throwable c = ApiFamily.cause(e);
            return CompletableFuture.failedFuture(c);
        }
        List<Slot> slots = new ArrayList<>(t.slots());
        for (int i = current; i < count; i++) {
            Stream stream = created.get(i - current);
            Slot s = new Slot(i, stream.streamId());
            s.leader = nodeId;
            s.log = new PartitionLog(name, i, stream, blocking, kv);
            slots.add(s);
        }
        Topic grown = new Topic(name, t.id(), List.copyOf(slots), t.configs(), this::serving);
        topics.put(name, grown);
        return CompletableFuture.completedFuture(grown);
    }

    /**
     * Deletes a topic: its record, its partitions' leader records and transaction checkpoints go in one atomic change
     * with a {@code kafka/destroy/} key per stream (from then on the topic is deleted, here and on every shell, and
     * nothing of it is left in the key-value space but those keys), then this shell destroys the streams it leads;
     * other shells destroy theirs when they next reconcile and find the topic gone, and a stream nobody destroyed (its
     * leader down, a destroy that failed) is destroyed by a later sweep ({@link StreamDestroyer}). If the change cannot
     * be made (the metadata store failing, a full disk under {@code file://}), nothing changed: the topic is back and
     * the error says to retry. A destroy that fails after that point is logged with the partition; it does not undo
     * the deletion.
     */
    CompletableFuture<Void> delete(String name) {
        Topic t = topics.remove(name);
        if (t == null) {
            return CompletableFuture.failedFuture(new UnknownTopicOrPartitionException("Topic '" + name + "' does not exist."));
        }
        deleting.add(name);
        List<Long> streamIds = new ArrayList<>();
        List<String> gone = new ArrayList<>(List.of(PREFIX + name));
        for (Slot s : t.slots()) {
            streamIds.add(s.streamId);
            gone.add(leaderKey(name, s.index));
            gone.add(PartitionLog.transactionsKey(s.streamId));
            gone.add(TimeIndex.key(s.streamId));
        }
        CompletableFuture<Void> deleted = kv.update(StreamDestroyer.keysOf(name, streamIds), gone)
                .handle((v, e) -> {
                    if (e == null) {
                        return null;
                    }
                    topics.putIfAbsent(name, t);
                    Throwable cause = ApiFamily.cause(e);
                    LOG.log(System.Logger.Level.WARNING, () -> "deleting topic " + name
                            + " failed, the topic is unchanged: " + cause);
                    throw new KafkaStorageException("Deleting topic '" + name + "' failed, the topic is unchanged; "
                            + "retry. Cause: " + cause.getMessage(), cause);
                });
        return deleted.thenCompose(v -> destroyLedHere(t)).whenComplete((v, e) -> deleting.remove(name));
    }

    private static CompletableFuture<Void> logged(CompletableFuture<Void> step, String topic, int partition, String what) {
        return step.exceptionally(e -> {
            LOG.log(System.Logger.Level.WARNING, () -> "deleted topic " + topic + ": removing partition " + partition
                    + "'s " + what + " failed: " + ApiFamily.cause(e));
            return null;
        });
    }

    private CompletableFuture<Void> destroyLedHere(Topic t) {
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (Slot s : t.slots()) {
            PartitionLog log = s.log;
            s.log = null;
            if (log != null) {
                all.add(logged(destroyer.destroy(log.stream()), t.name(), s.index, "stream " + s.streamId));
            }
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new));
    }

    /**
     * Changes topic configs ({@code null} value: back to the default) with a compare-and-set of the topic's record;
     * other shells pick the change up when they next reconcile.
     */
    synchronized void alterConfigs(String name, Map<String, String> changes) {
        byte[] stored = kv.compute(PREFIX + name, before -> {
            Properties p = StoredProperties.parse(before.orElseThrow(
                    () -> new UnknownTopicOrPartitionException("Topic '" + name + "' does not exist.")));
            changes.forEach((k, v) -> {
                if (v == null) {
                    p.remove("config." + k);
                } else {
                    p.setProperty("config." + k, v);
                }
            });
            return StoredProperties.format(p);
        }, 10).join().orElseThrow();
        Topic t = topics.get(name);
        if (t != null) {
            topics.put(name, new Topic(name, t.id(), t.slots(), configsOf(StoredProperties.parse(stored)),
                    this::serving));
        }
    }

    // ---------------------------------------------------------------- encoding

    public static String leaderKey(String topic, int partition) {
        return LEADER_PREFIX + topic + "/" + partition;
    }

    public static byte[] leaderRecord(int leader, long epoch, int target) {
        return (leader + "," + epoch + "," + target).getBytes(StandardCharsets.UTF_8);
    }

    /** {leader, epoch, target}. */
    public static long[] parseLeader(byte[] record) {
        String[] p = new String(record, StandardCharsets.UTF_8).split(",");
        return new long[] {Long.parseLong(p[0]), Long.parseLong(p[1]), Long.parseLong(p[2])};
    }

    private static Map<String, String> configsOf(Properties p) {
        Map<String, String> configs = new TreeMap<>();
        for (String k : p.stringPropertyNames()) {
            if (k.startsWith("config.")) {
                configs.put(k.substring("config.".length()), p.getProperty(k));
            }
        }
        return Map.copyOf(configs);
    }
}
