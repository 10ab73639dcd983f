package io.s3stream.kafka.shell.txn;

import org.apache.kafka.common.TopicPartition;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Comparator;
import java.util.Set;
import java.util.TreeSet;

/**
 * What the transaction coordinator keeps of one transactional id, in the shared key-value space
 * ({@code kafka/txn/<transactional id>}), changed only by compare-and-set so that two shells that both believe they
 * coordinate the id (briefly, while membership changes) cannot both move it.
 *
 * @param producerId the producer id the transactional id holds
 * @param epoch      the current producer epoch: requests with an older one are fenced
 * @param lastEpoch  the epoch before the coordinator last bumped it itself (an abort on timeout), -1 if never: the
 *                   producer still at that epoch may ask for a new one (KIP-360) instead of being fenced for good
 * @param startMs    when the ongoing transaction began (its first AddPartitionsToTxn or AddOffsetsToTxn), -1 if none
 * @param partitions the partitions the transaction wrote to, which get its markers
 * @param groups     the consumer groups it committed offsets for, which get them on commit
 */
record TxnMetadata(long producerId, short epoch, short lastEpoch, int timeoutMs, Status status, long startMs,
                   long updateMs, Set<TopicPartition> partitions, Set<String> groups) {

    /** Kafka's transaction states, with the names DescribeTransactions and ListTransactions answer. */
    enum Status {
        EMPTY("Empty"), ONGOING("Ongoing"), PREPARE_COMMIT("PrepareCommit"), PREPARE_ABORT("PrepareAbort"),
        COMPLETE_COMMIT("CompleteCommit"), COMPLETE_ABORT("CompleteAbort");

        final String kafkaName;

        Status(String kafkaName) {
            this.kafkaName = kafkaName;
        }

        boolean preparing() {
            return this == PREPARE_COMMIT || this == PREPARE_ABORT;
        }
    }

    static Set<TopicPartition> partitionSet() {
        return new TreeSet<>(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
    }

    TxnMetadata with(Status newStatus, long nowMs) {
        return new TxnMetadata(producerId, epoch, lastEpoch, timeoutMs, newStatus, startMs, nowMs, partitions, groups);
    }

    byte[] encode() {
        StringBuilder b = new StringBuilder("v1 ").append(producerId).append(' ').append(epoch).append(' ')
                .append(lastEpoch).append(' ').append(timeoutMs).append(' ').append(status.name()).append(' ')
                .append(startMs).append(' ').append(updateMs).append('\n');
        partitions.forEach(tp -> b.append("p ").append(tp.topic()).append(' ').append(tp.partition()).append('\n'));
        groups.forEach(g -> b.append("g ").append(URLEncoder.encode(g, StandardCharsets.UTF_8)).append('\n'));
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }

    static TxnMetadata decode(byte[] bytes) {
        String[] lines = new String(bytes, StandardCharsets.UTF_8).split("\n");
        String[] h = lines[0].split(" ");
        if (!h[0].equals("v1") || h.length != 8) {
            throw new IllegalArgumentException("unknown transaction metadata format: " + lines[0]);
        }
        Set<TopicPartition> partitions = partitionSet();
        Set<String> groups = new TreeSet<>();
        for (int i = 1; i < lines.length; i++) {
            String[] f = lines[i].split(" ");
            switch (f[0]) {
                case "p" -> partitions.add(new TopicPartition(f[1], Integer.parseInt(f[2])));
                case "g" -> groups.add(URLDecoder.decode(f[1], StandardCharsets.UTF_8));
                default -> throw new IllegalArgumentException("bad transaction metadata line: " + lines[i]);
            }
        }
        return new TxnMetadata(Long.parseLong(h[1]), Short.parseShort(h[2]), Short.parseShort(h[3]),
                Integer.parseInt(h[4]), Status.valueOf(h[5]), Long.parseLong(h[6]), Long.parseLong(h[7]),
                partitions, groups);
    }
}
