package io.s3stream.kafka.shell.group;

import io.s3stream.KeyValues;
import io.s3stream.kafka.shell.config.ShellConfig;
import io.s3stream.kafka.shell.topic.StoredProperties;
import org.apache.kafka.common.errors.InvalidConfigurationException;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * Per-group configs (the GROUP config resource of DescribeConfigs and IncrementalAlterConfigs, {@code kafka-configs.sh
 * --entity-type groups}): a consumer-protocol group's session timeout and heartbeat interval, overriding the broker's
 * {@code group.consumer.*} defaults. Kept in the shared key-value space ({@code kafka/group-config/<group>}), so every
 * shell that coordinates the group applies them.
 */
public final class GroupConfigs {
    static final String SESSION_TIMEOUT = "consumer.session.timeout.ms";
    static final String HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms";
    private static final Set<String> KEYS = Set.of(SESSION_TIMEOUT, HEARTBEAT_INTERVAL);
    private static final String PREFIX = "kafka/group-config/";
    private static final int ALTER_ATTEMPTS = 5;

    private GroupConfigs() {
    }

    private static String key(String group) {
        return PREFIX + URLEncoder.encode(group, StandardCharsets.UTF_8);
    }

    /** The group's overrides (empty when it has none). */
    public static CompletableFuture<Map<String, String>> overrides(KeyValues kv, String group) {
        return kv.get(key(group)).thenApply(GroupConfigs::decode);
    }

    /** The broker's defaults and the group's overrides, by key. */
    public static Map<String, String> effective(ShellConfig config, Map<String, String> overrides) {
        Map<String, String> m = new TreeMap<>();
        m.put(SESSION_TIMEOUT, Integer.toString(config.groupConsumerSessionTimeoutMs()));
        m.put(HEARTBEAT_INTERVAL, Integer.toString(config.groupConsumerHeartbeatIntervalMs()));
        m.putAll(overrides);
        return m;
    }

    /**
     * Applies SET ({@code value != null}) and DELETE ({@code null}) changes after validating the result; with
     * {@code validateOnly} nothing is stored. The stored overrides are replaced by compare-and-set
     * ({@link KeyValues#compute}), so two alters of one group at once (two admins, two shells) both take effect, one
     * after the other, as they would in Kafka's controller; after {@value #ALTER_ATTEMPTS} lost races it fails, as a
     * topic's config change does.
     */
    public static CompletableFuture<Void> alter(ShellConfig config, KeyValues kv, String group,
                                                Map<String, String> changes, boolean validateOnly) {
        if (validateOnly) {
            return kv.get(key(group)).thenAccept(stored -> changed(config, stored, changes));
        }
        return kv.compute(key(group), stored -> {
            Map<String, String> next = changed(config, stored, changes);
            return next.isEmpty() ? null : StoredProperties.format(next);
        }, ALTER_ATTEMPTS).thenApply(stored -> null);
    }

    /** The overrides {@code changes} make of {@code stored}, validated. */
    private static Map<String, String> changed(ShellConfig config, Optional<byte[]> stored,
                                               Map<String, String> changes) {
        Map<String, String> next = new TreeMap<>(decode(stored));
        changes.forEach((k, v) -> {
            if (!KEYS.contains(k)) {
                throw new InvalidConfigurationException("unknown group config " + k + "; groups here have "
                        + new TreeMap<>(Map.of(SESSION_TIMEOUT, "", HEARTBEAT_INTERVAL, "")).keySet());
            }
            if (v == null) {
                next.remove(k);
            } else {
                next.put(k, v);
            }
        });
        Map<String, String> effective = effective(config, next);
        int session = positive(effective, SESSION_TIMEOUT);
        int heartbeat = positive(effective, HEARTBEAT_INTERVAL);
        if (heartbeat >= session) {
            throw new InvalidConfigurationException(HEARTBEAT_INTERVAL + " (" + heartbeat + ") must be less than "
                    + SESSION_TIMEOUT + " (" + session + ")");
        }
        return next;
    }

    /** Forgets a deleted group's configs. */
    static CompletableFuture<Void> forget(KeyValues kv, String group) {
        return kv.delete(key(group));
    }

    private static int positive(Map<String, String> m, String key) {
        try {
            int v = Integer.parseInt(m.get(key));
            if (v > 0) {
                return v;
            }
        } catch (NumberFormatException e) {
            // fall through
        }
        throw new InvalidConfigurationException(key + " must be a positive number of milliseconds, was '"
                + m.get(key) + "'");
    }

    private static Map<String, String> decode(Optional<byte[]> stored) {
        return stored.map(StoredProperties::parseMap).orElseGet(TreeMap::new);
    }
}
