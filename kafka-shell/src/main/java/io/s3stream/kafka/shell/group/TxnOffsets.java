package io.s3stream.kafka.shell.group;

import io.s3stream.KeyValues;
import org.apache.kafka.common.TopicPartition;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * Offsets committed inside a transaction (TxnOffsetCommit): staged in the key-value space under
 * {@code kafka/txn-offset/<group>/<producer id>/<topic>/<partition>} until the transaction ends, then made the group's
 * committed offsets (commit) or dropped (abort) by the transaction coordinator, whichever shell that is: the group's
 * committed offsets are read from the key-value space by every OffsetFetch, so no group coordinator needs telling.
 * While some are staged, an OffsetFetch that asks for stable offsets gets UNSTABLE_OFFSET_COMMIT for them (KIP-447),
 * so a consumer that takes over a partition does not start from an offset a pending transaction is about to move.
 */
public final class TxnOffsets {
    static final String PREFIX = "kafka/txn-offset/";

    private TxnOffsets() {
    }

    private static String groupPrefix(String groupId) {
        return PREFIX + URLEncoder.encode(groupId, StandardCharsets.UTF_8) + "/";
    }

    private static String producerPrefix(String groupId, long producerId) {
        return groupPrefix(groupId) + producerId + "/";
    }

    /** Stages {@code offsets} of {@code producerId}'s open transaction for group {@code groupId}; durable on completion. */
    static CompletableFuture<Void> stage(KeyValues kv, String groupId, long producerId,
                                         Map<TopicPartition, GroupCoordinator.Committed> offsets) {
        String prefix = producerPrefix(groupId, producerId);
        Map<String, byte[]> writes = new HashMap<>();
        offsets.forEach((tp, c) -> writes.put(prefix + tp.topic() + "/" + tp.partition(), OffsetKeys.encode(c)));
        return kv.update(writes, List.of());
    }

    /**
     * Ends {@code producerId}'s transaction for group {@code groupId}: its staged offsets become committed offsets
     * ({@code commit}) or are dropped. Idempotent: a coordinator that retries, or one that completes a transaction a
     * dead shell left half done, finds only what is still staged.
     */
    public static CompletableFuture<Void> complete(KeyValues kv, String groupId, long producerId, boolean commit) {
        String prefix = producerPrefix(groupId, producerId);
        return kv.list(prefix).thenCompose(staged -> {
            // One atomic change: the staged offsets become committed offsets and stop being staged together.
            Map<String, byte[]> writes = new HashMap<>();
            if (commit) {
                staged.forEach((key, value) -> {
                    String[] tp = key.substring(prefix.length()).split("/");
                    writes.put(OffsetKeys.offsetKey(groupId, new TopicPartition(tp[0], Integer.parseInt(tp[1]))),
                            value);
                });
                if (!staged.isEmpty()) { // a commit of the group, for offset retention
                    writes.put(OffsetKeys.timeKey(groupId), OffsetKeys.encodeTime(System.currentTimeMillis()));
                }
            }
            return kv.update(writes, staged.keySet());
        });
    }

    /** The partitions of group {@code groupId} with offsets staged by some open transaction. */
    static CompletableFuture<Set<TopicPartition>> pending(KeyValues kv, String groupId) {
        String prefix = groupPrefix(groupId);
        return kv.list(prefix).thenApply(staged -> {
            Set<TopicPartition> out = new HashSet<>();
            for (String key : staged.keySet()) {
                String[] p = key.substring(prefix.length()).split("/");
                out.add(new TopicPartition(p[1], Integer.parseInt(p[2])));
            }
            return out;
        });
    }
}
