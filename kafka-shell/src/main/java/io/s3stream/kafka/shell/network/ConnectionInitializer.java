package io.s3stream.kafka.shell.network;

import io.netty.channel.ChannelInitializer;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.timeout.IdleStateHandler;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.security.ssl.SslPrincipalMapper;

import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The pipeline of one client connection: TLS on an SSL or SASL_SSL listener ({@link TlsContexts}), the idle timer
 * ({@code connections.max.idle.ms}), the frame decoder under the shared request memory budget
 * ({@code queued.max.request.bytes}, {@code socket.request.max.bytes}), and the request handler.
 */
public final class ConnectionInitializer extends ChannelInitializer<SocketChannel> {
    private final Supplier<ApiDispatcher> apis;
    private final int maxFrameBytes;
    private final RequestMemoryPool pool;
    private final long idleMs;
    private final java.util.function.Supplier<SslContext> tls;
    private final SaslAuthentication sasl;
    private final ListenerName listenerName;
    private final SecurityProtocol protocol;
    private final SslPrincipalMapper principalMapper;
    private final OpenConnections connections;

    /**
     * @param apis          the dispatcher; asked for at the first connection (the listener is bound before it exists)
     * @param maxFrameBytes {@code socket.request.max.bytes}
     * @param pool          the request memory budget shared by every connection
     * @param idleMs        {@code connections.max.idle.ms}; zero or negative for no idle timeout
     * @param tls           the server's current TLS context on an SSL or SASL_SSL listener (certificates can be
     *                      reloaded), else null
     * @param sasl          the authentication of a SASL listener, else null
     * @param listenerName  the listener's name (request contexts carry it)
     * @param protocol      the listener's security protocol
     * @param principalMapper {@code ssl.principal.mapping.rules} of a TLS listener (a client certificate's subject to
     *                        a user name), else null
     * @param connections   the shell's open connections, which this one joins (closed with the shell)
     */
    public ConnectionInitializer(Supplier<ApiDispatcher> apis, int maxFrameBytes, RequestMemoryPool pool, long idleMs,
                                 java.util.function.Supplier<SslContext> tls, SaslAuthentication sasl, String listenerName,
                                 SecurityProtocol protocol, SslPrincipalMapper principalMapper,
                                 OpenConnections connections) {
        this.apis = apis;
        this.maxFrameBytes = maxFrameBytes;
        this.pool = pool;
        this.idleMs = idleMs;
        this.tls = tls;
        this.sasl = sasl;
        this.listenerName = ListenerName.normalised(listenerName);
        this.protocol = protocol;
        this.principalMapper = principalMapper;
        this.connections = connections;
    }

    @Override
    protected void initChannel(SocketChannel ch) {
        if (!connections.admit(ch)) {
            return; // the shell is closing: the connection is being closed, not served
        }
        if (tls != null) {
            ch.pipeline().addLast(tls.get().newHandler(ch.alloc()));
        }
        if (idleMs > 0) {
            ch.pipeline().addLast(new IdleStateHandler(0, 0, idleMs, TimeUnit.MILLISECONDS));
        }
        ch.pipeline().addLast(new BudgetedFrameDecoder(maxFrameBytes, pool));
        ch.pipeline().addLast(new KafkaConnectionHandler(apis.get(), sasl == null ? null : sasl.session(), listenerName,
                protocol, principalMapper));
    }
}
