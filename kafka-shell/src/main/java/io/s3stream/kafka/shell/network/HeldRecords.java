package io.s3stream.kafka.shell.network;

import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.FetchResponse;

import java.util.ArrayList;
import java.util.List;

/**
 * Record sets of a response that hold memory of the storage library until the connection has written them (a Fetch
 * response's batches are sent from the library's buffers, not copied). The connection releases them once the
 * response's bytes left, or were given up with the connection.
 */
public interface HeldRecords {
    /** Gives the memory back; the records must not be read afterwards. Idempotent. */
    void release();

    /** Releases every held record set of {@code response} (only Fetch responses hold any). */
    static void releaseAll(AbstractResponse response) {
        heldIn(response).forEach(HeldRecords::release);
    }

    /** Whether {@code response} holds any record set that must be released after it is written. */
    static boolean holdsAny(AbstractResponse response) {
        return !heldIn(response).isEmpty();
    }

    private static List<HeldRecords> heldIn(AbstractResponse response) {
        if (!(response instanceof FetchResponse fetch)) {
            return List.of();
        }
        List<HeldRecords> held = new ArrayList<>();
        for (FetchResponseData.FetchableTopicResponse topic : fetch.data().responses()) {
            for (FetchResponseData.PartitionData partition : topic.partitions()) {
                if (partition.records() instanceof HeldRecords h) {
                    held.add(h);
                }
            }
        }
        return held;
    }
}
