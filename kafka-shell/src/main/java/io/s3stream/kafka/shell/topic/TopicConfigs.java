package io.s3stream.kafka.shell.topic;

import io.s3stream.kafka.shell.config.ShellConfig;
import org.apache.kafka.common.errors.InvalidConfigurationException;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/** Topic configuration names as Kafka names them, their broker-level defaults, and validation of overrides. */
public final class TopicConfigs {
    /** Keys kafka-shell applies; other Kafka topic keys are accepted and stored but have no effect (README). */
    static final Set<String> APPLIED = Set.of("max.message.bytes", "message.timestamp.type",
            "message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "retention.ms", "retention.bytes",
            "cleanup.policy", "delete.retention.ms", "min.cleanable.dirty.ratio", "min.compaction.lag.ms",
            "max.compaction.lag.ms");

    private TopicConfigs() {
    }

    static Map<String, String> defaults(ShellConfig c) {
        Map<String, String> m = new TreeMap<>();
        m.put("cleanup.policy", "delete");
        m.put("compression.type", "producer");
        m.put("delete.retention.ms", c.get("log.cleaner.delete.retention.ms", "86400000"));
        m.put("max.compaction.lag.ms", c.get("log.cleaner.max.compaction.lag.ms", Long.toString(Long.MAX_VALUE)));
        m.put("min.cleanable.dirty.ratio", c.get("log.cleaner.min.cleanable.ratio", "0.5"));
        m.put("min.compaction.lag.ms", c.get("log.cleaner.min.compaction.lag.ms", "0"));
        m.put("max.message.bytes", Integer.toString(c.messageMaxBytes()));
        m.put("message.timestamp.type", c.get("log.message.timestamp.type", "CreateTime"));
        m.put("message.timestamp.after.max.ms", c.get("log.message.timestamp.after.max.ms", "3600000"));
        m.put("message.timestamp.before.max.ms", c.get("log.message.timestamp.before.max.ms", Long.toString(Long.MAX_VALUE)));
        m.put("min.insync.replicas", "1");
        m.put("retention.ms", Long.toString(c.logRetentionMs()));
        m.put("retention.bytes", Long.toString(c.logRetentionBytes()));
        m.put("segment.bytes", "1073741824");
        return m;
    }

    public static Map<String, String> effective(ShellConfig c, Map<String, String> overrides) {
        Map<String, String> m = defaults(c);
        m.putAll(overrides);
        return m;
    }

    static Map<String, String> broker(ShellConfig c) {
        Map<String, String> m = new TreeMap<>(c.raw());
        m.put("num.partitions", Integer.toString(c.numPartitions()));
        m.put("auto.create.topics.enable", Boolean.toString(c.autoCreateTopics()));
        m.put("group.min.session.timeout.ms", Integer.toString(c.groupMinSessionTimeoutMs()));
        m.put("group.max.session.timeout.ms", Integer.toString(c.groupMaxSessionTimeoutMs()));
        m.put("group.initial.rebalance.delay.ms", Integer.toString(c.groupInitialRebalanceDelayMs()));
        m.put("message.max.bytes", Integer.toString(c.messageMaxBytes()));
        m.put("node.id", Integer.toString(c.nodeId()));
        m.put("broker.id", Integer.toString(c.nodeId()));
        m.put("default.replication.factor", "1");
        m.put("offsets.topic.replication.factor", "1");
        m.put("log.retention.ms", Long.toString(c.logRetentionMs()));
        return m;
    }

    static void validate(Map<String, String> overrides) {
        for (Map.Entry<String, String> e : overrides.entrySet()) {
            String v = e.getValue();
            if (v == null) {
                throw new InvalidConfigurationException("config " + e.getKey() + " has no value");
            }
            switch (e.getKey()) {
                case "delete.retention.ms", "min.compaction.lag.ms", "max.compaction.lag.ms" -> {
                    long ms;
                    try {
                        ms = Long.parseLong(v);
                    } catch (NumberFormatException ex) {
                        throw new InvalidConfigurationException("config " + e.getKey() + " must be a number, was '" + v + "'");
                    }
                    if (ms < (e.getKey().equals("max.compaction.lag.ms") ? 1 : 0)) {
                        throw new InvalidConfigurationException("config " + e.getKey() + " must be "
                                + (e.getKey().equals("max.compaction.lag.ms") ? "at least 1" : "non-negative")
                                + ", was " + v);
                    }
                }
                case "min.cleanable.dirty.ratio" -> {
                    double ratio;
                    try {
                        ratio = Double.parseDouble(v);
                    } catch (NumberFormatException ex) {
                        throw new InvalidConfigurationException("config min.cleanable.dirty.ratio must be a number, was '"
                                + v + "'");
                    }
                    if (!(ratio >= 0 && ratio <= 1)) {
                        throw new InvalidConfigurationException("config min.cleanable.dirty.ratio must be between 0 and 1, "
                                + "was " + v);
                    }
                }
                case "max.message.bytes", "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
                     "retention.ms", "retention.bytes", "segment.bytes", "segment.ms" -> {
                    try {
                        Long.parseLong(v);
                    } catch (NumberFormatException ex) {
                        throw new InvalidConfigurationException("config " + e.getKey() + " must be a number, was '" + v + "'");
                    }
                }
                case "message.timestamp.type" -> {
                    if (!v.equals("CreateTime") && !v.equals("LogAppendTime")) {
                        throw new InvalidConfigurationException("message.timestamp.type must be CreateTime or LogAppendTime");
                    }
                }
                case "cleanup.policy" -> {
                    String[] policies = v.split(",");
                    for (String policy : policies) {
                        if (!policy.trim().equals("delete") && !policy.trim().equals("compact")) {
                            throw new InvalidConfigurationException("cleanup.policy must be delete, compact or both "
                                    + "(a comma-separated list), was '" + v + "'");
                        }
                    }
                }
                default -> { }
            }
        }
    }
}
