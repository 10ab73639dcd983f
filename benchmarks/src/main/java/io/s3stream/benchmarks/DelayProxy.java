package io.s3stream.benchmarks;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A TCP proxy on loopback that delays every byte by half a round trip in each direction: network latency between a
 * client and a server on one machine, where {@code tc netem} is not available (this kernel has no netem qdisc).
 * Order is kept per direction; bandwidth is not limited.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.s3stream.benchmarks.DelayProxy listenPort targetHost:targetPort rttMillis
 * </pre>
 * Prints {@code READY port=<port>} once listening (port 0 picks a free one).
 */
public final class DelayProxy implements AutoCloseable {
    private final ServerSocket server;
    private final String host;
    private final int port;
    private final long oneWayNanos;

    public DelayProxy(int listenPort, String host, int port, double rttMillis) throws IOException {
        this.server = new ServerSocket();
        this.server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), listenPort));
        this.host = host;
        this.port = port;
        this.oneWayNanos = (long) (rttMillis * 1e6 / 2);
        Thread.ofPlatform().daemon().name("delay-proxy-accept").start(this::accept);
    }

    public int port() {
        return server.getLocalPort();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket(host, port);
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
                pump(client, upstream);
                pump(upstream, client);
            } catch (IOException e) {
                if (!server.isClosed()) {
                    System.err.println("delay proxy: " + e);
                }
            }
        }
    }

    private record Chunk(long dueNanos, byte[] bytes) {
    }

    private void pump(Socket from, Socket to) {
        BlockingQueue<Chunk> queue = new LinkedBlockingQueue<>();
        Thread.ofVirtual().start(() -> {
            byte[] buf = new byte[64 * 1024];
            try (InputStream in = from.getInputStream()) {
                int n;
                while ((n = in.read(buf)) > 0) {
                    queue.put(new Chunk(System.nanoTime() + oneWayNanos, Arrays.copyOf(buf, n)));
                }
            } catch (IOException | InterruptedException ignored) {
                // connection closed
            }
            queue.add(new Chunk(System.nanoTime() + oneWayNanos, null));
        });
        Thread.ofVirtual().start(() -> {
            try (OutputStream out = to.getOutputStream()) {
                while (true) {
                    Chunk c = queue.take();
                    long wait = c.dueNanos - System.nanoTime();
                    if (wait > 0) {
                        TimeUnit.NANOSECONDS.sleep(wait);
                    }
                    if (c.bytes == null) {
                        to.shutdownOutput();
                        return;
                    }
                    out.write(c.bytes);
                    out.flush();
                }
            } catch (IOException | InterruptedException ignored) {
                // connection closed
            } finally {
                try {
                    from.close();
                } catch (IOException ignored) {
                    // closing
                }
            }
        });
    }

    @Override
    public void close() throws IOException {
        server.close();
    }

    public static void main(String[] args) throws Exception {
        String[] target = args[1].split(":");
        DelayProxy proxy = new DelayProxy(Integer.parseInt(args[0]), target[0], Integer.parseInt(target[1]),
                Double.parseDouble(args[2]));
        System.out.println("READY port=" + proxy.port());
        Thread.currentThread().join();
    }
}
