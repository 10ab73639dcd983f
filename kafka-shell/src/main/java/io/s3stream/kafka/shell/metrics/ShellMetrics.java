package io.s3stream.kafka.shell.metrics;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.s3stream.StreamStorage;
import io.s3stream.kafka.shell.log.ReadRecords;
import io.s3stream.kafka.shell.network.ApiDispatcher;
import io.s3stream.metrics.micrometer.S3StreamMeterBinder;
import org.apache.kafka.common.protocol.ApiKeys;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;

/**
 * The broker's meters in one Micrometer registry, served in Prometheus text format over HTTP ({@code metrics.port}):
 * the engine's counters ({@link S3StreamMeterBinder}: appends, caches, uploads, object-store requests and bytes), the
 * JVM's, and Kafka-style broker metrics — request latency per API as a histogram ({@code kafka.request.latency}, tag
 * {@code api}) and bytes and records in and out per topic ({@code kafka.server.bytes.in}, {@code .bytes.out},
 * {@code .messages.in}, tag {@code topic}). Every meter carries {@code node_id}.
 *
 * <p>Design note: Micrometer rather than OpenTelemetry, because an embedding JVM system most likely has a Micrometer
 * registry already (Spring, Quarkus, Vert.x, Kafka Streams' own bridges) and the binder then drops into it, and because
 * its Prometheus registry needs no agent or collector to be scraped. The meters are recorded whether or not the port
 * is open; the cost is a map lookup and an add per partition per request.
 */
public final class ShellMetrics implements ApiDispatcher.RequestObserver, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ShellMetrics.class.getName());

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    /** Per API, made on its first request; read without a lock on every request after that. */
    private final Map<ApiKeys, Timer> requestTimers = new ConcurrentHashMap<>();
    private final Map<String, TopicMeters> topics = new ConcurrentHashMap<>();
    private final JvmGcMetrics gc = new JvmGcMetrics();
    private HttpServer server;

    private record TopicMeters(Counter bytesIn, Counter messagesIn, Counter bytesOut) {
    }

    public ShellMetrics(int nodeId, StreamStorage storage) {
        registry.config().commonTags("node_id", Integer.toString(nodeId));
        new S3StreamMeterBinder(storage).bindTo(registry);
        new JvmMemoryMetrics().bindTo(registry);
        gc.bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ClassLoaderMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        Gauge.builder("kafka.server.fetch.held.bytes", ReadRecords::heldBytes)
                .description("bytes of fetched batches handed to connections and not yet written: storage library "
                        + "memory they keep (fetches are sent from the library's buffers)")
                .baseUnit("bytes").register(registry);
    }

    /**
     * Serves {@code GET /metrics} on {@code host:port} (0: any free port); returns the port bound.
     *
     * @throws UncheckedIOException naming the address when it cannot be bound
     */
    public int serve(String host, int port) {
        try {
            server = HttpServer.create(new InetSocketAddress(host, port), 16);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot serve metrics on " + host + ":" + port + " (metrics.port): "
                    + e.getMessage(), e);
        }
        server.createContext("/metrics", exchange -> {
            try (exchange) {
                byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
                exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
                exchange.sendResponseHeaders(200, body.length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "metrics scrape failed", e);
            }
        });
        server.setExecutor(Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "kafka-shell-metrics-http");
            t.setDaemon(true);
            return t;
        }));
        server.start();
        int bound = server.getAddress().getPort();
        LOG.log(System.Logger.Level.INFO, () -> "metrics in Prometheus format on http://" + host + ":" + bound + "/metrics");
        return bound;
    }

    /** The registry, for tests and for an embedding program that wants to add its own meters. */
    public PrometheusMeterRegistry registry() {
        return registry;
    }

    @Override
    public void completed(ApiKeys key, long nanos) {
        Timer timer = requestTimers.get(key);
        if (timer == null) {
            timer = requestTimers.computeIfAbsent(key, k -> Timer.builder("kafka.request.latency")
                    .description("time from a request's dispatch to its response, per API").tag("api", k.name)
                    .publishPercentileHistogram().minimumExpectedValue(Duration.ofNanos(100_000))
                    .maximumExpectedValue(Duration.ofSeconds(60)).register(registry));
        }
        timer.record(nanos, java.util.concurrent.TimeUnit.NANOSECONDS);
    }

    private TopicMeters topic(String name) {
        return topics.computeIfAbsent(name, t -> new TopicMeters(
                Counter.builder("kafka.server.bytes.in").description("batch bytes appended, per topic").baseUnit("bytes")
                        .tag("topic", t).register(registry),
                Counter.builder("kafka.server.messages.in").description("records appended, per topic").tag("topic", t)
                        .register(registry),
                Counter.builder("kafka.server.bytes.out").description("record bytes returned by fetches, per topic")
                        .baseUnit("bytes").tag("topic", t).register(registry)));
    }

    /** A produce appended {@code records} records in {@code bytes} bytes to {@code topic}. */
    public void appended(String topic, int bytes, int records) {
        TopicMeters m = topic(topic);
        m.bytesIn().increment(bytes);
        m.messagesIn().increment(records);
    }

    /** A fetch returned {@code bytes} bytes of {@code topic}. */
    public void fetched(String topic, int bytes) {
        if (bytes > 0) {
            topic(topic).bytesOut().increment(bytes);
        }
    }

    /** Removes a deleted topic's meters. */
    public void forgetTopic(String topic) {
        TopicMeters m = topics.remove(topic);
        if (m != null) {
            for (Meter meter : new Meter[] {m.bytesIn(), m.messagesIn(), m.bytesOut()}) {
                registry.remove(meter);
            }
        }
    }

    @Override
    public void close() {
        if (server != null) {
            server.stop(0);
        }
        gc.close();
        registry.close();
    }
}
