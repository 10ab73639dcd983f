package io.s3stream.kafka.shell.network;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Every client connection a shell accepted and has not closed, so that closing the shell closes each of them before
 * its event loops stop.
 *
 * <p>Why not leave it to the event loops: Netty 4.2's {@code SingleThreadIoEventLoop} closes its channels only when it
 * sees the shutdown at the top of a loop turn; a shutdown requested while the loop is running tasks ends the loop
 * without closing them, and the selector is closed under channels that stay open. Such a connection is never read
 * again and never closed: its client waits for answers until its request timeout (30 s in the Java client) and only
 * then reconnects. Seen as Kafka Streams stalling for a minute after a shell restart; reproduced by
 * {@code RestartConnectionsTest}.
 *
 * <p>Thread-safe. A connection registered while the shell is closing is closed at once: it is added before the flag
 * is read, and the flag is set before the set is walked, so one of the two sides always sees the other.
 */
public final class OpenConnections {
    private final Set<Channel> open = ConcurrentHashMap.newKeySet();
    private volatile boolean closing;

    /**
     * Tracks a newly registered connection; false when the shell is closing, in which case the connection is being
     * closed and must not be served.
     */
    boolean admit(Channel ch) {
        open.add(ch);
        ch.closeFuture().addListener(f -> open.remove(ch));
        if (closing) {
            ch.close();
            return false;
        }
        return true;
    }

    /** Connections open now. */
    public int size() {
        return open.size();
    }

    /** Registers the gauge of open client connections (Kafka's socket-server {@code connection-count}). */
    public void bindTo(MeterRegistry registry) {
        Gauge.builder("kafka.server.connections", this, OpenConnections::size)
                .description("client connections open now, on every listener").register(registry);
    }

    /**
     * Closes every connection, and any registered from now on, waiting up to {@code timeoutMs} for them to close (their
     * clients see the connection end and reconnect, to this shell's successor or another shell).
     */
    public void closeAll(long timeoutMs) {
        closing = true;
        List<ChannelFuture> closed = open.stream().map(Channel::close).toList();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        for (ChannelFuture f : closed) {
            f.awaitUninterruptibly(Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
        }
    }
}
