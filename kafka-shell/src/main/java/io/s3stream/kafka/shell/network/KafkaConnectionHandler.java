package io.s3stream.kafka.shell.network;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.timeout.IdleStateEvent;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.network.Send;
import org.apache.kafka.common.network.TransferableChannel;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.SaslAuthenticateRequest;
import org.apache.kafka.common.requests.SaslHandshakeRequest;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.security.ssl.SslPrincipalMapper;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * One client connection: turns length-delimited frames into kafka-clients requests, hands them to {@link ApiDispatcher}
 * and writes the responses back in request order, as the Kafka protocol requires.
 *
 * <p>Failure: a frame whose header or body does not parse closes the connection (there is no correlation id to
 * answer to); a known API at a version we do not serve gets UNSUPPORTED_VERSION. Nothing here touches storage.
 * State lives on the channel's event loop.
 */
public final class KafkaConnectionHandler extends ChannelInboundHandlerAdapter {
    /** Requests in flight per connection before the server stops reading from it. */
    private static final int MAX_IN_FLIGHT = 64;
    private static final System.Logger LOG = System.getLogger(KafkaConnectionHandler.class.getName());
    private static final RateLimitedLog IDLE = new RateLimitedLog(LOG, System.Logger.Level.INFO,
            TimeUnit.MINUTES.toNanos(1));
    private static final RateLimitedLog TLS_FAILED = new RateLimitedLog(LOG, System.Logger.Level.INFO,
            java.util.concurrent.TimeUnit.MINUTES.toNanos(1));
    private static final RateLimitedLog FAILED = new RateLimitedLog(LOG, System.Logger.Level.WARNING,
            TimeUnit.MINUTES.toNanos(1));

    private final ApiDispatcher apis;
    /** The connection's SASL authentication on a SASL listener, else null. */
    private final SaslAuthentication.Session sasl;
    private final ListenerName listenerName;
    private final SecurityProtocol protocol;
    private final SslPrincipalMapper principalMapper;
    /** The principal of a TLS client certificate, found at the first request (after the handshake); null until then. */
    private KafkaPrincipal tlsPrincipal;
    private static final RateLimitedLog SASL_REFUSED = new RateLimitedLog(LOG, System.Logger.Level.INFO,
            TimeUnit.MINUTES.toNanos(1));
    private final ArrayDeque<Slot> inFlight = new ArrayDeque<>();
    private ChannelHandlerContext ctx;
    /** The connection closed: answers completing now are released, not written (event loop only). */
    private boolean inactive;
    /** Until when (System.nanoTime) the connection is not read: a quota's throttle time (KIP-219). */
    private long mutedUntilNanos = System.nanoTime();
    private final ChannelAdapter channel = new ChannelAdapter();

    private static final class Slot {
        final RequestContext context;
        AbstractResponse response;
        boolean done;

        Slot(RequestContext context) {
            this.context = context;
        }
    }

    public KafkaConnectionHandler(ApiDispatcher apis) {
        this(apis, null, ListenerName.forSecurityProtocol(SecurityProtocol.PLAINTEXT), SecurityProtocol.PLAINTEXT, null);
    }

    KafkaConnectionHandler(ApiDispatcher apis, SaslAuthentication.Session sasl, ListenerName listenerName,
                           SecurityProtocol protocol, SslPrincipalMapper principalMapper) {
        this.apis = apis;
        this.sasl = sasl;
        this.listenerName = listenerName;
        this.protocol = protocol;
        this.principalMapper = principalMapper;
    }

    /**
     * The connection's principal, as Kafka finds it: the SASL user on a SASL listener; on an SSL listener the client
     * certificate's subject mapped by {@code ssl.principal.mapping.rules} (DEFAULT: the whole distinguished name,
     * {@code User:CN=alice,O=example}); else, and for a TLS client without a certificate, ANONYMOUS.
     */
    private KafkaPrincipal principal(ChannelHandlerContext ctx) {
        if (sasl != null) {
            return sasl.authenticated() ? sasl.principal() : KafkaPrincipal.ANONYMOUS;
        }
        if (principalMapper == null) {
            return KafkaPrincipal.ANONYMOUS;
        }
        if (tlsPrincipal == null) {
            tlsPrincipal = KafkaPrincipal.ANONYMOUS;
            SslHandler tls = ctx.pipeline().get(SslHandler.class);
            if (tls != null) {
                try {
                    java.security.Principal peer = tls.engine().getSession().getPeerPrincipal();
                    tlsPrincipal = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, principalMapper.getName(peer.getName()));
                } catch (javax.net.ssl.SSLPeerUnverifiedException noCertificate) {
                    // a client without a certificate (ssl.client.auth=none or requested): ANONYMOUS, as in Kafka
                } catch (java.io.IOException e) {
                    LOG.log(System.Logger.Level.INFO, () -> "ssl.principal.mapping.rules do not map the certificate of "
                            + ctx.channel().remoteAddress() + "; its principal is ANONYMOUS: " + e.getMessage());
                }
            }
        }
        return tlsPrincipal;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        // The request is parsed in place: record batches of a produce stay views of the frame, which is released
        // once the request is answered (the library copies a payload before append returns). No heap copy.
        BudgetedFrameDecoder.Frame frame = (BudgetedFrameDecoder.Frame) msg;
        ByteBuffer buffer = frame.bytes().nioBufferCount() == 1 ? frame.bytes().nioBuffer() : copy(frame.bytes());
        RequestContext context;
        AbstractRequest request;
        try {
            RequestHeader header = RequestHeader.parse(buffer);
            InetSocketAddress remote = (InetSocketAddress) ctx.channel().remoteAddress();
            context = new RequestContext(header, ctx.channel().id().asShortText(),
                    remote == null ? null : remote.getAddress(), principal(ctx), listenerName, protocol,
                    ClientInformation.EMPTY, false);
            if (header.apiKey() != ApiKeys.API_VERSIONS && !header.isApiVersionSupported()) {
                throw new IllegalArgumentException("version " + header.apiVersion() + " of " + header.apiKey()
                        + " is unknown to the protocol library");
            }
            request = context.parseRequest(buffer).request;
        } catch (RuntimeException e) {
            frame.release();
            LOG.log(System.Logger.Level.DEBUG, () -> "closing " + ctx.channel() + ": unparseable request", e);
            ctx.close();
            return;
        }
        // Only a produce keeps views of the frame (its record batches); every other request's fields are copies.
        boolean holdsFrame = context.header.apiKey() == ApiKeys.PRODUCE;
        if (!holdsFrame) {
            frame.release();
        }
        ApiKeys key = context.header.apiKey();
        if (sasl != null && (key == ApiKeys.SASL_HANDSHAKE || key == ApiKeys.SASL_AUTHENTICATE)) {
            Slot slot = new Slot(context);
            inFlight.addLast(slot);
            slot.response = key == ApiKeys.SASL_HANDSHAKE ? sasl.handshake((SaslHandshakeRequest) request)
                    : sasl.authenticate((SaslAuthenticateRequest) request);
            slot.done = true;
            flush();
            if (sasl.failed()) {
                SASL_REFUSED.log(() -> "SASL authentication from " + ctx.channel().remoteAddress() + " failed; "
                        + "closing the connection");
                ctx.close();
            }
            return;
        }
        if (sasl != null && !sasl.authenticated() && key != ApiKeys.API_VERSIONS) {
            // Kafka's rule: before authentication only ApiVersions and the SASL requests are allowed.
            SASL_REFUSED.log(() -> "closing " + ctx.channel().remoteAddress() + ": " + key
                    + " before SASL authentication");
            if (holdsFrame) {
                frame.release(); // its memory goes back to the request budget
            }
            ctx.close();
            return;
        }
        if (sasl != null && sasl.expired(System.nanoTime())) {
            // KIP-368: a session past connections.max.reauth.ms that was not re-authenticated is closed.
            SASL_REFUSED.log(() -> "closing " + ctx.channel().remoteAddress() + ": its SASL session expired "
                    + "(connections.max.reauth.ms) without re-authentication");
            if (holdsFrame) {
                frame.release();
            }
            ctx.close();
            return;
        }
        Slot slot = new Slot(context);
        inFlight.addLast(slot);
        if (inFlight.size() >= MAX_IN_FLIGHT) {
            ctx.channel().config().setAutoRead(false);
        }
        CompletableFuture<AbstractResponse> f;
        try {
            f = apis.handle(context, request);
        } catch (RuntimeException e) {
            f = CompletableFuture.completedFuture(request.getErrorResponse(0, e));
        }
        f.whenComplete((response, e) -> {
            if (holdsFrame) {
                frame.release(); // the batches are appended (copied by the library) or refused
            }
        }).whenComplete((response, e) -> ctx.executor().execute(() -> {
            if (inactive) {
                if (response != null) {
                    HeldRecords.releaseAll(response); // the connection is gone: nothing will write it
                }
                return;
            }
            slot.response = e != null ? request.getErrorResponse(0, e) : response;
            slot.done = true;
            flush();
        }));
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        // Answers that were ready but not written keep the library's memory (fetched batches): give it back.
        inactive = true;
        for (Slot s : inFlight) {
            if (s.done && s.response != null) {
                HeldRecords.releaseAll(s.response);
            }
        }
        inFlight.clear();
        ctx.fireChannelInactive();
    }

    private void flush() {
        boolean wrote = false;
        while (!inFlight.isEmpty() && inFlight.peekFirst().done) {
            Slot s = inFlight.pollFirst();
            if (s.response == null) {
                continue; // produce with acks=0: no response
            }
            try {
                // kafka-clients' Send: the size prefix, header and fields, with record sets as their own buffers,
                // handed to Netty without copying them into one response buffer.
                Send send = s.context.buildResponseSend(s.response);
                if (s.response.throttleTimeMs() > 0) {
                    mute(s.response.throttleTimeMs());
                }
                long written = send.writeTo(channel);
                if (written != send.size() || !send.completed()) {
                    throw new IllegalStateException("response of " + send.size() + " bytes written as " + written);
                }
                if (HeldRecords.holdsAny(s.response)) {
                    // Fetched batches were handed to Netty as views of the library's buffers: release them when
                    // this marker, queued after them, is written (or fails with the connection).
                    AbstractResponse sent = s.response;
                    ctx.write(Unpooled.EMPTY_BUFFER).addListener(done -> HeldRecords.releaseAll(sent));
                }
            } catch (RuntimeException | java.io.IOException e) {
                LOG.log(System.Logger.Level.ERROR, () -> "cannot serialize " + s.context.header.apiKey()
                        + " v" + s.context.header.apiVersion() + " response; closing connection", e);
                AbstractResponse failed = s.response; // part of it may be queued: released once the close drops it
                ctx.close().addListener(closed -> HeldRecords.releaseAll(failed));
                return;
            }
            wrote = true;
        }
        if (wrote) {
            ctx.flush();
        }
        if (inFlight.size() < MAX_IN_FLIGHT / 2 && !ctx.channel().config().isAutoRead()
                && System.nanoTime() - mutedUntilNanos >= 0) {
            ctx.channel().config().setAutoRead(true);
        }
    }

    /** Stops reading from the connection for {@code ms} (the response says so to the client, which waits too). */
    private void mute(int ms) {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        if (until - mutedUntilNanos > 0) {
            mutedUntilNanos = until;
        }
        ctx.channel().config().setAutoRead(false);
        ctx.executor().schedule(() -> {
            if (System.nanoTime() - mutedUntilNanos >= 0 && inFlight.size() < MAX_IN_FLIGHT / 2) {
                ctx.channel().config().setAutoRead(true);
            }
        }, ms, TimeUnit.MILLISECONDS);
    }

    private static ByteBuffer copy(ByteBuf frame) {
        ByteBuffer b = ByteBuffer.allocate(frame.readableBytes());
        frame.getBytes(frame.readerIndex(), b);
        return b.flip();
    }

    /**
     * Netty's channel as the {@code TransferableChannel} a {@link Send} writes to: every buffer is wrapped, not
     * copied. The buffers of a response are not touched after it is built; a Fetch response's record sets are the
     * storage library's buffers ({@link HeldRecords}), released only after the response's bytes are written.
     */
    private final class ChannelAdapter implements TransferableChannel {
        @Override
        public long write(ByteBuffer[] srcs, int offset, int length) {
            long n = 0;
            for (int i = offset; i < offset + length; i++) {
                n += write(srcs[i]);
            }
            return n;
        }

        @Override
        public long write(ByteBuffer[] srcs) {
            return write(srcs, 0, srcs.length);
        }

        @Override
        public int write(ByteBuffer src) {
            int n = src.remaining();
            if (n > 0) {
                ctx.write(Unpooled.wrappedBuffer(src.slice()), ctx.voidPromise());
                src.position(src.limit());
            }
            return n;
        }

        @Override
        public boolean hasPendingWrites() {
            return false;
        }

        @Override
        public long transferFrom(java.nio.channels.FileChannel fileChannel, long position, long count) {
            throw new UnsupportedOperationException("no file-backed record sets");
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {
        }
    }

    /**
     * {@code connections.max.idle.ms} passed without a byte in either direction: the connection is closed, unless a
     * request is still being answered (a produce waiting for log-cache space is not idle).
     */
    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof IdleStateEvent && inFlight.isEmpty()) {
            IDLE.log(() -> "closing idle connection from " + ctx.channel().remoteAddress()
                    + " (connections.max.idle.ms)");
            ctx.close();
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (cause instanceof OutOfMemoryError || cause.getCause() instanceof OutOfMemoryError) {
            // Out of (direct) memory: say so, naming the client, rather than dropping its connection silently.
            FAILED.log(() -> "closing the connection from " + ctx.channel().remoteAddress() + ": " + cause
                    + "; lower queued.max.request.bytes or raise -XX:MaxDirectMemorySize");
        } else if (cause instanceof javax.net.ssl.SSLException || cause.getCause() instanceof javax.net.ssl.SSLException) {
            // A TLS handshake that failed (an untrusted or missing client certificate, a plaintext client on an SSL
            // listener, garbage): one line, at most one a minute, naming the client; no stack trace.
            Throwable tlsError = cause instanceof javax.net.ssl.SSLException ? cause : cause.getCause();
            TLS_FAILED.log(() -> {
                // OpenSSL's engine says "General OpenSslEngine problem" and keeps the reason (an untrusted or expired
                // certificate, an alert from the client) in its cause.
                String why = String.valueOf(tlsError.getMessage());
                Throwable root = tlsError;
                while (root.getCause() != null && root.getCause() != root) {
                    root = root.getCause();
                }
                if (root != tlsError && root.getMessage() != null && !why.contains(root.getMessage())) {
                    why = why + ": " + root.getMessage();
                }
                return "TLS with " + ctx.channel().remoteAddress() + " failed, connection closed: "
                        + (why.length() > 240 ? why.substring(0, 240) + "…" : why);
            });
        } else {
            LOG.log(System.Logger.Level.DEBUG, () -> "closing " + ctx.channel(), cause);
        }
        ctx.close();
    }
}
