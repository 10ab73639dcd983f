package io.s3stream.store.azure.internal;

import io.netty.buffer.Unpooled;
import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.AzuriteServer;
import io.s3stream.testing.StorePrefixes;
import io.s3stream.testing.TestStores;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * With {@code encryptionScope}, every write the store sends (Put Blob, Put Block, Put Block List: a PUT, a multipart
 * upload, and a part copied from another object as compaction does) carries the {@code x-ms-encryption-scope} header.
 * Azurite accepts the header but does not implement scopes, so the requests are checked on the wire, through a proxy
 * that records each request's line and headers on its way to Azurite.
 */
class AzuriteEncryptionScopeIT {
    @RegisterExtension
    static final AzuriteServer AZURITE = new AzuriteServer();

    @Test
    void everyWriteAsksTheEncryptionScope() throws Exception {
        String base = AZURITE.uri(StorePrefixes.freshPrefix("scope"));
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("endpoint=([^&]*)").matcher(base);
        assertThat(m.find()).isTrue();
        URI azurite = URI.create(java.net.URLDecoder.decode(m.group(1), StandardCharsets.UTF_8));
        try (RecordingProxy proxy = new RecordingProxy(azurite.getPort())) {
            String endpoint = "http://127.0.0.1:" + proxy.port() + azurite.getPath();
            String uri = base.replaceFirst("endpoint=[^&]*", "endpoint=" + URLEncoder.encode(endpoint, StandardCharsets.UTF_8))
                    + "&minPartSizeBytes=65536&encryptionScope=s3stream-scope";
            try (ObjectStore store = TestStores.open(uri)) {
                byte[] data = new byte[100_000];
                store.put("put", Unpooled.wrappedBuffer(data)).join();
                ObjectStore.MultipartUpload upload = store.startMultipart("multipart").join();
                upload.uploadPart(1, Unpooled.wrappedBuffer(data)).join();
                upload.uploadPartCopy(2, "put", 0, data.length).join();
                upload.complete().join();
                assertThat(store.get("multipart").join().readableBytes()).isEqualTo(2 * data.length);
                StorePrefixes.empty(store);
            }
            List<String> writes = proxy.requests().stream().filter(r -> r.startsWith("PUT ")).toList();
            // Put Blob, two Put Block, one Put Block List at least (the container check is a GET).
            assertThat(writes).hasSizeGreaterThanOrEqualTo(4)
                    .allSatisfy(r -> assertThat(r).contains("\nx-ms-encryption-scope: s3stream-scope\n"));
            assertThat(writes).anySatisfy(r -> assertThat(r).contains("comp=blocklist"));
        }
    }

    /**
     * A TCP proxy to Azurite that records each request's line and headers (lower-case names) as it forwards it:
     * requests are read one at a time per connection (header block, then Content-Length bytes), responses pumped back
     * as they come.
     */
    static final class RecordingProxy implements AutoCloseable {
        private final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        private final int target;
        private final List<String> requests = new CopyOnWriteArrayList<>();
        private final List<Socket> sockets = new CopyOnWriteArrayList<>();

        RecordingProxy(int target) throws IOException {
            this.target = target;
            Thread.ofVirtual().start(this::accept);
        }

        int port() {
            return server.getLocalPort();
        }

        List<String> requests() {
            return List.copyOf(requests);
        }

        private void accept() {
            while (!server.isClosed()) {
                try {
                    Socket client = server.accept();
                    Socket upstream = new Socket(InetAddress.getLoopbackAddress(), target);
                    sockets.add(client);
                    sockets.add(upstream);
                    InputStream fromTarget = upstream.getInputStream();
                    OutputStream toClient = client.getOutputStream();
                    InputStream fromClient = client.getInputStream();
                    OutputStream toTarget = upstream.getOutputStream();
                    Thread.ofVirtual().start(() -> pump(fromTarget, toClient));
                    Thread.ofVirtual().start(() -> requests(fromClient, toTarget));
                } catch (IOException e) {
                    return; // closed
                }
            }
        }

        private void requests(InputStream in, OutputStream out) {
            try {
                while (true) {
                    ByteArrayOutputStream head = new ByteArrayOutputStream();
                    int matched = 0;
                    while (matched < 4) {
                        int b = in.read();
                        if (b < 0) {
                            return;
                        }
                        head.write(b);
                        matched = (b == "\r\n\r\n".charAt(matched)) ? matched + 1 : (b == '\r' ? 1 : 0);
                    }
                    byte[] bytes = head.toByteArray();
                    out.write(bytes);
                    String text = new String(bytes, StandardCharsets.ISO_8859_1).replace("\r\n", "\n");
                    StringBuilder recorded = new StringBuilder();
                    long length = 0;
                    for (String line : text.split("\n")) {
                        int colon = line.indexOf(':');
                        if (recorded.isEmpty() || colon < 0) {
                            recorded.append(line).append('\n');
                            continue;
                        }
                        String name = line.substring(0, colon).toLowerCase(Locale.ROOT);
                        String value = line.substring(colon + 1).trim();
                        recorded.append(name).append(": ").append(value).append('\n');
                        if (name.equals("content-length")) {
                            length = Long.parseLong(value);
                        } else if (name.equals("transfer-encoding")) {
                            throw new IllegalStateException("chunked requests are not handled by this proxy");
                        }
                    }
                    requests.add(recorded.toString());
                    out.write(in.readNBytes((int) length));
                    out.flush();
                }
            } catch (IOException e) {
                // connection closed
            }
        }

        private static void pump(InputStream in, OutputStream out) {
            try {
                in.transferTo(out);
            } catch (IOException e) {
                // connection closed
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (Socket s : sockets) {
                s.close();
            }
        }
    }
}
