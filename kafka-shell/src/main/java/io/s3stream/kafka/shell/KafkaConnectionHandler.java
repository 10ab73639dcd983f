package io.s3stream.kafka.shell;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;

/**
 * One client connection: turns length-delimited frames into kafka-clients requests, hands them to {@link KafkaApis}
 * and writes the responses back in request order, as the Kafka protocol requires.
 *
 * <p>Failure: a frame whose header or body does not parse closes the connection (there is no correlation id to
 * answer to); a known API at a version we do not serve gets UNSUPPORTED_VERSION. Nothing here touches storage.
 * State lives on the channel's event loop.
 */
final class KafkaConnectionHandler extends ChannelInboundHandlerAdapter {
    /** Requests in flight per connection before the server stops reading from it. */
    private static final int MAX_IN_FLIGHT = 64;
    private static final System.Logger LOG = System.getLogger(KafkaConnectionHandler.class.getName());

    private final KafkaApis apis;
    private final ArrayDeque<Slot> inFlight = new ArrayDeque<>();
    private ChannelHandlerContext ctx;

    private static final class Slot {
        final RequestContext context;
        AbstractResponse response;
        boolean done;

        Slot(RequestContext context) {
            this.context = context;
        }
    }

    KafkaConnectionHandler(KafkaApis apis) {
        this.apis = apis;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuffer buffer;
        ByteBuf frame = (ByteBuf) msg;
        try {
            buffer = ByteBuffer.allocate(frame.readableBytes());
            frame.readBytes(buffer);
            buffer.flip();
        } finally {
            frame.release();
        }
        RequestContext context;
        AbstractRequest request;
        try {
            RequestHeader header = RequestHeader.parse(buffer);
            InetSocketAddress remote = (InetSocketAddress) ctx.channel().remoteAddress();
            context = new RequestContext(header, ctx.channel().id().asShortText(),
                    remote == null ? null : remote.getAddress(), KafkaPrincipal.ANONYMOUS,
                    ListenerName.forSecurityProtocol(SecurityProtocol.PLAINTEXT), SecurityProtocol.PLAINTEXT,
                    ClientInformation.EMPTY, false);
            if (header.apiKey() != ApiKeys.API_VERSIONS && !header.isApiVersionSupported()) {
                throw new IllegalArgumentException("version " + header.apiVersion() + " of " + header.apiKey()
                        + " is unknown to the protocol library");
            }
            request = context.parseRequest(buffer).request;
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "closing " + ctx.channel() + ": unparseable request", e);
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
        f.whenComplete((response, e) -> ctx.executor().execute(() -> {
            slot.response = e != null ? request.getErrorResponse(0, e) : response;
            slot.done = true;
            flush();
        }));
    }

    private void flush() {
        boolean wrote = false;
        while (!inFlight.isEmpty() && inFlight.peekFirst().done) {
            Slot s = inFlight.pollFirst();
            if (s.response == null) {
                continue; // produce with acks=0: no response
            }
            ByteBuffer body;
            try {
                body = s.context.buildResponseEnvelopePayload(s.response);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.ERROR, () -> "cannot serialize " + s.context.header.apiKey()
                        + " v" + s.context.header.apiVersion() + " response; closing connection", e);
                ctx.close();
                return;
            }
            ByteBuf out = Unpooled.buffer(4 + body.remaining());
            out.writeInt(body.remaining());
            out.writeBytes(body);
            ctx.write(out, ctx.voidPromise());
            wrote = true;
        }
        if (wrote) {
            ctx.flush();
        }
        if (inFlight.size() < MAX_IN_FLIGHT / 2 && !ctx.channel().config().isAutoRead()) {
            ctx.channel().config().setAutoRead(true);
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.log(System.Logger.Level.DEBUG, () -> "closing " + ctx.channel(), cause);
        ctx.close();
    }
}
