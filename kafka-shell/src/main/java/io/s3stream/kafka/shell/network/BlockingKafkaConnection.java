package io.s3stream.kafka.shell.network;

import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestHeader;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;

/**
 * One blocking Kafka-protocol connection: a request out, its response back, one at a time. For the few requests a
 * shell sends to another shell (WriteTxnMarkers, over the inter-broker listener's TLS and SASL) and for tests that
 * need exact requests; not for the data path.
 */
public final class BlockingKafkaConnection implements AutoCloseable {
    private final Socket socket;
    private final String clientId;
    private int correlation;

    /** Connects to {@code host:port} in plaintext; {@code timeoutMs} bounds the connect and every read. */
    public BlockingKafkaConnection(String host, int port, int timeoutMs, String clientId) throws IOException {
        this(host, port, timeoutMs, clientId, InterShellSecurity.PLAINTEXT);
    }

    /**
     * Connects to {@code host:port} with {@code security}'s TLS and logs in with its SASL mechanism, if any;
     * {@code timeoutMs} bounds the connect and every read.
     */
    public BlockingKafkaConnection(String host, int port, int timeoutMs, String clientId, InterShellSecurity security)
            throws IOException {
        this.socket = security.connect(host, port, timeoutMs);
        this.clientId = clientId;
        try {
            security.authenticate(this, host);
        } catch (IOException | RuntimeException e) {
            socket.close();
            throw e;
        }
    }

    /** Sends {@code request} as version {@code version} of {@code key} and waits for its response. */
    public synchronized AbstractResponse call(ApiKeys key, short version, AbstractRequest request) throws IOException {
        RequestHeader header = new RequestHeader(key, version, clientId, ++correlation);
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

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
