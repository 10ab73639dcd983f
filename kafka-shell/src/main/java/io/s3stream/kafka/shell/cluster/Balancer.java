package io.s3stream.kafka.shell.cluster;

import io.s3stream.KeyValues;
import io.s3stream.kafka.shell.log.PartitionLog;
import io.s3stream.kafka.shell.topic.TopicRegistry;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * The self-balancer. Every interval each shell publishes the traffic of the partitions it leads (bytes produced plus
 * bytes fetched per second over the last interval) as {@code kafka/load/<id>}; the lowest live shell then makes at
 * most one move:
 * <ol>
 *   <li><b>by bytes</b>, when the busiest and idlest live shells differ by more than the band ({@code band} times the
 *       mean per shell, on either side, and at least {@code minBytesPerSec}): the busiest hands the idlest the
 *       partition that best evens the two out, one that carries less than their difference;</li>
 *   <li><b>by count</b>, otherwise, when partition counts differ by two or more: the shell with the most hands the one
 *       with the fewest its least busy partition, unless that would take bytes out of the band (so an idle cluster and
 *       a new, empty shell get their share of partitions).</li>
 * </ol>
 * A move is a reassignment, as {@code kafka-reassign-partitions} makes one: the leader closes the stream (uploading
 * what its WAL holds of it) and the target opens it, so only metadata and un-uploaded WAL data move. One move at a
 * time; a partition just moved is left alone for four intervals, and no move by bytes is made within two intervals
 * of the last move, so that traffic is measured where it now is before it counts again.
 */
public final class Balancer {
    static final String LOAD_PREFIX = "kafka/load/";
    private static final System.Logger LOG = System.getLogger(Balancer.class.getName());

    private final int nodeId;
    private final KeyValues kv;
    private final TopicRegistry topics;
    private final double band;
    private final double minBytesPerSec;
    private final long cooldownNanos;
    private final long settleNanos;
    private long lastMoveNanos = System.nanoTime() - Long.MAX_VALUE / 2;
    private final Map<PartitionLog, Long> lastTraffic = new IdentityHashMap<>();
    private final Map<String, Long> movedAt = new HashMap<>();
    private long lastPublishNanos = System.nanoTime();

    public Balancer(int nodeId, KeyValues kv, TopicRegistry topics, double band, long minBytesPerSec, long intervalMs) {
        this.nodeId = nodeId;
        this.kv = kv;
        this.topics = topics;
        this.band = band;
        this.minBytesPerSec = minBytesPerSec;
        this.cooldownNanos = TimeUnit.MILLISECONDS.toNanos(4 * intervalMs);
        this.settleNanos = TimeUnit.MILLISECONDS.toNanos(2 * intervalMs);
    }

    /**
     * Publishes {@code topic/partition=bytesPerSecond} for each partition led here, measured since the previous call
     * (a partition opened since then reports 0 until the next one). One key-value write per interval.
     */
    public synchronized void publishLoad() {
        long now = System.nanoTime();
        double seconds = Math.max(1e-3, (now - lastPublishNanos) / 1e9);
        lastPublishNanos = now;
        StringBuilder out = new StringBuilder();
        Map<PartitionLog, Long> seen = new IdentityHashMap<>();
        for (TopicRegistry.Topic t : topics.all()) {
            for (PartitionLog log : t.ledHere()) {
                long total = log.trafficBytes();
                Long before = lastTraffic.get(log);
                seen.put(log, total);
                long rate = before == null ? 0 : Math.round((total - before) / seconds);
                out.append(log.topic()).append('/').append(log.partition()).append('=').append(rate).append('\n');
            }
        }
        lastTraffic.clear();
        lastTraffic.putAll(seen);
        kv.put(LOAD_PREFIX + nodeId, out.toString().getBytes(StandardCharsets.UTF_8)).join();
    }

    /** Removes this shell's load report (a clean stop, or a takeover of {@code id}). */
    public void forget(int id) {
        kv.delete(LOAD_PREFIX + id).join();
    }

    /** One step, run by the lowest live shell; returns what it moved, or null. */
    public synchronized String balanceOnce(Collection<Integer> liveIds) {
        if (liveIds.size() < 2) {
            return null;
        }
        long now = System.nanoTime();
        movedAt.values().removeIf(at -> now - at > cooldownNanos);
        SortedMap<String, byte[]> leaders = kv.list(TopicRegistry.LEADER_PREFIX).join();
        Map<Integer, List<String>> led = new TreeMap<>();
        liveIds.forEach(id -> led.put(id, new ArrayList<>()));
        for (Map.Entry<String, byte[]> e : leaders.entrySet()) {
            long[] r = TopicRegistry.parseLeader(e.getValue());
            if (r[2] >= 0) {
                return null; // a move is in flight: one at a time
            }
            List<String> keys = led.get((int) r[0]);
            if (keys != null) {
                keys.add(e.getKey().substring(TopicRegistry.LEADER_PREFIX.length()));
            }
        }
        // Each partition's rate as its current leader reported it.
        Map<String, Double> rates = new HashMap<>();
        for (Map.Entry<String, byte[]> e : kv.list(LOAD_PREFIX).join().entrySet()) {
            int reporter = Integer.parseInt(e.getKey().substring(LOAD_PREFIX.length()));
            List<String> mine = led.get(reporter);
            if (mine == null) {
                continue;
            }
            for (String line : new String(e.getValue(), StandardCharsets.UTF_8).split("\n")) {
                int eq = line.lastIndexOf('=');
                if (eq > 0 && mine.contains(line.substring(0, eq))) {
                    rates.put(line.substring(0, eq), Double.parseDouble(line.substring(eq + 1)));
                }
            }
        }
        Map<Integer, Double> load = new TreeMap<>();
        led.forEach((id, keys) -> load.put(id, keys.stream().mapToDouble(k -> rates.getOrDefault(k, 0.0)).sum()));
        double mean = load.values().stream().mapToDouble(Double::doubleValue).sum() / load.size();
        double allowed = Math.max(2 * band * mean, minBytesPerSec);
        int busiest = argBest(load, +1);
        int idlest = argBest(load, -1);
        double gap = load.get(busiest) - load.get(idlest);
        // Rates are a full interval old at best, and a partition just moved reports nothing for one: no move by bytes
        // until the last move has been measured where it landed.
        if (gap > allowed && now - lastMoveNanos > settleNanos) {
            String best = null;
            double bestMiss = Double.MAX_VALUE;
            for (String key : led.get(busiest)) {
                double r = rates.getOrDefault(key, 0.0);
                double miss = Math.abs(gap - 2 * r);
                if (r > 0 && r < gap && !movedAt.containsKey(key) && miss < bestMiss) {
                    best = key;
                    bestMiss = miss;
                }
            }
            if (best != null) {
                return move(best, leaders, busiest, idlest, String.format(
                        "by bytes: node %d carries %.0f B/s, node %d %.0f B/s (band %.0f B/s); the partition carries %.0f B/s",
                        busiest, load.get(busiest), idlest, load.get(idlest), allowed, rates.getOrDefault(best, 0.0)));
            }
        }
        int most = -1;
        int fewest = -1;
        for (Map.Entry<Integer, List<String>> e : led.entrySet()) {
            if (most < 0 || e.getValue().size() > led.get(most).size()) {
                most = e.getKey();
            }
            if (fewest < 0 || e.getValue().size() < led.get(fewest).size()) {
                fewest = e.getKey();
            }
        }
        if (led.get(most).size() - led.get(fewest).size() < 2) {
            return null;
        }
        String quietest = null;
        for (String key : led.get(most)) {
            if (!movedAt.containsKey(key) && (quietest == null
                    || rates.getOrDefault(key, 0.0) < rates.getOrDefault(quietest, 0.0))) {
                quietest = key;
            }
        }
        if (quietest == null) {
            return null;
        }
        double r = rates.getOrDefault(quietest, 0.0);
        Map<Integer, Double> after = new TreeMap<>(load);
        after.merge(most, -r, Double::sum);
        after.merge(fewest, r, Double::sum);
        if (after.get(argBest(after, +1)) - after.get(argBest(after, -1)) > Math.max(allowed, gap)) {
            return null; // evening the counts would unbalance the bytes
        }
        return move(quietest, leaders, most, fewest, "by count: node " + most + " leads " + led.get(most).size()
                + " partitions, node " + fewest + " " + led.get(fewest).size());
    }

    private String move(String key, SortedMap<String, byte[]> leaders, int from, int to, String why) {
        String leaderKey = TopicRegistry.LEADER_PREFIX + key;
        byte[] record = leaders.get(leaderKey);
        long[] r = TopicRegistry.parseLeader(record);
        if (!kv.compareAndSet(leaderKey, record, TopicRegistry.leaderRecord(from, r[1], to)).join()) {
            return null;
        }
        movedAt.put(key, System.nanoTime());
        lastMoveNanos = System.nanoTime();
        String done = "moving " + key + " from node " + from + " to node " + to + " (" + why + ")";
        LOG.log(System.Logger.Level.DEBUG, done);
        return done;
    }

    private static int argBest(Map<Integer, Double> load, int sign) {
        int best = -1;
        for (Map.Entry<Integer, Double> e : load.entrySet()) {
            if (best < 0 || sign * e.getValue() > sign * load.get(best)) {
                best = e.getKey();
            }
        }
        return best;
    }
}
