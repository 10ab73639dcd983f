package io.s3stream.kafka.shell;

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
import org.apache.kafka.common.requests.RequestHeader;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;

/** A one-connection blocking Kafka client for tests that need exact requests (sequence numbers, retries). */
final class RawClient implements AutoCloseable {
    private final Socket socket;
    private int correlation;

    RawClient(int port) throws IOException {
        socket = new Socket("127.0.0.1", port);
        socket.setSoTimeout(10_000);
    }

    AbstractResponse call(ApiKeys key, short version, AbstractRequest request) throws IOException {
        RequestHeader header = new RequestHeader(key, version, "raw", ++correlation);
        ByteBuffer b = request.serializeWithHeader(header);
        DataOutputStream out = new DataOutputStream(socket.getOutputStream());
        out.writeInt(b.remaining());
        out.write(b.array(), b.arrayOffset() + b.position(), b.remaining());
        out.flush();
        DataInputStream in = new DataInputStream(socket.getInputStream());
        byte[] body = new byte[in.readInt()];
        in.readFully(body);
        return AbstractResponse.parseResponse(ByteBuffer.wrap(body), header);
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
        socket.close();
    }
}
