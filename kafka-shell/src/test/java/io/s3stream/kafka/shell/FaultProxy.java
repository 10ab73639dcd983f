package io.s3stream.kafka.shell;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP proxy on 127.0.0.1 that injects network faults between a client and one server: latency added to every chunk
 * forwarded, connections reset at random (an RST, as a middlebox or a crashed peer sends), and a partition (bytes held
 * in both directions until it heals, as TCP retransmits through an outage; clients time out on their own). The random
 * choices come from a seeded generator, so a run's fault schedule is repeatable.
 *
 * <p>It stands in for {@code tc netem} in a network namespace: the kernels of these machines have no {@code sch_netem}
 * ("Specified qdisc kind is unknown"), so delay and loss are made in user space, at the level a client observes them.
 */
final class FaultProxy implements AutoCloseable {
    private final String name;
    private final ServerSocket server;
    private final String targetHost;
    private final int targetPort;
    private final Random random;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile int delayMs;
    private volatile double resetProbability;
    private volatile boolean partitioned;
    final AtomicLong resets = new AtomicLong();
    final AtomicLong connections = new AtomicLong();

    FaultProxy(String name, String targetHost, int targetPort, long seed) throws IOException {
        this.name = name;
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.random = new Random(seed);
        this.server = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
        Thread.ofPlatform().daemon().name("fault-proxy-" + name).start(this::accept);
    }

    int port() {
        return server.getLocalPort();
    }

    /** Adds {@code ms} of latency to each message (a burst of chunks) forwarded, in each direction. */
    void delay(int ms) {
        delayMs = ms;
    }

    /** Resets a connection with probability {@code p} at each chunk forwarded. */
    void resets(double p) {
        resetProbability = p;
    }

    /** Holds every byte in both directions (new connections are accepted but carry nothing) until {@link #heal}. */
    void partition() {
        partitioned = true;
    }

    void heal() {
        delayMs = 0;
        resetProbability = 0;
        partitioned = false;
    }

    String state() {
        return name + (partitioned ? " partitioned" : "") + (delayMs > 0 ? " +" + delayMs + "ms" : "")
                + (resetProbability > 0 ? " resets " + resetProbability : "");
    }

    private boolean roll(double p) {
        if (p <= 0) {
            return false;
        }
        synchronized (random) {
            return random.nextDouble() < p;
        }
    }

    private void accept() {
        while (!server.isClosed()) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            Thread.ofVirtual().start(() -> connect(client));
        }
    }

    private void connect(Socket client) {
        Socket target;
        try {
            target = new Socket(targetHost, targetPort);
        } catch (IOException e) {
            closeQuietly(client); // the server is down (killed, restarting): the client sees a refused peer
            return;
        }
        connections.incrementAndGet();
        sockets.add(client);
        sockets.add(target);
        Thread.ofVirtual().start(() -> pump(client, target));
        Thread.ofVirtual().start(() -> pump(target, client));
    }

    private void pump(Socket from, Socket to) {
        byte[] buf = new byte[64 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            int n;
            long lastChunk = 0;
            while ((n = in.read(buf)) >= 0) {
                while (partitioned && !from.isClosed()) {
                    Thread.sleep(20);
                }
                int d = delayMs;
                long now = System.nanoTime();
                if (d > 0 && now - lastChunk > 2_000_000) {
                    // Latency, not a bandwidth cap: the first chunk of a burst (a request, a response) waits; the
                    // chunks that follow it within 2 ms belong to the same message and go on at once.
                    Thread.sleep(d);
                }
                lastChunk = System.nanoTime();
                if (roll(resetProbability)) {
                    resets.incrementAndGet();
                    reset(from);
                    reset(to);
                    return;
                }
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (IOException | InterruptedException e) {
            // the other side closed or reset: close this side too
        } finally {
            closeQuietly(from);
            closeQuietly(to);
            sockets.remove(from);
            sockets.remove(to);
        }
    }

    private static void reset(Socket s) {
        try {
            s.setSoLinger(true, 0); // close with RST, not FIN
        } catch (IOException e) {
            // already closed
        }
        closeQuietly(s);
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // nothing to do
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        sockets.forEach(FaultProxy::closeQuietly);
    }
}
