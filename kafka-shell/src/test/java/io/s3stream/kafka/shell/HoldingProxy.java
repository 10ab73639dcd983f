package io.s3stream.kafka.shell;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntSupplier;

/**
 * A TCP proxy on 127.0.0.1 for tests: forwards bytes both ways to the port {@code target} names at connect time; while
 * {@link #hold} is set, the broker's answers are swallowed (requests still reach the broker), and {@link #cutAll}
 * closes every connection, so a client retries what it never got an answer for.
 */
final class HoldingProxy implements AutoCloseable {
    private final ServerSocket server;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    volatile IntSupplier target;
    volatile boolean hold;

    HoldingProxy() throws IOException {
        server = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        Thread.ofPlatform().daemon().name("proxy-accept").start(this::accept);
    }

    int port() {
        return server.getLocalPort();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket broker = new Socket("127.0.0.1", target.getAsInt());
                sockets.add(client);
                sockets.add(broker);
                pump(client, broker, false);
                pump(broker, client, true);
            } catch (IOException e) {
                // closed, or the broker is down: the client sees a dropped connection and retries
            }
        }
    }

    private void pump(Socket from, Socket to, boolean answers) {
        Thread.ofPlatform().daemon().start(() -> {
            byte[] buf = new byte[64 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    if (!(answers && hold)) {
                        out.write(buf, 0, n);
                        out.flush();
                    }
                }
            } catch (IOException e) {
                // connection cut
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        });
    }

    /** Closes every proxied connection. */
    void cutAll() {
        for (Socket s : sockets) {
            closeQuietly(s);
        }
        sockets.clear();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // already closed
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        cutAll();
    }
}
