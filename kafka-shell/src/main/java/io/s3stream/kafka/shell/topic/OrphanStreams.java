package io.s3stream.kafka.shell.topic;

import io.s3stream.KeyValues;
import io.s3stream.StreamInfo;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.kafka.shell.log.PartitionLog;
import io.s3stream.kafka.shell.log.TimeIndex;
import io.s3stream.kafka.shell.network.ApiFamily;
import io.s3stream.kafka.shell.network.RateLimitedLog;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * Finds the streams of topic creations that never finished and hands them to the {@link StreamDestroyer}.
 *
 * <p>A shell creates a topic's streams (tagged {@value #TOPIC_TAG} and {@value #PARTITION_TAG}) before it records the
 * topic with their ids; growing a topic works the same way. A shell that stops between the two (killed, fenced, its
 * store failing), or whose destroy of the unused streams fails, leaves streams that no topic record names: nothing
 * would ever read, trim or delete them, and they stay in the manifest and the bucket for ever.
 *
 * <p>A stream is an orphan when it carries the topic tag and, for the grace in a row
 * ({@code s3stream.kafka.orphan.stream.grace.ms}, 10 minutes), no topic record names it, no {@code kafka/destroy/}
 * key names it already, and no other node holds it open (that node's own sweep decides about it; if it died, its
 * takeover closes its streams). A creation bounds its work by request timeouts, so after the grace the creation that
 * made the stream either recorded it or failed. Before a stream is handed over, its topic's record is read once more:
 * a creation that finished meanwhile keeps its streams. Untagged streams (an embedding program's own) are never
 * touched.
 *
 * <p>Each sweep also deletes the transaction checkpoints of streams that no longer exist (a leader may write one
 * after its topic was deleted, before it noticed).
 *
 * <p>Not thread-safe: {@link TopicRegistry#reconcile} calls {@link #sweep} under its lock.
 */
final class OrphanStreams {
    static final String TOPIC_TAG = "kafka.topic";
    static final String PARTITION_TAG = "kafka.partition";
    private static final System.Logger LOG = System.getLogger(OrphanStreams.class.getName());
    private static final RateLimitedLog FAILED = new RateLimitedLog(LOG, System.Logger.Level.WARNING,
            TimeUnit.MINUTES.toNanos(10));

    private final StreamStorage storage;
    private final KeyValues kv;
    private final int nodeId;
    private final LongSupplier nanoClock;
    private final long graceNanos;
    private final long intervalNanos;
    /** Streams found to be orphans in the previous sweep, with the time they were first found so. */
    private Map<Long, Long> suspects = new HashMap<>();
    private long lastSweepNanos;

    /** The key-value prefixes of per-stream checkpoints; the stream id follows. */
    private static final List<String> CHECKPOINT_PREFIXES = List.of(PartitionLog.TRANSACTIONS_PREFIX, TimeIndex.PREFIX);

    /** The options of partition {@code partition}'s stream of {@code topic}: tagged, so that a sweep can find it. */
    static StreamOptions partitionStream(String topic, int partition) {
        return StreamOptions.builder().tags(Map.of(TOPIC_TAG, topic, PARTITION_TAG, Integer.toString(partition)))
                .build();
    }

    /** Sweeps every quarter of the grace, at least once a minute and at most once a second. */
    OrphanStreams(StreamStorage storage, KeyValues kv, int nodeId, LongSupplier nanoClock, long graceNanos) {
        this.storage = storage;
        this.kv = kv;
        this.nodeId = nodeId;
        this.nanoClock = nanoClock;
        this.graceNanos = graceNanos;
        this.intervalNanos = Math.clamp(graceNanos / 4, TimeUnit.SECONDS.toNanos(1), TimeUnit.MINUTES.toNanos(1));
        this.lastSweepNanos = nanoClock.getAsLong() - intervalNanos;
    }

    /**
     * Looks for orphans, at most once per interval; records a {@code kafka/destroy/} key for each one found for the
     * whole grace (the destroyer's next sweep destroys it) and returns their ids. {@code creatingHere} tells the topics
     * this shell is creating now, whose streams are never orphans. Never throws: a failure is logged and the next
     * sweep starts over (keeping what the earlier ones found).
     */
    List<Long> sweep(Predicate<String> creatingHere) {
        long now = nanoClock.getAsLong();
        if (now - lastSweepNanos < intervalNanos) {
            return List.of();
        }
        lastSweepNanos = now;
        try {
            return sweep(now, creatingHere);
        } catch (RuntimeException e) {
            FAILED.log(() -> "looking for the streams of unfinished topic creations failed; retried next round: "
                    + ApiFamily.cause(e));
            return List.of();
        }
    }

    private List<Long> sweep(long now, Predicate<String> creatingHere) {
        // Checkpoint keys before streams: a checkpoint is written after its stream was created, so a stream missing
        // from the later listing is gone, not yet to come.
        Set<String> checkpoints = new HashSet<>();
        for (String prefix : CHECKPOINT_PREFIXES) {
            checkpoints.addAll(kv.list(prefix).join().keySet());
        }
        // Streams first, records after: a creation that records its topic between the two reads is seen recorded.
        List<StreamInfo> streams = storage.listStreams().join();
        forgetCheckpointsOfGoneStreams(checkpoints, streams);
        Set<Long> named = namedStreams(kv.list(TopicRegistry.PREFIX).join().values());
        Set<String> pending = kv.list(StreamDestroyer.PREFIX).join().keySet();
        Map<Long, Long> stillSuspect = new HashMap<>();
        List<StreamInfo> due = new ArrayList<>();
        for (StreamInfo s : streams) {
            String topic = s.tags().get(TOPIC_TAG);
            if (topic == null || named.contains(s.streamId()) || pending.contains(StreamDestroyer.key(s.streamId()))
                    || (s.isOpen() && s.ownerNodeId() != nodeId) || creatingHere.test(topic)) {
                continue;
            }
            long since = suspects.getOrDefault(s.streamId(), now);
            stillSuspect.put(s.streamId(), since);
            if (now - since >= graceNanos) {
                due.add(s);
            }
        }
        suspects = stillSuspect;
        List<Long> handed = new ArrayList<>();
        for (StreamInfo s : due) {
            String topic = s.tags().get(TOPIC_TAG);
            Optional<byte[]> record = kv.get(TopicRegistry.PREFIX + topic).join();
            if (record.isPresent() && namedStreams(List.of(record.get())).contains(s.streamId())) {
                suspects.remove(s.streamId());
                continue; // recorded since the listing
            }
            String what = topic + "-" + s.tags().getOrDefault(PARTITION_TAG, "?");
            byte[] value = (what + ", in no topic's record").getBytes(StandardCharsets.UTF_8);
            kv.put(StreamDestroyer.key(s.streamId()), value).join();
            suspects.remove(s.streamId());
            handed.add(s.streamId());
            LOG.log(System.Logger.Level.WARNING, () -> "stream " + s.streamId() + " was created for partition " + what
                    + " but no topic has recorded it for " + TimeUnit.NANOSECONDS.toSeconds(graceNanos) + " s "
                    + "(a topic creation or partition increase that did not finish: its shell stopped or its commit "
                    + "failed); destroying it");
        }
        return handed;
    }

    /**
     * Deletes the checkpoints of streams that no longer exist: transaction state ({@code kafka/txn-index/<stream id>})
     * and time indexes ({@code kafka/time-index/<stream id>}). DeleteTopics deletes them with the topic, but a
     * partition's leader that wrote one after the deletion, before it noticed, leaves it behind for good. Stream ids
     * are never reused, so such a key names nothing any more.
     */
    private void forgetCheckpointsOfGoneStreams(Set<String> checkpoints, List<StreamInfo> streams) {
        Set<Long> live = new HashSet<>();
        streams.forEach(s -> live.add(s.streamId()));
        List<String> gone = new ArrayList<>();
        for (String key : checkpoints) {
            for (String prefix : CHECKPOINT_PREFIXES) {
                try {
                    if (key.startsWith(prefix) && !live.contains(Long.parseLong(key.substring(prefix.length())))) {
                        gone.add(key);
                    }
                } catch (NumberFormatException e) {
                    // not a checkpoint key this shell writes: not ours to delete
                }
            }
        }
        if (!gone.isEmpty()) {
            kv.update(Map.of(), gone).join();
            LOG.log(System.Logger.Level.INFO, () -> "deleted " + gone.size() + " checkpoint(s) of streams that no "
                    + "longer exist: " + gone);
        }
    }

    /** The stream ids that topic records name. */
    private static Set<Long> namedStreams(Iterable<byte[]> records) {
        Set<Long> ids = new HashSet<>();
        for (byte[] record : records) {
            ids.addAll(TopicRecord.streamIds(StoredProperties.parse(record)));
        }
        return ids;
    }

    /** For tests: the streams suspected now. */
    Set<Long> suspects() {
        return Set.copyOf(suspects.keySet());
    }
}
