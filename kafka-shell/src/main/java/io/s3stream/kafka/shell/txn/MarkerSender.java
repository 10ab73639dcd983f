package io.s3stream.kafka.shell.txn;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.TransactionResult;
import org.apache.kafka.common.requests.WriteTxnMarkersRequest;
import org.apache.kafka.common.requests.WriteTxnMarkersResponse;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Sends WriteTxnMarkers to the shell that leads a partition, as Kafka's transaction coordinator does to partition
 * leaders: one blocking connection per shell, one request at a time on it, each call on a virtual thread.
 */
final class MarkerSender implements AutoCloseable {
    private static final short VERSION = 1;
    private static final int TIMEOUT_MS = 30_000;

    private final Map<String, Connection> connections = new ConcurrentHashMap<>();
    private final ExecutorService threads = Executors.newThreadPerTaskExecutor(
            Thread.ofVirtual().name("kafka-shell-txn-markers-", 0).factory());

    /** Writes one marker to {@code partitions} on the shell at {@code hostPort}; per-partition errors. */
    CompletableFuture<Map<TopicPartition, Errors>> send(String hostPort, long producerId, short epoch, boolean commit,
                                                       int coordinatorEpoch, List<TopicPartition> partitions) {
        return CompletableFuture.supplyAsync(() -> {
            WriteTxnMarkersRequest request = new WriteTxnMarkersRequest.Builder(List.of(
                    new WriteTxnMarkersRequest.TxnMarkerEntry(producerId, epoch, coordinatorEpoch,
                            commit ? TransactionResult.COMMIT : TransactionResult.ABORT, partitions, (short) 1)))
                    .build(VERSION);
            Connection c = connections.computeIfAbsent(hostPort, Connection::new);
            try {
                WriteTxnMarkersResponse response = (WriteTxnMarkersResponse) c.call(ApiKeys.WRITE_TXN_MARKERS, request);
                Map<TopicPartition, Errors> errors = response.errorsByProducerId().get(producerId);
                return errors == null ? Map.of() : errors;
            } catch (IOException | RuntimeException e) {
                connections.remove(hostPort, c);
                c.close();
                throw new java.io.UncheckedIOException(new IOException("WriteTxnMarkers to " + hostPort + " failed: " + e, e));
            }
        }, threads);
    }

    @Override
    public void close() {
        threads.shutdownNow();
        connections.values().forEach(Connection::close);
    }

    private static final class Connection {
        private final String hostPort;
        private Socket socket;
        private int correlation;

        Connection(String hostPort) {
            this.hostPort = hostPort;
        }

        synchronized AbstractResponse call(ApiKeys key, org.apache.kafka.common.requests.AbstractRequest request)
                throws IOException {
            if (socket == null) {
                int colon = hostPort.lastIndexOf(':');
                Socket s = new Socket();
                s.connect(new InetSocketAddress(hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1))),
                        TIMEOUT_MS);
                s.setSoTimeout(TIMEOUT_MS);
                s.setTcpNoDelay(true);
                socket = s;
            }
            RequestHeader header = new RequestHeader(key, request.version(), "kafka-shell-txn-coordinator", ++correlation);
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

        synchronized void close() {
            if (socket != null) {
                try {
                    socket.close();
                } catch (IOException ignored) {
                    // closing a broken connection
                }
                socket = null;
            }
        }
    }
}
