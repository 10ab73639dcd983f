package io.s3stream.kafka.shell;

import io.s3stream.kafka.shell.network.BlockingKafkaConnection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

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

    /**
     * Every Kafka batch of one partition from {@code from} up to its high watermark, as stored (read_uncommitted, so
     * control batches included), by Fetch v12.
     */
    List<MutableRecordBatch> batches(String topic, int partition, long from) throws IOException {
        List<MutableRecordBatch> out = new ArrayList<>();
        TopicPartition tp = new TopicPartition(topic, partition);
        long next = from;
        while (true) {
            FetchRequest request = FetchRequest.Builder.forConsumer((short) 12, 0, 1, Map.of(tp,
                    new FetchRequest.PartitionData(Uuid.ZERO_UUID, next, -1, 1 << 20, Optional.empty())))
                    .build((short) 12);
            FetchResponse response = (FetchResponse) call(ApiKeys.FETCH, (short) 12, request);
            FetchResponseData.PartitionData data = response.data().responses().getFirst().partitions().getFirst();
            if (data.errorCode() != Errors.NONE.code()) {
                throw new IOException("fetch of " + tp + " at " + next + ": " + Errors.forCode(data.errorCode()));
            }
            long before = next;
            for (MutableRecordBatch b : ((MemoryRecords) data.records()).batches()) {
                if (b.lastOffset() >= next) {
                    out.add(b);
                    next = b.lastOffset() + 1;
                }
            }
            if (next >= data.highWatermark() || next == before) {
                return out;
            }
        }
    }

    @Override
    public void close() throws IOException {
        connection.close();
    }
}
