package io.s3stream.internal.manifest;

import io.s3stream.CorruptDataException;
import io.s3stream.StorageIOException;
import io.s3stream.StreamOptions;
import io.s3stream.internal.metadata.ManifestState;
import io.s3stream.internal.metadata.ManifestOp;
import io.s3stream.internal.util.Executors2;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.NodeMetadata;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectNotFoundException;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.StreamMetadata;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SortedMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The default {@link MetadataStore}: the manifest kept in the object store as an append-only log of small immutable
 * objects plus periodic checkpoints, shared safely by any number of nodes with no server besides the store. The design,
 * its failure cases and measured costs are in docs/0001-manifest.md.
 *
 * <h2>Protocol</h2>
 * The state is a deterministic function of a log. Entry {@code n} lives at {@code <prefix>log/<n, 20 digits>} and
 * holds one or more {@link ManifestOp}s with the instant they apply at; a checkpoint {@code <prefix>checkpoint/<n>}
 * holds the whole state after entry {@code n} (layouts in {@link ManifestFormat}). Each store instance keeps a
 * <em>view</em>: a {@link ManifestState} (the same rules as the in-memory store) that has applied entries
 * {@code 1..viewSeq}. To commit, the writer validates against its view ({@link ManifestState#check}, no mutation),
 * encodes entry {@code viewSeq + 1} and creates it with {@link ObjectStore#putIfAbsent} ({@code If-None-Match: *} on
 * S3). The store lets exactly one writer create each key, so the winner's entry follows exactly the state it validated
 * against, and applying it cannot fail. A loser reads the entry that beat it, applies it, re-validates (now possibly
 * failing with the proper typed exception) and tries the next number, at once: every loss is another writer's
 * progress, so there is no livelock to back off from. A refusal against a view that may be stale is confirmed by
 * reading new entries first, so a caller is never refused because of something its view had not yet seen.
 *
 * <h2>Concurrency</h2>
 * One platform thread per instance, the <em>conductor</em>, owns the log position: it runs every commit, the poll and
 * catch-up, one at a time, so commits of one instance never race each other. Key-value changes queued together share
 * one entry ({@link CommitQueue}), and a writer that fills the log back to back yields now and then
 * ({@link ClaimPacer}), so that a busy node cannot starve the others' commits. The view is guarded by its own
 * monitor: reads ({@code getStream}, {@code getObjects}, {@code listKv} ...) are served on the caller's thread from
 * memory. Checkpoints are written and garbage collected on a second thread ({@link CheckpointWriter}).
 *
 * <h2>Durability and staleness</h2>
 * A commit completes only after its entry exists in the store: a successful future means durable. A node sees its
 * own commits at once; other nodes' commits reach its view when it next commits, loses a race, or polls (every
 * {@code pollMs}, one GET of the next key). Changes that decide ownership (open, close, commit) are validated against
 * the log tip, never against a stale view. Start-up loads the latest checkpoint and the entries after it.
 *
 * <h2>Failure</h2>
 * An unclear outcome (a create that failed or timed out) is resolved by reading the key and comparing it byte for
 * byte with the writer's own entry (which carries a random writer id and a counter), so an entry is never applied
 * twice nor lost. Store errors are retried with backoff and full jitter, {@code maxAttempts} times per request; then
 * the caller gets {@link StorageIOException} and the view is unchanged. A node whose node epoch was superseded is
 * refused with {@link io.s3stream.NodeFencedException} on its next commit. An entry or checkpoint that does not
 * decode, or a gap in the log, fails start-up or every later commit with {@link CorruptDataException} naming the key.
 * A writer never claims a number that garbage collection deleted: entries go only below a checkpoint that is
 * {@code gcGraceMs} old, and a writer whose view is older than {@code gcGraceMs / 2} first lists checkpoints.
 */
public final class ManifestMetadataStore implements MetadataStore {

    private static final System.Logger LOG = System.getLogger(ManifestMetadataStore.class.getName());
    private static final int FETCH_WINDOW = 32;
    /** Entries read in parallel to catch up after a lost race. */
    private static final int RACE_WINDOW = 4;

    private final ObjectStore store;
    private final InstantSource clock;
    private final ManifestConfig config;
    private final ManifestIo io;
    private final CheckpointWriter checkpointWriter;
    private final long writerId;
    private final ScheduledExecutorService conductor;

    // Owned by the conductor thread (start-up runs before it exists, in the constructor's thread).
    private volatile ManifestState view;
    private volatile long viewSeq;
    private Instant logTime = Instant.EPOCH;
    private Instant freshAt;
    private long writerCounter;
    private long lastCheckpointSeq;
    private long bytesSinceCheckpoint;
    private final CommitQueue queue = new CommitQueue();
    private final ClaimPacer pacer = new ClaimPacer();
    private volatile RuntimeException broken;
    private volatile boolean closed;

    private ManifestMetadataStore(ObjectStore store, InstantSource clock, ManifestConfig config) {
        this.store = store;
        this.clock = clock;
        this.config = config;
        this.io = new ManifestIo(store, config);
        this.checkpointWriter = new CheckpointWriter(io, config, clock);
        long id;
        do {
            id = new java.security.SecureRandom().nextLong();
        } while (id == 0);
        this.writerId = id;
        this.conductor = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "s3stream-manifest-conductor");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Opens the manifest under {@code config.prefix()} of {@code store}, loading the latest checkpoint and the log
     * after it. The store is borrowed: {@link #close()} does not close it.
     *
     * @throws CorruptDataException naming the key of a manifest object that does not decode, or a missing entry
     * @throws StorageIOException   when the store keeps failing
     */
    public static ManifestMetadataStore open(ObjectStore store, InstantSource clock, ManifestConfig config) {
        ManifestMetadataStore m = new ManifestMetadataStore(store, clock, config);
        try {
            m.load();
        } catch (RuntimeException e) {
            m.close();
            throw e;
        }
        if (config.pollMs() > 0) {
            m.conductor.scheduleWithFixedDelay(m::poll, config.pollMs(), config.pollMs(), TimeUnit.MILLISECONDS);
        }
        return m;
    }

    // ================================================================================================ start-up

    private void load() {
        for (int attempt = 1; ; attempt++) {
            try {
                loadOnce();
                return;
            } catch (LoadRaceException e) {
                // A checkpoint we listed was deleted by a newer one meanwhile: start over from the newer one.
                if (attempt >= 3) {
                    throw new StorageIOException("manifest under " + store.description() + config.prefix()
                            + " changed under start-up three times: " + e.getMessage(), e, true);
                }
            }
        }
    }

    private void loadOnce() {
        view = new ManifestState(clock);
        viewSeq = 0;
        logTime = Instant.EPOCH;
        lastCheckpointSeq = 0;
        loadLatestCheckpoint();
        // Entries are read by number up to the last one listed: a listing taken while a node commits can show n + 1
        // without n (it passed n's key before n was created), and every number up to the last listed exists, unless
        // garbage collection took it (a newer checkpoint then exists) or the log is damaged.
        long last = viewSeq;
        for (ObjectInfo info : io.list(io.logPrefix())) {
            last = Math.max(last, io.logSeq(info));
        }
        for (long from = viewSeq + 1; from <= last; from += FETCH_WINDOW) {
            int count = (int) Math.min(FETCH_WINDOW, last - from + 1);
            int read = readAndApply(from, count);
            if (read < count) {
                throw missingEntry(from + read, last);
            }
        }
        refresh(); // entries committed while we listed
        pacer.reset();
    }

    /**
     * Reads entries {@code from} on, at most {@code count} of them ({@link ManifestIo#readRun}: in parallel, stopping
     * at the first that does not exist) and applies them in order; returns how many.
     */
    private int readAndApply(long from, int count) {
        List<byte[]> run = io.readRun(from, count);
        for (int i = 0; i < run.size(); i++) {
            byte[] bytes = run.get(i);
            applyEntry(ManifestFormat.decodeEntry(bytes, io.logKey(from + i), from + i), bytes.length);
        }
        return run.size();
    }

    /**
     * Entry {@code seq} is not in the store although {@code last} was listed: start over if a newer checkpoint
     * appeared (garbage collection deleted what it covers), else the log has a gap.
     */
    private RuntimeException missingEntry(long seq, long last) {
        List<ObjectInfo> checkpoints = io.list(io.checkpointPrefix());
        if (!checkpoints.isEmpty() && io.checkpointSeq(checkpoints.getLast()) > lastCheckpointSeq) {
            return new LoadRaceException("entry " + io.logKey(seq) + " vanished: a newer checkpoint appeared");
        }
        return new CorruptDataException("manifest entry " + io.logKey(seq) + " is missing although "
                + io.logKey(last) + " exists" + (lastCheckpointSeq == 0 ? "" : " (after checkpoint "
                + io.checkpointKey(lastCheckpointSeq) + ")") + ": the log has a gap, refusing to skip history");
    }

    private void loadLatestCheckpoint() {
        List<ObjectInfo> checkpoints = io.list(io.checkpointPrefix());
        if (checkpoints.isEmpty()) {
            return;
        }
        String key = checkpoints.getLast().key();
        long seq = ManifestIo.seqOf(key, io.checkpointPrefix());
        byte[] bytes;
        try {
            bytes = io.read(key);
        } catch (ObjectNotFoundException e) {
            throw new LoadRaceException("checkpoint " + key + " vanished");
        }
        ManifestFormat.Checkpoint cp = ManifestFormat.decodeCheckpoint(bytes, key, seq);
        view = ManifestState.restore(cp.snapshot(), clock);
        viewSeq = cp.seq();
        logTime = cp.time();
        lastCheckpointSeq = cp.seq();
        bytesSinceCheckpoint = 0;
    }

    /** Start-up raced with checkpoint garbage collection; start over. */
    private static final class LoadRaceException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        LoadRaceException(String message) {
            super(message, null, false, false);
        }
    }

    // ================================================================================================ commit

    private <T> CompletableFuture<T> commit(ManifestOp op, Class<T> type) {
        return commit(List.of(op), type);
    }

    /**
     * Commits {@code ops} in one entry: all apply or none. Only ops each valid on its own against the same state may
     * share an entry (a batch of key-value changes by one node, {@link ManifestOp.ByNode#batch}), because each is
     * checked against the state before the entry.
     */
    private <T> CompletableFuture<T> commit(List<ManifestOp> ops, Class<T> type) {
        if (closed) {
            return CompletableFuture.failedFuture(new IllegalStateException("this manifest store is closed"));
        }
        CommitQueue.Pending pending = new CommitQueue.Pending(ops, new CompletableFuture<>());
        queue.add(pending);
        try {
            conductor.execute(this::drain);
        } catch (RejectedExecutionException e) {
            if (queue.remove(pending)) {
                pending.result().completeExceptionally(new IllegalStateException("this manifest store is closed", e));
            }
        }
        return pending.result().thenApply(type::cast);
    }

    /**
     * On the conductor, once per {@link #commit}: the next commit alone, or key-value changes in one entry
     * ({@link CommitQueue}); one refused in the group is then committed alone, where the refusal is confirmed.
     */
    private void drain() {
        List<CommitQueue.Pending> group = queue.next();
        List<CommitQueue.Pending> alone = group.size() == 1 ? group : new ArrayList<>();
        if (group.size() > 1) {
            try {
                doMerged(group, alone);
            } catch (Throwable t) {
                group.forEach(p -> p.result().completeExceptionally(t)); // (no effect on those that completed)
            }
        }
        for (CommitQueue.Pending p : alone) {
            try {
                p.result().complete(doCommit(p.ops()));
            } catch (Throwable t) {
                p.result().completeExceptionally(t);
            }
        }
    }

    /** Runs on the conductor: validate, claim the next number, apply; see the class comment. */
    private Object doCommit(List<ManifestOp> ops) {
        checkUsable();
        if (ops.isEmpty()) {
            return null; // an empty batch changes nothing: no entry
        }
        ManifestOp op = ops.getFirst(); // what the single-op answers below are about
        boolean confirmed = false; // whether a refusal was confirmed against the log tip
        for (int race = 0; ; race++) {
            if (stale()) {
                refresh(); // checked on every round: a long run of lost races must not outlive the GC grace
            }
            Instant at = entryTime(); // log time never goes back, whatever this node's clock says
            Object checked = null;
            try {
                for (ManifestOp each : ops) {
                    checked = view.check(each, at);
                }
            } catch (RuntimeException refused) {
                if (!confirmed) {
                    confirmed = true;
                    if (refresh() > 0) {
                        continue;
                    }
                }
                throw refused;
            }
            if (ops.size() == 1 && (op instanceof ManifestOp.CompareAndSetKv
                    || op instanceof ManifestOp.ByNode b && b.op() instanceof ManifestOp.CompareAndSetKv)
                    && !((Boolean) checked)) {
                if (!confirmed) {
                    confirmed = true;
                    if (refresh() > 0) {
                        continue;
                    }
                }
                return Boolean.FALSE;
            }
            if (ops.size() == 1 && op instanceof ManifestOp.TrimStream && checked != null) {
                return checked; // a trim backwards is a no-op: nothing to write
            }
            Object[] results = tryClaim(ops, at, race);
            if (results != null) {
                return results[results.length - 1];
            }
        }
    }

    /**
     * Commits key-value changes of several callers in one entry. The first that the view would refuse (a fenced node,
     * a compare-and-set that does not match) and all after it leave the group for {@code alone}, in order.
     */
    private void doMerged(List<CommitQueue.Pending> group, List<CommitQueue.Pending> alone) {
        checkUsable();
        for (int race = 0; ; race++) {
            if (stale()) {
                refresh();
            }
            Instant at = entryTime();
            List<ManifestOp> ops = new ArrayList<>();
            int passed = 0;
            while (passed < group.size() && passes(group.get(passed).ops(), at)) {
                ops.addAll(group.get(passed++).ops());
            }
            List<CommitQueue.Pending> rest = group.subList(passed, group.size());
            alone.addAll(0, rest); // (before those an earlier round set aside, which came later)
            rest.clear();
            if (ops.isEmpty()) {
                return;
            }
            Object[] results = tryClaim(ops, at, race);
            if (results != null) {
                int i = 0;
                for (CommitQueue.Pending p : group) {
                    i += p.ops().size();
                    p.result().complete(results[i - 1]);
                }
                return;
            }
        }
    }

    /** Whether every op would apply to the view now (a compare-and-set that would answer false does not). */
    private boolean passes(List<ManifestOp> ops, Instant at) {
        try {
            for (ManifestOp op : ops) {
                if (view.check(op, at) instanceof Boolean b && !b) {
                    return false;
                }
            }
            return true;
        } catch (RuntimeException refused) {
            return false;
        }
    }

    /** The instant the next entry applies at: now, unless this node's clock is behind the log. */
    private Instant entryTime() {
        Instant at = clock.instant();
        return at.isBefore(logTime) ? logTime : at;
    }

    /**
     * Claims the next number for {@code ops} ({@link ManifestIo#claim}; a commit's first attempt may yield first, see
     * {@link ClaimPacer}) and applies the entry: each op's result if it won, null if the round must be run again.
     */
    private Object[] tryClaim(List<ManifestOp> ops, Instant at, int race) {
        long seq = viewSeq + 1;
        ManifestFormat.Entry entry = new ManifestFormat.Entry(seq, writerId, ++writerCounter, at, ops);
        byte[] bytes = ManifestFormat.encodeEntry(entry);
        if (race == 0) {
            pacer.beforeFirstClaim();
        }
        long started = System.nanoTime();
        byte[] winner = io.claim(seq, bytes);
        if (winner == ManifestIo.VANISHED) {
            freshAt = null; // an entry disappeared under us: re-read from the latest checkpoint
            return null;
        }
        if (winner != bytes) {
            lostRace(seq, winner, race);
            return null;
        }
        pacer.won(System.nanoTime() - started);
        Object[] results = applyEntry(entry, bytes.length);
        io.counters.commits.incrementAndGet();
        maybeCheckpoint();
        return results;
    }

    /**
     * Entry {@code seq} went to another writer: apply it. The first loss retries at once (the loser is current as of
     * the winner it read); later ones first catch up in parallel. No backoff: a loser that sleeps falls further behind.
     */
    private void lostRace(long seq, byte[] winner, int race) {
        io.counters.lostRaces.incrementAndGet();
        applyEntry(ManifestFormat.decodeEntry(winner, io.logKey(seq), seq), winner.length);
        if (race + 1 >= config.maxRaces()) {
            throw new StorageIOException("manifest commit under " + store.description() + config.prefix()
                    + " lost " + (race + 1) + " races in a row; contention is too high", null, true);
        }
        if (race > 0) {
            refresh(RACE_WINDOW);
        }
    }

    /** Applies an entry to the view; returns each op's result. */
    private Object[] applyEntry(ManifestFormat.Entry entry, int sizeBytes) {
        Object[] results = new Object[entry.ops().size()];
        int i = 0;
        for (ManifestOp op : entry.ops()) {
            try {
                results[i++] = view.apply(op, entry.time());
            } catch (RuntimeException e) {
                // Deterministic rules make this impossible for entries written by this protocol.
                CorruptDataException c = new CorruptDataException("manifest entry " + io.logKey(entry.seq())
                        + " does not apply to the state after entry " + (entry.seq() - 1) + ": " + e.getMessage(), e);
                broken = c;
                throw c;
            }
        }
        viewSeq = entry.seq();
        if (entry.time().isAfter(logTime)) {
            logTime = entry.time();
        }
        bytesSinceCheckpoint += sizeBytes;
        pacer.applied(entry.writerId() == writerId);
        return results;
    }

    // ================================================================================================ refresh

    /** Whether the view was last confirmed current so long ago that entries it misses may have been deleted. */
    private boolean stale() {
        return freshAt == null || clock.instant().isAfter(freshAt.plusMillis(config.gcGraceMs() / 2));
    }

    /** Applies every entry after {@code viewSeq}; returns how many. Runs on the conductor (or at start-up). */
    private int refresh() {
        return refresh(1);
    }

    /**
     * Applies every entry after {@code viewSeq}, reading {@code window} in parallel at first (1 for a poll, which
     * usually finds nothing), doubling while all exist: far behind a busy writer, a few round trips catch up.
     */
    private int refresh(int window) {
        int applied = 0;
        Instant started = clock.instant();
        if (stale()) {
            // Long out of touch: entries we miss may be gone; a newer checkpoint covers them.
            List<ObjectInfo> checkpoints = io.list(io.checkpointPrefix());
            if (!checkpoints.isEmpty() && io.checkpointSeq(checkpoints.getLast()) > viewSeq + 1) {
                long before = viewSeq;
                loadLatestCheckpoint();
                applied += (int) (viewSeq - before);
            }
        }
        while (true) {
            int read = readAndApply(viewSeq + 1, window);
            applied += read;
            if (read < window) {
                freshAt = started;
                return applied;
            }
            window = Math.min(2 * window, FETCH_WINDOW);
        }
    }

    @Override
    public CompletableFuture<Void> sync() {
        return refreshNow().thenApply(seq -> null); // reads up to the log tip on the conductor
    }

    private void poll() {
        if (closed || broken != null) {
            return;
        }
        try {
            refresh();
        } catch (RuntimeException e) {
            if (broken == null && e instanceof CorruptDataException c) {
                broken = c;
            }
            LOG.log(System.Logger.Level.WARNING, "manifest poll of " + store.description() + config.prefix()
                    + " failed; will retry: " + e);
        }
    }

    private void checkUsable() {
        RuntimeException b = broken;
        if (b != null) {
            throw b;
        }
    }

    // ================================================================================================ checkpoints

    private void maybeCheckpoint() {
        long seq = viewSeq;
        if (seq % config.checkpointEvery() != 0 && bytesSinceCheckpoint < config.checkpointBytes()
                && seq - lastCheckpointSeq < 2 * config.checkpointEvery()) { // (else the writer due to write one died)
            return;
        }
        byte[] bytes = ManifestFormat.encodeCheckpoint(new ManifestFormat.Checkpoint(seq, logTime, view.snapshot()));
        lastCheckpointSeq = seq;
        bytesSinceCheckpoint = 0;
        checkpointWriter.submit(seq, bytes);
    }

    // ================================================================================================ SPI: writes

    @Override
    public CompletableFuture<Long> registerNode(long nodeId) {
        return commit(new ManifestOp.RegisterNode(nodeId), Long.class);
    }

    @Override
    public CompletableFuture<Long> registerNode(long nodeId, long expectedNodeEpoch) {
        return commit(new ManifestOp.RegisterNodeIf(nodeId, expectedNodeEpoch), Long.class);
    }

    @Override
    public CompletableFuture<StreamMetadata> createStream(long nodeId, long nodeEpoch, StreamOptions options) {
        if (options == null) {
            return CompletableFuture.failedFuture(new NullPointerException("options"));
        }
        return commit(new ManifestOp.CreateStream(nodeId, nodeEpoch, options.startOffset(), options.tags()),
                StreamMetadata.class);
    }

    @Override
    public CompletableFuture<StreamMetadata> openStream(long streamId, long epoch, long nodeId, long nodeEpoch) {
        return commit(new ManifestOp.OpenStream(streamId, epoch, nodeId, nodeEpoch), StreamMetadata.class);
    }

    @Override
    public CompletableFuture<StreamMetadata> closeStream(long streamId, long epoch, long nodeId, long nodeEpoch) {
        return commit(new ManifestOp.CloseStream(streamId, epoch, nodeId, nodeEpoch), StreamMetadata.class);
    }

    @Override
    public CompletableFuture<StreamMetadata> trimStream(long streamId, long epoch, long newStartOffset) {
        return commit(new ManifestOp.TrimStream(streamId, epoch, newStartOffset), StreamMetadata.class);
    }

    @Override
    public CompletableFuture<Void> deleteStream(long streamId, long epoch) {
        return commit(new ManifestOp.DeleteStream(streamId, epoch), Void.class);
    }

    @Override
    public CompletableFuture<Long> prepareObjects(int count, Duration timeToLive) {
        if (timeToLive == null) {
            return CompletableFuture.failedFuture(new NullPointerException("timeToLive"));
        }
        long nanos;
        try {
            nanos = timeToLive.toNanos();
        } catch (ArithmeticException e) {
            nanos = timeToLive.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
        return commit(new ManifestOp.PrepareObjects(count, nanos), Long.class);
    }

    @Override
    public CompletableFuture<Void> commitObjects(CommitRequest request) {
        if (request == null) {
            return CompletableFuture.failedFuture(new NullPointerException("request"));
        }
        return commit(new ManifestOp.CommitObjects(request), Void.class);
    }

    @Override
    public CompletableFuture<Void> objectsDeleted(List<Long> objectIds) {
        try {
            return commit(new ManifestOp.ObjectsDeleted(objectIds), Void.class);
        } catch (NullPointerException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public CompletableFuture<Void> putKv(String key, byte[] value) {
        if (key == null || value == null) {
            return CompletableFuture.failedFuture(new NullPointerException(key == null ? "key" : "value"));
        }
        return commit(new ManifestOp.PutKv(key, value.clone()), Void.class);
    }

    @Override
    public CompletableFuture<Void> deleteKv(String key) {
        if (key == null) {
            return CompletableFuture.failedFuture(new NullPointerException("key"));
        }
        return commit(new ManifestOp.DeleteKv(key), Void.class);
    }

    @Override
    public CompletableFuture<Boolean> compareAndSetKv(String key, byte[] expected, byte[] value) {
        if (key == null) {
            return CompletableFuture.failedFuture(new NullPointerException("key"));
        }
        return commit(new ManifestOp.CompareAndSetKv(key, expected == null ? null : expected.clone(),
                value == null ? null : value.clone()), Boolean.class);
    }

    @Override
    public CompletableFuture<Void> putKv(long nodeId, long nodeEpoch, String key, byte[] value) {
        if (key == null || value == null) {
            return CompletableFuture.failedFuture(new NullPointerException(key == null ? "key" : "value"));
        }
        return commit(new ManifestOp.ByNode(nodeId, nodeEpoch, new ManifestOp.PutKv(key, value.clone())), Void.class);
    }

    @Override
    public CompletableFuture<Void> deleteKv(long nodeId, long nodeEpoch, String key) {
        if (key == null) {
            return CompletableFuture.failedFuture(new NullPointerException("key"));
        }
        return commit(new ManifestOp.ByNode(nodeId, nodeEpoch, new ManifestOp.DeleteKv(key)), Void.class);
    }

    @Override
    public CompletableFuture<Boolean> compareAndSetKv(long nodeId, long nodeEpoch, String key, byte[] expected,
                                                      byte[] value) {
        if (key == null) {
            return CompletableFuture.failedFuture(new NullPointerException("key"));
        }
        return commit(new ManifestOp.ByNode(nodeId, nodeEpoch, new ManifestOp.CompareAndSetKv(key,
                expected == null ? null : expected.clone(), value == null ? null : value.clone())), Boolean.class);
    }

    @Override
    public CompletableFuture<Void> updateKv(long nodeId, long nodeEpoch, java.util.Map<String, byte[]> puts,
                                            java.util.Collection<String> deletes) {
        List<ManifestOp> ops;
        try {
            ops = ManifestOp.ByNode.batch(nodeId, nodeEpoch, puts, deletes);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        return commit(ops, Void.class);
    }

    // ================================================================================================ SPI: reads

    private <T> CompletableFuture<T> read(Supplier<T> query) {
        try {
            if (closed) {
                throw new IllegalStateException("this manifest store is closed");
            }
            return CompletableFuture.completedFuture(query.get());
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public CompletableFuture<Optional<StreamMetadata>> getStream(long streamId) {
        return read(() -> view.getStream(streamId));
    }

    @Override
    public CompletableFuture<Optional<NodeMetadata>> getNode(long nodeId) {
        return read(() -> view.getNode(nodeId));
    }

    @Override
    public CompletableFuture<List<NodeMetadata>> listNodes() {
        return read(() -> view.listNodes());
    }

    @Override
    public CompletableFuture<List<StreamMetadata>> listStreams() {
        return read(() -> view.listStreams());
    }

    @Override
    public CompletableFuture<List<ObjectMetadata>> getObjects(long streamId, long startOffset, long endOffset,
                                                              int limit) {
        return read(() -> view.getObjects(streamId, startOffset, endOffset, limit));
    }

    @Override
    public CompletableFuture<List<ObjectMetadata>> listObjects(ObjectState... states) {
        return read(() -> view.listObjects(states));
    }

    @Override
    public CompletableFuture<Optional<byte[]>> getKv(String key) {
        return read(() -> view.getKv(key));
    }

    @Override
    public CompletableFuture<SortedMap<String, byte[]>> listKv(String prefix) {
        return read(() -> view.listKv(prefix));
    }

    // ================================================================================================ lifecycle

    /** Stops polling and refuses new calls; queued commits finish. Idempotent; the object store stays open. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        Executors2.stop(conductor, config.requestTimeoutMs() * 2, TimeUnit.MILLISECONDS);
        checkpointWriter.close();
    }

    // ================================================================================================ for tests

    /** The key of log entry {@code seq}. */
    String logKey(long seq) {
        return io.logKey(seq);
    }

    /** The random id this instance writes into its entries. */
    long writerId() {
        return writerId;
    }

    /** Sequence number of the last entry in the view. */
    public long viewSeq() {
        return viewSeq;
    }

    /** The view's whole state, for comparisons in tests and tools. */
    public ManifestState.Snapshot snapshot() {
        return view.snapshot();
    }

    /** Reads new entries now (on the conductor) instead of waiting for the poll. */
    public CompletableFuture<Long> refreshNow() {
        CompletableFuture<Long> f = new CompletableFuture<>();
        try {
            conductor.execute(() -> {
                try {
                    checkUsable();
                    refresh();
                    f.complete(viewSeq);
                } catch (Throwable t) {
                    f.completeExceptionally(t);
                }
            });
        } catch (RejectedExecutionException e) {
            f.completeExceptionally(new IllegalStateException("this manifest store is closed", e));
        }
        return f;
    }

    /** Requests and outcomes so far. */
    public ManifestStats stats() {
        ManifestIo.Counters c = io.counters;
        return new ManifestStats(c.puts.get(), c.gets.get(), c.lists.get(), c.deletes.get(), c.commits.get(),
                c.lostRaces.get(), c.checkpoints.get());
    }

    @Override
    public String toString() {
        return "ManifestMetadataStore[" + store.description() + config.prefix() + " @" + viewSeq + "]";
    }

}
