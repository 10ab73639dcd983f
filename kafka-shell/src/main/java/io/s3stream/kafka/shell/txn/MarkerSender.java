package io.s3stream.kafka.shell.txn;

import io.s3stream.kafka.shell.network.BlockingKafkaConnection;
import io.s3stream.kafka.shell.network.InterShellSecurity;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.TransactionResult;
import org.apache.kafka.common.requests.WriteTxnMarkersRequest;
import org.apache.kafka.common.requests.WriteTxnMarkersResponse;

import java.io.IOException;
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

    private final InterShellSecurity security;
    private final Map<String, Connection> connections = new ConcurrentHashMap<>();
    private final ExecutorService threads = Executors.newThreadPerTaskExecutor(
            Thread.ofVirtual().name("kafka-shell-txn-markers-", 0).factory());

    /** @param security the TLS and SASL of the other shells' inter-broker listener */
    MarkerSender(InterShellSecurity security) {
        this.security = security;
    }

    /** Writes one marker to {@code partitions} on the shell at {@code hostPort}; per-partition errors. */
    CompletableFuture<Map<TopicPartition, Errors>> send(String hostPort, long producerId, short epoch, boolean commit,
                                                       int coordinatorEpoch, List<TopicPartition> partitions) {
        return CompletableFuture.supplyAsync(() -> {
            WriteTxnMarkersRequest request = new WriteTxnMarkersRequest.Builder(List.of(
                    new WriteTxnMarkersRequest.TxnMarkerEntry(producerId, epoch, coordinatorEpoch,
                            commit ? TransactionResult.COMMIT : TransactionResult.ABORT, partitions, (short) 1)))
                    .build(VERSION);
            Connection c = connections.computeIfAbsent(hostPort, hp -> new Connection(hp, security));
            try {
                WriteTxnMarkersResponse response = (WriteTxnMarkersResponse) c.call(ApiKeys.WRITE_TXN_MARKERS, request);
                Map<TopicPartition, Errors> errors = response.errorsByProducerId().get(producerId);
                return errors == null ? Map.of() : errors;
            } catch (IOException | RuntimeException e) {
                connections.remove(hostPort, c);
                c.close();
                throw new java.io.UncheckedIOException("WriteTxnMarkers to " + hostPort + " failed: "
                        + (e instanceof IOException ? e.getMessage() : e.toString()), e instanceof IOException io ? io
                        : new IOException(e));
            }
        }, threads);
    }

    @Override
    public void close() {
        threads.shutdownNow();
        connections.values().forEach(Connection::close);
    }

    /** A connection to one shell, opened on first use and again after a failure. */
    private static final class Connection {
        private final String hostPort;
        private final InterShellSecurity security;
        private BlockingKafkaConnection connection; // guarded by this

        Connection(String hostPort, InterShellSecurity security) {
            this.hostPort = hostPort;
            this.security = security;
        }

        synchronized AbstractResponse call(ApiKeys key, AbstractRequest request) throws IOException {
            if (connection == null) {
                int colon = hostPort.lastIndexOf(':');
                connection = new BlockingKafkaConnection(hostPort.substring(0, colon),
                        Integer.parseInt(hostPort.substring(colon + 1)), TIMEOUT_MS, "kafka-shell-txn-coordinator",
                        security);
            }
            return connection.call(key, request.version(), request);
        }

        synchronized void close() {
            if (connection != null) {
                try {
                    connection.close();
                } catch (IOException ignored) {
                    // closing a broken connection
                }
                connection = null;
            }
        }
    }
}
