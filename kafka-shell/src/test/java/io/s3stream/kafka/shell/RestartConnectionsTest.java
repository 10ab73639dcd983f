package io.s3stream.kafka.shell;

import io.s3stream.kafka.shell.network.BlockingKafkaConnection;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.MetadataRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.EOFException;
import java.io.IOException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A shell restarted while clients connect and send requests leaves no connection hanging: each one is either answered
 * or closed (refused, reset or ended), never kept open unread. Before {@code OpenConnections}, a connection whose event
 * loop was busy when the shell closed stayed open and silent until the client's request timeout (3 of them in 40
 * restarts here, 5 s each); Kafka Streams, whose group leader waited on such a connection, stalled for a minute.
 */
@Timeout(180)
class RestartConnectionsTest {
    private static final int CLIENTS = 4;
    private static final int RESTARTS = 30;
    /** Longer than any answer takes here; a connection silent this long is hanging. */
    private static final int READ_TIMEOUT_MS = 5_000;

    @Test
    void everyConnectionIsAnsweredOrClosedThroughRestarts() throws Exception {
        try (ShellFixture fx = new ShellFixture()) {
            int port = fx.shell.port();
            AtomicBoolean stop = new AtomicBoolean();
            Queue<String> hung = new ConcurrentLinkedQueue<>();
            AtomicInteger answered = new AtomicInteger();
            AtomicInteger ended = new AtomicInteger();
            List<Thread> clients = new ArrayList<>();
            for (int t = 0; t < CLIENTS; t++) {
                Thread client = Thread.ofPlatform().name("client-" + t).start(() -> {
                    while (!stop.get()) {
                        // A connection lives for about 20 requests, so that restarts find some in every state:
                        // connecting, waiting for ApiVersions, idle between requests, waiting for an answer.
                        try (BlockingKafkaConnection c = new BlockingKafkaConnection("127.0.0.1", port,
                                READ_TIMEOUT_MS, "restart-test")) {
                            c.call(ApiKeys.API_VERSIONS, (short) 3, new ApiVersionsRequest(new ApiVersionsRequestData()
                                    .setClientSoftwareName("test").setClientSoftwareVersion("1"), (short) 3));
                            for (int i = 0; i < 20 && !stop.get(); i++) {
                                c.call(ApiKeys.METADATA, (short) 12, new MetadataRequest(
                                        new MetadataRequestData().setTopics(List.of()), (short) 12));
                                answered.incrementAndGet();
                                Thread.sleep(5);
                            }
                        } catch (SocketTimeoutException e) {
                            hung.add("a connection neither answered nor closed for " + READ_TIMEOUT_MS + " ms");
                        } catch (EOFException | SocketException e) {
                            ended.incrementAndGet(); // refused while no shell listens, or ended by a closing shell
                        } catch (IOException | InterruptedException e) {
                            hung.add("unexpected: " + e);
                        }
                    }
                });
                clients.add(client);
            }
            for (int r = 0; r < RESTARTS; r++) {
                Thread.sleep(150);
                fx.restart();
            }
            Thread.sleep(300);
            stop.set(true);
            for (Thread client : clients) {
                client.join();
            }
            assertThat(hung).isEmpty();
            assertThat(answered.get()).as("requests answered").isGreaterThan(RESTARTS);
            assertThat(ended.get()).as("connections ended by restarts").isGreaterThan(0);
        }
    }
}
