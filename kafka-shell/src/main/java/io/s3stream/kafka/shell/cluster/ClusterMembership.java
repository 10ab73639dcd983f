package io.s3stream.kafka.shell.cluster;

import io.s3stream.InvalidConfigException;
import io.s3stream.KeyValues;
import io.s3stream.StreamStorage;
import io.s3stream.TakeoverResult;
import io.s3stream.kafka.shell.network.RateLimitedLog;
import io.s3stream.kafka.shell.topic.TopicRegistry;

import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Liveness of the shells sharing one object store, and failover of a dead one, with no coordination service but the
 * manifest's compare-and-set.
 *
 * <h2>Leases</h2>
 * Each shell keeps {@code kafka/lease/<id>} = {@code incarnation,counter,node epoch} and bumps the counter by compare-and-set
 * every {@code s3stream.kafka.lease.renew.ms}. Expiry is judged by each observer on its own monotonic clock: a shell
 * whose counter has not changed for {@code s3stream.kafka.lease.timeout.ms} is dead to that observer, so no clocks need
 * to agree. A shell serves produce and fetch only while its own last successful renewal started less than
 * {@code timeout - renew} ago: a shell that was paused (SIGSTOP, a long GC, a partitioned VM) stops serving before
 * anyone can have declared it dead, and serves again only after a renewal succeeds — which it cannot once it was taken
 * over, because the survivor changed its lease record.
 *
 * <h2>Failover</h2>
 * A survivor that sees a lease expire claims {@code kafka/failover/<id>} by compare-and-set (one claimant wins; a claim
 * whose claimant died is claimed again), then: fences the dead node and recovers its WAL
 * ({@link StreamStorage#takeOverNode(long, long)} of the node epoch in the expired lease, so that an instance that
 * restarted meanwhile is not fenced: it registered a newer epoch and the takeover is refused, unless it has written no
 * lease for {@code s3stream.kafka.lease.startup.grace.ms}; every acknowledged record is committed, its streams
 * closed); points each of its
 * partitions' leader records at the live shell leading the fewest; removes its broker registration and lease; and
 * drops the claim. The new leaders open the partitions at a higher epoch on their next reconcile. A dead shell whose WAL
 * is on its own disk ({@code blockdev://}) cannot be taken over: its partitions wait for it to come back.
 *
 * <p>A shell that finds its own lease changed by someone else (it was taken over while paused) has been fenced: it
 * stops serving and exits, and rejoins as a new member when restarted (a new incarnation and node epoch).
 */
public final class ClusterMembership implements AutoCloseable {
    static final String LEASE_PREFIX = "kafka/lease/";
    static final String FAILOVER_PREFIX = "kafka/failover/";
    private static final System.Logger LOG = System.getLogger(ClusterMembership.class.getName());
    /** A metadata store that is down or full fails every round (one a second): one line a minute says so. */
    private static final RateLimitedLog ROUND_FAILED = new RateLimitedLog(LOG, System.Logger.Level.WARNING,
            TimeUnit.MINUTES.toNanos(1));
    private static final RateLimitedLog SLOW_RENEWAL = new RateLimitedLog(LOG, System.Logger.Level.WARNING,
            TimeUnit.MINUTES.toNanos(1));

    private final int nodeId;
    private final KeyValues kv;
    private final StreamStorage storage;
    private final TopicRegistry topics;
    private final long renewNanos;
    private final long timeoutNanos;
    private final long startupGraceNanos;
    private final boolean failover;
    private final Consumer<String> onFenced;
    private final long incarnation = new SecureRandom().nextLong() & Long.MAX_VALUE;
    private final Map<Integer, Observed> observed = new ConcurrentHashMap<>();
    private final Set<Integer> notTakenOver = ConcurrentHashMap.newKeySet();
    private final Set<Integer> failingOver = ConcurrentHashMap.newKeySet();
    /** Shells found registered again while their last lease aged, and since when (this shell's clock). */
    private final Map<Integer, Long> restartedSince = new ConcurrentHashMap<>();
    private byte[] myLease;
    private long counter;
    private volatile long lastRenewStartedNanos;
    private long lastObserveNanos = System.nanoTime();
    private volatile boolean fenced;
    private volatile SortedMap<Integer, Long> live = new TreeMap<>();

    /** What this shell last saw of another's lease, and when (its own monotonic clock) it last changed. */
    private record Observed(String value, long changedAtNanos) {
    }

    public ClusterMembership(int nodeId, StreamStorage storage, TopicRegistry topics, long renewMs, long timeoutMs,
                             long startupGraceMs, boolean failover, Consumer<String> onFenced) {
        if (timeoutMs < 2 * renewMs) {
            throw new InvalidConfigException("s3stream.kafka.lease.timeout.ms (" + timeoutMs + ") must be at least "
                    + "twice s3stream.kafka.lease.renew.ms (" + renewMs + ")");
        }
        this.nodeId = nodeId;
        this.kv = storage.keyValues();
        this.storage = storage;
        this.topics = topics;
        this.renewNanos = TimeUnit.MILLISECONDS.toNanos(renewMs);
        this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        this.startupGraceNanos = TimeUnit.MILLISECONDS.toNanos(startupGraceMs);
        this.failover = failover;
        this.onFenced = onFenced;
    }

    /** Writes this shell's first lease (replacing one a previous incarnation left). */
    public void join() {
        long started = System.nanoTime();
        myLease = lease(0);
        kv.put(LEASE_PREFIX + nodeId, myLease).join();
        lastRenewStartedNanos = started;
    }

    /** Whether this shell may serve produce and fetch now (its lease is surely still valid to every observer). */
    public boolean canServe() {
        return !fenced && System.nanoTime() - lastRenewStartedNanos < timeoutNanos - renewNanos;
    }

    /** Shells whose lease is live as seen here (this one included while it can serve), by node id. */
    public SortedMap<Integer, Long> live() {
        return live;
    }

    /** One round, every renew interval: renew, observe the others, fail over the dead. Never throws. */
    public void tick() {
        if (fenced) {
            return;
        }
        try {
            renew();
            if (!fenced) {
                observe();
            }
        } catch (RuntimeException e) {
            Throwable cause = e instanceof java.util.concurrent.CompletionException && e.getCause() != null
                    ? e.getCause() : e;
            ROUND_FAILED.log(() -> "node " + nodeId + ": lease round failed, retried every round: " + cause);
        }
    }

    private void renew() {
        long started = System.nanoTime();
        byte[] next = lease(counter + 1);
        boolean renewed;
        try {
            renewed = kv.compareAndSet(LEASE_PREFIX + nodeId, myLease, next).join();
        } catch (java.util.concurrent.CompletionException e) {
            if (!(e.getCause() instanceof io.s3stream.NodeFencedException fencedBy)) {
                throw e;
            }
            // The store refuses this node's writes: a survivor registered its node id anew to take over its WAL.
            fence("its node epoch was fenced: " + fencedBy.getMessage());
            return;
        }
        if (renewed) {
            myLease = next;
            counter++;
            lastRenewStartedNanos = started;
            long took = System.nanoTime() - started;
            if (took > renewNanos) {
                SLOW_RENEWAL.log(() -> "node " + nodeId + ": renewing the lease took "
                        + TimeUnit.NANOSECONDS.toMillis(took) + " ms (renewal every "
                        + TimeUnit.NANOSECONDS.toMillis(renewNanos) + " ms, timeout "
                        + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms): the metadata store is slow");
            }
            return;
        }
        Optional<byte[]> now = kv.get(LEASE_PREFIX + nodeId).join();
        fence(now.isEmpty() ? "its lease was removed" : "its lease now reads '"
                + new String(now.get(), StandardCharsets.UTF_8) + "'");
    }

    private void fence(String why) {
        fenced = true;
        LOG.log(System.Logger.Level.ERROR, "node {0} was taken over by another shell ({1}): it is fenced, stops "
                + "serving and exits; restart it to rejoin as a new member", nodeId, why);
        onFenced.accept("node " + nodeId + " was taken over by another shell (" + why + ")");
    }

    private void observe() {
        long now = System.nanoTime();
        if (now - lastObserveNanos > 2 * renewNanos) {
            // This shell did not look for a while (paused, starved): it cannot tell whose lease went unrenewed, so
            // every observation starts over rather than condemning shells that were renewing all along.
            observed.replaceAll((id, o) -> new Observed(o.value(), now));
        }
        lastObserveNanos = now;
        SortedMap<String, byte[]> leases = kv.list(LEASE_PREFIX).join();
        SortedMap<Integer, Long> alive = new TreeMap<>();
        if (canServe()) {
            alive.put(nodeId, incarnation);
        }
        Set<Integer> present = new java.util.HashSet<>();
        for (Map.Entry<String, byte[]> e : leases.entrySet()) {
            int id = Integer.parseInt(e.getKey().substring(LEASE_PREFIX.length()));
            if (id == nodeId) {
                continue;
            }
            present.add(id);
            String value = new String(e.getValue(), StandardCharsets.UTF_8);
            Observed before = observed.get(id);
            if (before == null || !before.value().equals(value)) {
                observed.put(id, new Observed(value, now));
                notTakenOver.remove(id); // a new incarnation: it may be failed over when it dies again
                restartedSince.remove(id);
                alive.put(id, Long.parseLong(value.split(",")[0]));
            } else if (now - before.changedAtNanos() < timeoutNanos) {
                alive.put(id, Long.parseLong(value.split(",")[0]));
            } else if (failover && canServe() && !notTakenOver.contains(id) && failingOver.add(id)) {
                // (only a shell whose own lease is fresh judges others: a resumed zombie must not take over anyone)
                // On its own thread: a takeover can take longer than a lease, and renewals must go on meanwhile.
                byte[] leaseBytes = e.getValue();
                Thread.ofVirtual().name("kafka-shell-failover-" + id).start(() -> {
                    try {
                        failOver(id, value, leaseBytes);
                    } catch (RuntimeException ex) {
                        LOG.log(System.Logger.Level.WARNING, "failover of node " + id + " failed; retried", ex);
                    } finally {
                        failingOver.remove(id);
                    }
                });
            }
        }
        observed.keySet().retainAll(present);
        restartedSince.keySet().retainAll(present);
        live = alive;
        if (failover && canServe() && alive.firstKey() == nodeId) {
            rescueStranded(alive, present);
        }
    }

    /**
     * Partitions led by (or moving to) a shell that has neither a lease nor a registration are stranded: nobody will
     * ever fail that shell over again. It happens when a move to a shell (the balancer's, an operator's) lands just
     * after the shell was taken over, or while it stopped. The lowest live shell hands such partitions to the live
     * ones, as a takeover would have.
     */
    private void rescueStranded(SortedMap<Integer, Long> alive, Set<Integer> leased) {
        Set<Integer> registered = null;
        for (int id : topics.leadersAndTargets()) {
            if (alive.containsKey(id) || leased.contains(id) || failingOver.contains(id)) {
                continue;
            }
            if (registered == null) {
                registered = topics.brokersNow().keySet();
            }
            if (!registered.contains(id)) {
                int moved = topics.reassignAllFrom(id, alive.keySet());
                LOG.log(System.Logger.Level.WARNING, "node {0}: {1} partition(s) were led by or moving to node {2}, "
                        + "which has no lease and no registration; handed to the live shells", nodeId, moved, id);
                topics.reconcile();
            }
        }
    }

    /** Claims the failover of {@code deadId} (or re-claims it from a dead claimant) and carries it out if won. */
    private void failOver(int deadId, String leaseValue, byte[] leaseBytes) {
        String claimKey = FAILOVER_PREFIX + deadId;
        byte[] claim = (nodeId + "," + incarnation + "," + leaseValue).getBytes(StandardCharsets.UTF_8);
        Optional<byte[]> existing = kv.get(claimKey).join();
        if (existing.isPresent()) {
            int claimant = Integer.parseInt(new String(existing.get(), StandardCharsets.UTF_8).split(",")[0]);
            if (claimant == nodeId || live.containsKey(claimant) && claimant != deadId) {
                return; // a live shell is on it
            }
            if (!kv.compareAndSet(claimKey, existing.get(), claim).join()) {
                return;
            }
        } else if (!kv.compareAndSet(claimKey, null, claim).join()) {
            return; // another survivor won
        }
        long started = System.nanoTime();
        LOG.log(System.Logger.Level.WARNING, "node {0}: the lease of node {1} expired ({2} ms without renewal); taking "
                + "it over", nodeId, deadId, TimeUnit.NANOSECONDS.toMillis(timeoutNanos));
        TakeoverResult taken;
        try {
            taken = takeOver(deadId, leaseValue);
        } catch (Exception e) {
            Throwable cause = e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
            if (cause instanceof io.s3stream.spi.MetadataConflictException) {
                // It restarted while its old lease aged here: the new instance is starting and keeps its partitions.
                // (Said once per restart; the takeover is tried again every round until it writes a lease.)
            } else if (cause instanceof InvalidConfigException) {
                notTakenOver.add(deadId);
                LOG.log(System.Logger.Level.ERROR, "node {0} is dead but cannot be taken over: {1}. Its partitions "
                        + "stay unavailable until it restarts", deadId, cause.getMessage());
            } else {
                LOG.log(System.Logger.Level.WARNING, "taking over node " + deadId + " failed; retried next round",
                        cause);
            }
            kv.compareAndSet(claimKey, claim, null).join();
            return;
        }
        long recovered = System.nanoTime();
        int moved = topics.reassignAllFrom(deadId, live.keySet());
        kv.delete(TopicRegistry.BROKER_PREFIX + deadId).join();
        kv.delete(Balancer.LOAD_PREFIX + deadId).join();
        kv.compareAndSet(LEASE_PREFIX + deadId, leaseBytes, null).join();
        kv.compareAndSet(claimKey, claim, null).join();
        observed.remove(deadId);
        topics.reconcile(); // open what this shell now leads without waiting for the next round
        long done = System.nanoTime();
        LOG.log(System.Logger.Level.WARNING, "node {0} took over node {1}: {2} partitions moved; takeover {3} ms "
                        + "(fence {4} ms, WAL recovery and commit {5} ms, streams released {6} ms), leaders and opens "
                        + "{7} ms; {8}", nodeId, deadId, moved, TimeUnit.NANOSECONDS.toMillis(recovered - started),
                taken.fenceMillis(), taken.recoverMillis(), taken.releaseMillis(),
                TimeUnit.NANOSECONDS.toMillis(done - recovered), taken);
    }

    /**
     * Takes over the instance of {@code deadId} that wrote {@code leaseValue}. If the node registered again since (it
     * restarted), that instance is gone and the new one keeps the node for
     * {@code s3stream.kafka.lease.startup.grace.ms}: a restart writes its first lease only once its WAL is recovered.
     * A new instance that has written no lease after that died or hangs while starting (a crash, a port in use, a
     * disk gone): it is taken over, whatever its epoch, so that its partitions are not stranded until someone starts
     * it again.
     */
    private TakeoverResult takeOver(int deadId, String leaseValue) throws Exception {
        String[] fields = leaseValue.split(",");
        if (fields.length <= 2) {
            // Leases written before the node epoch was part of them: take over whichever instance is registered.
            return storage.takeOverNode(deadId).get(10, TimeUnit.MINUTES);
        }
        try {
            return storage.takeOverNode(deadId, Long.parseLong(fields[2])).get(10, TimeUnit.MINUTES);
        } catch (java.util.concurrent.ExecutionException e) {
            if (!(e.getCause() instanceof io.s3stream.spi.MetadataConflictException)) {
                throw e;
            }
            long now = System.nanoTime();
            long since = restartedSince.computeIfAbsent(deadId, id -> now);
            if (now - since < startupGraceNanos) {
                if (since == now) {
                    LOG.log(System.Logger.Level.INFO, "node {0}: node {1} registered again while its lease looked "
                            + "expired; not taken over while it starts (it has {2} ms to write a lease): {3}", nodeId,
                            deadId, TimeUnit.NANOSECONDS.toMillis(startupGraceNanos), e.getCause().getMessage());
                }
                throw e;
            }
            LOG.log(System.Logger.Level.WARNING, "node {0}: node {1} registered again {2} ms ago and has written no "
                    + "lease since: it did not come up; taking over its new instance", nodeId, deadId,
                    TimeUnit.NANOSECONDS.toMillis(now - since));
            return storage.takeOverNode(deadId).get(10, TimeUnit.MINUTES);
        }
    }

    private byte[] lease(long counter) {
        return (incarnation + "," + counter + "," + storage.nodeEpoch()).getBytes(StandardCharsets.UTF_8);
    }

    /** Removes this shell's lease at a clean stop, so others do not fail it over. */
    @Override
    public void close() {
        if (!fenced && myLease != null) {
            try {
                kv.compareAndSet(LEASE_PREFIX + nodeId, myLease, null).join();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "could not remove the lease at stop", e);
            }
        }
    }
}
