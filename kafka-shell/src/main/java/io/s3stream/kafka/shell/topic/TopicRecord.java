package io.s3stream.kafka.shell.topic;

import java.util.HashSet;
import java.util.Properties;
import java.util.Set;

/**
 * Where a topic's record ({@code kafka/topic/<name>}, {@link StoredProperties}) keeps its partitions' streams:
 * {@code stream.<partition>=<stream id>}. The one place that writes and reads them, for the registry and for the
 * orphan sweep, which must agree on which streams a record names.
 */
final class TopicRecord {
    private static final String STREAM = "stream.";

    private TopicRecord() {
    }

    /** The stream of {@code partition}; fails on a record without it. */
    static long stream(Properties record, int partition) {
        String id = record.getProperty(STREAM + partition);
        if (id == null) {
            throw new IllegalStateException("the topic record names no stream for partition " + partition);
        }
        return Long.parseLong(id.trim());
    }

    /** Records {@code streamId} as the stream of {@code partition}. */
    static void stream(Properties record, int partition, long streamId) {
        record.setProperty(STREAM + partition, Long.toString(streamId));
    }

    /** Every stream id the record names (a value that is not an id names nothing). */
    static Set<Long> streamIds(Properties record) {
        Set<Long> ids = new HashSet<>();
        for (String key : record.stringPropertyNames()) {
            if (key.startsWith(STREAM)) {
                try {
                    ids.add(Long.parseLong(record.getProperty(key).trim()));
                } catch (NumberFormatException e) {
                    // not a stream id: names nothing
                }
            }
        }
        return ids;
    }
}
