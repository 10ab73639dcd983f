package io.s3stream.kafka.shell.network;

import io.netty.channel.IoHandlerFactory;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.s3stream.InvalidConfigException;

import java.util.Locale;

/**
 * The socket layer under the listeners' event loops, {@code s3stream.kafka.network.transport}: {@code epoll} (Netty's
 * native transport, Linux on x86-64 and ARM64), {@code nio} (the JDK's selector, everywhere), or {@code auto}, the
 * default: epoll where its native library loads, nio elsewhere.
 *
 * <p>Design note: epoll is the default because the JDK selector's bookkeeping (a synchronized selected-key set walked
 * by an iterator per wake-up, level-triggered readiness) cost measurably more of the event loop per request than
 * Netty's edge-triggered epoll loop in the side-by-side runs of benchmarks/README.md ("Native epoll transport"); nio
 * stays for platforms without the native library and for comparison.
 */
public enum SocketTransport {
    EPOLL, NIO;

    /** The setting that chooses the transport. */
    public static final String SETTING = "s3stream.kafka.network.transport";

    /**
     * The transport {@code value} (the setting's value) names; null or blank is {@code auto}.
     *
     * @throws InvalidConfigException for an unknown name, or {@code epoll} where its native library cannot load
     */
    public static SocketTransport of(String value) {
        String name = value == null || value.isBlank() ? "auto" : value.trim().toLowerCase(Locale.ROOT);
        return switch (name) {
            case "auto" -> Epoll.isAvailable() ? EPOLL : NIO;
            case "nio" -> NIO;
            case "epoll" -> {
                if (!Epoll.isAvailable()) {
                    Throwable cause = Epoll.unavailabilityCause();
                    throw new InvalidConfigException(SETTING + "=epoll, but Netty's native epoll transport cannot be "
                            + "loaded here (" + (cause == null ? "unknown cause" : cause.getMessage()) + "); use "
                            + SETTING + "=nio or auto");
                }
                yield EPOLL;
            }
            default -> throw new InvalidConfigException(SETTING + " must be auto, epoll or nio, was '" + value + "'");
        };
    }

    /** The event loops' IO handlers of this transport. */
    public IoHandlerFactory ioHandlers() {
        return this == EPOLL ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
    }

    /** The listening socket's channel class of this transport. */
    public Class<? extends ServerChannel> serverChannel() {
        return this == EPOLL ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
    }
}
