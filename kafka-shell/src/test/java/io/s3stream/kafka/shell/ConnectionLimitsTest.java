package io.s3stream.kafka.shell;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.util.Map;
import java.util.function.LongSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Connections that would hold resources forever: idle ones are closed after {@code connections.max.idle.ms}, and
 * frames are buffered only within the shared {@code queued.max.request.bytes} budget (a slow sender of a large frame
 * holds its reservation, the next waits with reads paused, and gets it when the first goes away).
 */
@Timeout(120)
class ConnectionLimitsTest {
    private static final int BUDGET = 1 << 20;
    private static final int FRAME = 900 * 1024;

    @RegisterExtension
    final ShellFixture fx = new ShellFixture(Map.of("connections.max.idle.ms", "600",
            "queued.max.request.bytes", String.valueOf(BUDGET), "socket.request.max.bytes", String.valueOf(4 << 20)));

    private static ApiVersionsRequest apiVersions() {
        return new ApiVersionsRequest(new ApiVersionsRequestData(), (short) 3);
    }

    @Test
    void anIdleConnectionIsClosedAndABusyOneIsNot() throws Exception {
        try (RawClient idle = new RawClient(fx.shell.port()); RawClient busy = new RawClient(fx.shell.port())) {
            idle.call(ApiKeys.API_VERSIONS, (short) 3, apiVersions());
            long until = System.nanoTime() + 1_800_000_000L;
            while (System.nanoTime() < until) {
                busy.call(ApiKeys.API_VERSIONS, (short) 3, apiVersions()); // every 200 ms, inside the 600 ms limit
                Thread.sleep(200);
            }
            assertThatThrownBy(() -> idle.call(ApiKeys.API_VERSIONS, (short) 3, apiVersions()))
                    .as("the idle connection was closed").isInstanceOf(IOException.class);
            busy.call(ApiKeys.API_VERSIONS, (short) 3, apiVersions()); // still served
        }
    }

    /** Sends a frame's size prefix and the first part of its body, then stops. */
    private static void startFrame(Socket s, int bodyBytesSent) throws IOException {
        DataOutputStream out = new DataOutputStream(s.getOutputStream());
        out.writeInt(FRAME);
        out.write(new byte[bodyBytesSent]);
        out.flush();
    }

    private static void await(LongSupplier value, long expected) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (value.getAsLong() != expected && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(value.getAsLong()).isEqualTo(expected);
    }

    @Test
    void framesAreBufferedOnlyWithinTheSharedBudget() throws Exception {
        LongSupplier reserved = () -> fx.shell.requestMemoryForTest().reservedBytes();
        Socket first = new Socket("127.0.0.1", fx.shell.port());
        try {
            startFrame(first, 100 * 1024);
            await(reserved, FRAME);
            try (Socket second = new Socket("127.0.0.1", fx.shell.port())) {
                startFrame(second, 100 * 1024); // 900 KiB more would exceed the 1 MiB budget: it waits
                Thread.sleep(500);
                assertThat(reserved.getAsLong()).as("the second frame waits").isEqualTo(FRAME);
                first.close(); // its half frame is dropped and its reservation given back
                await(reserved, FRAME); // now held by the second connection
            }
            await(reserved, 0);
        } finally {
            first.close();
        }
        try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
            assertThat(p.send(new ProducerRecord<>("after-limits", "ok")).get().offset()).isZero();
        }
        await(() -> fx.shell.requestMemoryForTest().reservedBytes(), 0);
    }
}
