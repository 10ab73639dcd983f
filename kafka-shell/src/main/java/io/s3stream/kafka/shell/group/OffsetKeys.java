package io.s3stream.kafka.shell.group;

import org.apache.kafka.common.TopicPartition;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/**
 * Where committed offsets live in the key-value space: {@code kafka/offset/<group>/<topic>/<partition>} holds one
 * partition's offset ({@code offset,leaderEpoch,metadata}), and {@code kafka/offset-time/<group>} the wall-clock
 * time of the group's last commit (decimal milliseconds), which offset retention reads ({@link OffsetRetention}).
 * Group ids are URL-encoded, so a slash in one cannot be taken for a separator.
 */
final class OffsetKeys {
    static final String OFFSET_PREFIX = "kafka/offset/";
    static final String TIME_PREFIX = "kafka/offset-time/";

    private OffsetKeys() {
    }

    /** The prefix of every offset key of {@code group}. */
    static String groupPrefix(String group) {
        return OFFSET_PREFIX + URLEncoder.encode(group, StandardCharsets.UTF_8) + "/";
    }

    static String offsetKey(String group, TopicPartition tp) {
        return groupPrefix(group) + tp.topic() + "/" + tp.partition();
    }

    static String timeKey(String group) {
        return TIME_PREFIX + URLEncoder.encode(group, StandardCharsets.UTF_8);
    }

    /** The group of an offset key or a time key. */
    static String groupOf(String key) {
        String rest = key.startsWith(OFFSET_PREFIX) ? key.substring(OFFSET_PREFIX.length())
                : key.substring(TIME_PREFIX.length());
        int slash = rest.indexOf('/');
        return URLDecoder.decode(slash < 0 ? rest : rest.substring(0, slash), StandardCharsets.UTF_8);
    }

    /** The partition of an offset key. */
    static TopicPartition partitionOf(String key) {
        String[] parts = key.substring(OFFSET_PREFIX.length()).split("/");
        return new TopicPartition(parts[1], Integer.parseInt(parts[2]));
    }

    static byte[] encode(GroupCoordinator.Committed c) {
        return (c.offset() + "," + c.leaderEpoch() + "," + (c.metadata() == null ? "" : c.metadata()))
                .getBytes(StandardCharsets.UTF_8);
    }

    static GroupCoordinator.Committed decode(byte[] b) {
        String s = new String(b, StandardCharsets.UTF_8);
        String[] p = s.split(",", 3);
        return new GroupCoordinator.Committed(Long.parseLong(p[0]), Integer.parseInt(p[1]), p[2]);
    }

    static byte[] encodeTime(long epochMs) {
        return Long.toString(epochMs).getBytes(StandardCharsets.UTF_8);
    }

    /** A stored commit time, or 0 (long ago) for one that does not parse. */
    static long decodeTime(byte[] b) {
        try {
            return Long.parseLong(new String(b, StandardCharsets.UTF_8));
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
