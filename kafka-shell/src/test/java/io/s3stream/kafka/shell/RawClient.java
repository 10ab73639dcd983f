package io.s3stream.kafka.shell;

import io.s3stream.kafka.shell.network.BlockingKafkaConnection;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;

import java.io.IOException;

/** A one-connection blocking Kafka client for tests that need exact requests (sequence numbers, retries). */
final class RawClient implements AutoCloseable {
    private final BlockingKafkaConnection connection;

    RawClient(int port) throws IOException {
        connection = new BlockingKafkaConnection("127.0.0.1", port, 10_000, "raw");
    }

    AbstractResponse call(ApiKeys key, short version, AbstractRequest request) throws IOException {
        return connection.call(key, version, request);
    }

    static MemoryRecords idempotent(long producerId, short epoch, int baseSequence, int count) {
        SimpleRecord[] records = new SimpleRecord[count];
        for (int i = 0; i < count; i++) {
            records[i] = new SimpleRecord(System.currentTimeMillis(), null, ("s" + (baseSequence + i)).getBytes());
        }
        return MemoryRecords.withIdempotentRecords(Compression.NONE, producerId, epoch, baseSequence, records);
    }

    /** Produces {@code records} to one partition with acks=all; returns {error, baseOffset}. */
    ProduceResponseData produce(String topic, int partition, MemoryRecords records) throws IOException {
        ProduceRequestData data = new ProduceRequestData().setAcks((short) -1).setTimeoutMs(10_000);
        ProduceRequestData.TopicProduceData t = new ProduceRequestData.TopicProduceData().setName(topic);
        t.partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(partition).setRecords(records));
        data.topicData().add(t);
        ProduceResponse r = (ProduceResponse) call(ApiKeys.PRODUCE, (short) 9,
                new ProduceRequest.Builder((short) 9, (short) 9, data).build((short) 9));
        var p = r.data().responses().iterator().next().partitionResponses().getFirst();
        return new ProduceResponseData(Errors.forCode(p.errorCode()), p.baseOffset());
    }

    record ProduceResponseData(Errors error, long baseOffset) {
    }

    @Override
    public void close() throws IOException {
        connection.close();
    }
}
