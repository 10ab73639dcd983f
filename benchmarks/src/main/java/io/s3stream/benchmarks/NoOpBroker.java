package io.s3stream.benchmarks;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.DescribeClusterResponseData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.network.Send;
import org.apache.kafka.common.network.TransferableChannel;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiVersionsResponse;
import org.apache.kafka.common.requests.CreateTopicsRequest;
import org.apache.kafka.common.requests.CreateTopicsResponse;
import org.apache.kafka.common.requests.DescribeClusterResponse;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.apache.kafka.common.requests.MetadataRequest;
import org.apache.kafka.common.requests.MetadataResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;

/**
 * A Kafka-protocol broker that stores nothing: it answers a produce as soon as it has read the request, with the
 * offsets it would have assigned, and forgets the records. It is the comparisons' yardstick, not a broker: on a machine
 * where the load generator shares the cores with the broker, what a producer reaches against it is the most any
 * broker can give that producer here (throughput), and what it waits is the least (latency). A real broker's figure
 * divided by this one's says how much of the producer's budget the broker's work takes.
 *
 * <p>It serves what {@code ProducerPerformance} and {@code kafka-topics --create} send: ApiVersions, Metadata (topics
 * it does not know are created with one partition), CreateTopics, DescribeCluster, InitProducerId and Produce. Any
 * other request is answered with {@code UNSUPPORTED_VERSION}. It does the least a broker must: one platform thread
 * per connection reads each request whole, parses it with kafka-clients' classes (as kafka-shell does; record batches
 * are walked by their headers to count offsets, never decompressed or checked), and writes the response before
 * reading the next, so responses keep the requests' order. There is no fetch: nothing was kept.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.s3stream.benchmarks.NoOpBroker port
 * </pre>
 * Prints {@code READY port=<port>} once listening (port 0 picks a free one); runs until killed.
 */
public final class NoOpBroker implements AutoCloseable {
    private static final int NODE_ID = 0;
    private static final int MAX_FRAME = 100 * 1024 * 1024;
    private static final ListenerName LISTENER = ListenerName.forSecurityProtocol(SecurityProtocol.PLAINTEXT);

    private final ServerSocketChannel server;
    private final Map<String, Topic> topics = new ConcurrentHashMap<>();
    private final AtomicLong producerIds = new AtomicLong(1000);

    private record Topic(String name, Uuid id, AtomicLong[] nextOffsets) {
        static Topic of(String name, int partitions) {
            AtomicLong[] offsets = new AtomicLong[partitions];
            for (int i = 0; i < partitions; i++) {
                offsets[i] = new AtomicLong();
            }
            return new Topic(name, Uuid.randomUuid(), offsets);
        }
    }

    public NoOpBroker(int port) throws IOException {
        server = ServerSocketChannel.open();
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
        Thread.ofPlatform().daemon().name("no-op-broker-accept").start(this::accept);
    }

    public int port() {
        return ((InetSocketAddress) server.socket().getLocalSocketAddress()).getPort();
    }

    @Override
    public void close() throws IOException {
        server.close();
    }

    private void accept() {
        int n = 0;
        while (server.isOpen()) {
            try {
                SocketChannel ch = server.accept();
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                Thread.ofPlatform().daemon().name("no-op-broker-conn-" + n++).start(() -> serve(ch));
            } catch (IOException e) {
                if (server.isOpen()) {
                    System.err.println("no-op broker: accept failed: " + e);
                }
            }
        }
    }

    private void serve(SocketChannel ch) {
        String connectionId = ch.socket().getRemoteSocketAddress().toString();
        ByteBuffer size = ByteBuffer.allocate(4);
        ByteBuffer frame = ByteBuffer.allocate(64 * 1024);
        BlockingChannel out = new BlockingChannel(ch);
        try (ch) {
            while (true) {
                size.clear();
                readFully(ch, size);
                int length = size.getInt(0);
                if (length < 0 || length > MAX_FRAME) {
                    throw new IOException("frame of " + length + " bytes");
                }
                if (frame.capacity() < length) {
                    frame = ByteBuffer.allocate(Math.max(length, frame.capacity() * 2));
                }
                frame.clear().limit(length);
                readFully(ch, frame);
                frame.flip();
                RequestHeader header = RequestHeader.parse(frame);
                RequestContext context = new RequestContext(header, connectionId, ch.socket().getInetAddress(),
                        KafkaPrincipal.ANONYMOUS, LISTENER, SecurityProtocol.PLAINTEXT, ClientInformation.EMPTY,
                        false);
                AbstractRequest request = context.parseRequest(frame).request;
                AbstractResponse response = answer(header.apiKey(), request);
                if (response == null) {
                    continue; // acks=0
                }
                Send send = context.buildResponseSend(response);
                while (!send.completed()) {
                    send.writeTo(out);
                }
            }
        } catch (EOFException closed) {
            // the client went away
        } catch (IOException | RuntimeException e) {
            System.err.println("no-op broker: closing " + connectionId + ": " + e);
        }
    }

    private AbstractResponse answer(ApiKeys key, AbstractRequest request) {
        return switch (key) {
            case API_VERSIONS -> new ApiVersionsResponse(new ApiVersionsResponseData()
                    .setApiKeys(ApiVersionsResponse.filterApis(ApiMessageType.ListenerType.BROKER, true, true)));
            case METADATA -> metadata(((MetadataRequest) request).data());
            case CREATE_TOPICS -> createTopics(((CreateTopicsRequest) request).data());
            case DESCRIBE_CLUSTER -> new DescribeClusterResponse(new DescribeClusterResponseData()
                    .setClusterId("no-op").setControllerId(NODE_ID)
                    .setBrokers(new DescribeClusterResponseData.DescribeClusterBrokerCollection(List.of(
                            new DescribeClusterResponseData.DescribeClusterBroker().setBrokerId(NODE_ID)
                                    .setHost(host()).setPort(port())).iterator())));
            case INIT_PRODUCER_ID -> new InitProducerIdResponse(new InitProducerIdResponseData()
                    .setProducerId(producerIds.getAndIncrement()).setProducerEpoch((short) 0));
            case PRODUCE -> produce((ProduceRequest) request);
            default -> request.getErrorResponse(0, Errors.UNSUPPORTED_VERSION.exception(
                    "the no-op broker does not serve " + key));
        };
    }

    private String host() {
        return InetAddress.getLoopbackAddress().getHostAddress();
    }

    private MetadataResponse metadata(MetadataRequestData data) {
        MetadataResponseData response = new MetadataResponseData().setClusterId("no-op").setControllerId(NODE_ID);
        response.brokers().add(new MetadataResponseData.MetadataResponseBroker()
                .setNodeId(NODE_ID).setHost(host()).setPort(port()));
        List<Topic> asked = data.topics() == null
                ? List.copyOf(topics.values())
                : data.topics().stream()
                        .map(t -> t.name() == null ? byId(t.topicId()) : topics.computeIfAbsent(t.name(), n -> Topic.of(n, 1)))
                        .filter(java.util.Objects::nonNull).toList();
        for (Topic topic : asked) {
            MetadataResponseData.MetadataResponseTopic t = new MetadataResponseData.MetadataResponseTopic()
                    .setName(topic.name()).setTopicId(topic.id());
            for (int p = 0; p < topic.nextOffsets().length; p++) {
                t.partitions().add(new MetadataResponseData.MetadataResponsePartition()
                        .setPartitionIndex(p).setLeaderId(NODE_ID).setLeaderEpoch(0)
                        .setReplicaNodes(List.of(NODE_ID)).setIsrNodes(List.of(NODE_ID)));
            }
            response.topics().add(t);
        }
        return new MetadataResponse(response, ApiKeys.METADATA.latestVersion());
    }

    private CreateTopicsResponse createTopics(CreateTopicsRequestData data) {
        CreateTopicsResponseData response = new CreateTopicsResponseData();
        for (CreateTopicsRequestData.CreatableTopic t : data.topics()) {
            int partitions = t.numPartitions() > 0 ? t.numPartitions() : 1;
            Topic created = Topic.of(t.name(), partitions);
            Topic existing = topics.putIfAbsent(t.name(), created);
            response.topics().add(new CreateTopicsResponseData.CreatableTopicResult().setName(t.name())
                    .setTopicId(existing == null ? created.id() : existing.id())
                    .setErrorCode(existing == null ? Errors.NONE.code() : Errors.TOPIC_ALREADY_EXISTS.code())
                    .setNumPartitions(partitions).setReplicationFactor((short) 1));
        }
        return new CreateTopicsResponse(response);
    }

    private ProduceResponse produce(ProduceRequest request) {
        ProduceRequestData data = request.data();
        ProduceResponseData response = new ProduceResponseData();
        for (ProduceRequestData.TopicProduceData t : data.topicData()) {
            Topic topic = t.topicId() != null && !Uuid.ZERO_UUID.equals(t.topicId()) ? byId(t.topicId())
                    : topics.get(t.name());
            ProduceResponseData.TopicProduceResponse tr = new ProduceResponseData.TopicProduceResponse()
                    .setName(t.name()).setTopicId(t.topicId());
            for (ProduceRequestData.PartitionProduceData p : t.partitionData()) {
                ProduceResponseData.PartitionProduceResponse pr = new ProduceResponseData.PartitionProduceResponse()
                        .setIndex(p.index()).setLogAppendTimeMs(RecordBatch.NO_TIMESTAMP);
                if (topic == null || p.index() < 0 || p.index() >= topic.nextOffsets().length) {
                    pr.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
                } else {
                    long records = 0;
                    for (RecordBatch batch : ((MemoryRecords) p.records()).batches()) {
                        records += batch.lastOffset() - batch.baseOffset() + 1;
                    }
                    pr.setBaseOffset(topic.nextOffsets()[p.index()].getAndAdd(records)).setLogStartOffset(0);
                }
                tr.partitionResponses().add(pr);
            }
            response.responses().add(tr);
        }
        return data.acks() == 0 ? null : new ProduceResponse(response);
    }

    private Topic byId(Uuid id) {
        for (Topic t : topics.values()) {
            if (t.id().equals(id)) {
                return t;
            }
        }
        return null;
    }

    private static void readFully(SocketChannel ch, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (ch.read(buffer) < 0) {
                throw new EOFException();
            }
        }
    }

    /** A blocking socket as the channel kafka-clients' {@link Send} writes to. */
    private record BlockingChannel(SocketChannel ch) implements TransferableChannel {
        @Override
        public boolean hasPendingWrites() {
            return false;
        }

        @Override
        public long transferFrom(FileChannel fileChannel, long position, long count) throws IOException {
            return fileChannel.transferTo(position, count, ch);
        }

        @Override
        public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
            return ch.write(srcs, offset, length);
        }

        @Override
        public long write(ByteBuffer[] srcs) throws IOException {
            return ch.write(srcs);
        }

        @Override
        public int write(ByteBuffer src) throws IOException {
            return ch.write(src);
        }

        @Override
        public boolean isOpen() {
            return ch.isOpen();
        }

        @Override
        public void close() throws IOException {
            ch.close();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: NoOpBroker port");
            System.exit(2);
        }
        NoOpBroker broker = new NoOpBroker(Integer.parseInt(args[0]));
        System.out.println("READY port=" + broker.port());
        Thread.currentThread().join();
    }
}
