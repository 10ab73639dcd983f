package io.s3stream.kafka.shell.quota;

import io.s3stream.KeyValues;
import io.s3stream.kafka.shell.topic.StoredProperties;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.RequestContext;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Client quotas as Kafka defines them: byte-rate limits for produce ({@code producer_byte_rate}) and fetch
 * ({@code consumer_byte_rate}) per user, per client id, or per both, with defaults, configured with
 * AlterClientQuotas ({@code kafka-configs.sh --entity-type clients|users}) and kept in the shared key-value space
 * ({@code kafka/quota/<user>/<client id>}), so every shell applies the same ones.
 *
 * <h2>Enforcement, as Kafka's ClientQuotaManager</h2>
 * The quota that applies to a request is the first entity in Kafka's order of precedence that sets the key: user and
 * client id, user and default client, user, default user and client id, default user and default client, default user,
 * client id, default client. Each client (or user) that a quota applies to has its own rate, measured over
 * {@link #SAMPLES} windows of {@link #WINDOW_MS}; once a request takes the rate above the bound, the response carries
 * {@code throttle_time_ms = (rate - bound) / bound × window} and the connection stops being read for that long
 * (KIP-219: clients also wait on their own). The user is the connection's principal name: {@code ANONYMOUS} here, where
 * no listener authenticates.
 *
 * <p>Thread-safe: the configured quotas are an immutable snapshot swapped on change; rates are per sensor, synchronized.
 */
public final class ClientQuotas {
    public static final String PRODUCER_BYTE_RATE = "producer_byte_rate";
    public static final String CONSUMER_BYTE_RATE = "consumer_byte_rate";
    /** Accepted and stored as Kafka does, not enforced here (README). */
    static final Set<String> KEYS = Set.of(PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, "request_percentage",
            "controller_mutation_rate");
    static final int SAMPLES = 11;
    static final long WINDOW_MS = 1_000;
    private static final String PREFIX = "kafka/quota/";
    private static final int ALTER_ATTEMPTS = 5;
    /** A part of an entity: absent (the entity does not name this type). */
    private static final String ABSENT = "-";
    /** A part of an entity: the default for this type. */
    private static final String DEFAULT = "<default>";

    /**
     * A quota entity: each part is null (absent), {@code ""} (the default) or a name.
     *
     * @param user     user principal name part
     * @param clientId client id part
     */
    public record Entity(String user, String clientId) {
        String key() {
            return PREFIX + part(user) + "/" + part(clientId);
        }

        private static String part(String p) {
            return p == null ? ABSENT : p.isEmpty() ? DEFAULT : URLEncoder.encode(p, StandardCharsets.UTF_8);
        }

        static Entity parse(String key) {
            String[] parts = key.substring(PREFIX.length()).split("/", 2);
            return new Entity(unpart(parts[0]), unpart(parts[1]));
        }

        private static String unpart(String p) {
            return p.equals(ABSENT) ? null : p.equals(DEFAULT) ? "" : URLDecoder.decode(p, StandardCharsets.UTF_8);
        }
    }

    private final KeyValues kv;
    private volatile Map<Entity, Map<String, Double>> configured = Map.of();
    private final ConcurrentHashMap<String, Rate> rates = new ConcurrentHashMap<>();

    public ClientQuotas(KeyValues kv) {
        this.kv = kv;
    }

    /** Every configured quota, by entity (a snapshot). */
    public Map<Entity, Map<String, Double>> configured() {
        return configured;
    }

    /** Reads the quotas from the key-value space (at start, and periodically: another shell may have altered them). */
    public void refresh() {
        Map<Entity, Map<String, Double>> out = new HashMap<>();
        for (Map.Entry<String, byte[]> e : kv.list(PREFIX).join().entrySet()) {
            out.put(Entity.parse(e.getKey()), decode(e.getValue()));
        }
        configured = Map.copyOf(out);
    }

    /**
     * Applies changes to one entity: a null value removes the key. Validates first: known keys, positive values.
     * With {@code validateOnly} nothing is stored.
     */
    public CompletableFuture<Void> alter(Entity entity, Map<String, Double> changes, boolean validateOnly) {
        for (Map.Entry<String, Double> c : changes.entrySet()) {
            if (!KEYS.contains(c.getKey())) {
                throw new InvalidRequestException("unknown quota " + c.getKey() + " for " + describe(entity)
                        + "; known: " + new TreeMap<>(Map.of(PRODUCER_BYTE_RATE, 0, CONSUMER_BYTE_RATE, 0,
                        "request_percentage", 0, "controller_mutation_rate", 0)).keySet());
            }
            if (c.getValue() != null && !(c.getValue() > 0)) {
                throw new InvalidRequestException("quota " + c.getKey() + " of " + describe(entity)
                        + " must be positive, was " + c.getValue());
            }
        }
        if (validateOnly) {
            return CompletableFuture.completedFuture(null);
        }
        return alterStored(entity, changes).thenRun(this::refresh);
    }

    /**
     * Applies {@code changes} to the entity's stored quotas (not to this shell's copy, which may lag another shell's
     * change) by compare-and-set ({@link KeyValues#compute}), so that two alters of one entity at once both take
     * effect.
     */
    private CompletableFuture<Void> alterStored(Entity entity, Map<String, Double> changes) {
        return kv.compute(entity.key(), stored -> {
            Map<String, Double> next = new TreeMap<>(stored.map(ClientQuotas::decode).orElseGet(Map::of));
            changes.forEach((k, v) -> {
                if (v == null) {
                    next.remove(k);
                } else {
                    next.put(k, v);
                }
            });
            return next.isEmpty() ? null : encode(next);
        }, ALTER_ATTEMPTS).thenApply(stored -> null);
    }

    static String describe(Entity e) {
        return "user " + (e.user() == null ? "-" : e.user().isEmpty() ? "<default>" : e.user()) + ", client-id "
                + (e.clientId() == null ? "-" : e.clientId().isEmpty() ? "<default>" : e.clientId());
    }

    /**
     * Counts {@code bytes} of one request against the quota {@code key} that applies to ({@code user},
     * {@code clientId}) and returns how long the client must wait, in milliseconds (0 when no quota applies or the
     * rate is within it).
     */
    public int record(String key, String user, String clientId, long bytes, long nowMs) {
        Map<Entity, Map<String, Double>> quotas = configured;
        if (quotas.isEmpty()) {
            return 0;
        }
        // Kafka's precedence; a default part means "each user / client id gets its own rate of this bound".
        Entity[] order = {new Entity(user, clientId), new Entity(user, ""), new Entity(user, null),
                new Entity("", clientId), new Entity("", ""), new Entity("", null), new Entity(null, clientId),
                new Entity(null, "")};
        for (Entity e : order) {
            Map<String, Double> values = quotas.get(e);
            Double bound = values == null ? null : values.get(key);
            if (bound != null) {
                String sensor = key + "|" + (e.user() == null ? "" : user) + "|" + (e.clientId() == null ? "" : clientId);
                Rate rate = rates.computeIfAbsent(sensor, k -> new Rate());
                double value = rate.record(bytes, nowMs);
                if (value <= bound) {
                    return 0;
                }
                return (int) Math.min(Integer.MAX_VALUE,
                        Math.round((value - bound) / bound * rate.windowMs(nowMs)));
            }
        }
        return 0;
    }

    /**
     * The dispatcher's throttle ({@code ApiDispatcher.Throttle}): a produce counts its record bytes against
     * {@code producer_byte_rate}, a fetch the record bytes of its response against {@code consumer_byte_rate}.
     */
    public int throttleMs(RequestContext ctx, AbstractRequest request, AbstractResponse response) {
        if (configured.isEmpty()) {
            return 0;
        }
        String user = ctx.principal.getName();
        long now = System.currentTimeMillis();
        if (request instanceof ProduceRequest produce) {
            long bytes = 0;
            for (var topic : produce.data().topicData()) {
                for (var partition : topic.partitionData()) {
                    bytes += partition.records() == null ? 0 : partition.records().sizeInBytes();
                }
            }
            return record(PRODUCER_BYTE_RATE, user, ctx.clientId(), bytes, now);
        }
        if (response instanceof FetchResponse fetch) {
            long bytes = 0;
            for (var topic : fetch.data().responses()) {
                for (var partition : topic.partitions()) {
                    bytes += partition.records() == null ? 0 : partition.records().sizeInBytes();
                }
            }
            return record(CONSUMER_BYTE_RATE, user, ctx.clientId(), bytes, now);
        }
        return 0;
    }

    /** A rate over {@link #SAMPLES} windows of {@link #WINDOW_MS}, measured as Kafka's {@code Rate} measures it. */
    static final class Rate {
        private final ArrayDeque<long[]> samples = new ArrayDeque<>(); // {window start ms, bytes}

        synchronized double record(long bytes, long nowMs) {
            long start = nowMs - nowMs % WINDOW_MS;
            if (samples.isEmpty() || samples.peekLast()[0] != start) {
                samples.addLast(new long[] {start, 0});
            }
            samples.peekLast()[1] += bytes;
            while (samples.peekFirst()[0] <= nowMs - SAMPLES * WINDOW_MS) {
                samples.pollFirst();
            }
            long total = 0;
            for (long[] s : samples) {
                total += s[1];
            }
            return total * 1000.0 / windowMs(nowMs);
        }

        /**
         * The window the rate is measured over: from the oldest sample to now, but at least {@code SAMPLES - 1} full
         * windows, so a young sensor does not see a burst as a huge rate (Kafka's rule).
         */
        synchronized long windowMs(long nowMs) {
            long elapsed = samples.isEmpty() ? 0 : nowMs - samples.peekFirst()[0];
            return Math.max(elapsed, (SAMPLES - 1) * WINDOW_MS);
        }
    }

    private static Map<String, Double> decode(byte[] stored) {
        Map<String, Double> out = new TreeMap<>();
        StoredProperties.parseMap(stored).forEach((k, v) -> out.put(k, Double.parseDouble(v)));
        return out;
    }

    private static byte[] encode(Map<String, Double> values) {
        Map<String, String> text = new TreeMap<>();
        values.forEach((k, v) -> text.put(k, Double.toString(v)));
        return StoredProperties.format(text);
    }

    /** The configured quotas as DescribeClientQuotas filters them (exposed for the API family). */
    SortedMap<String, Map.Entry<Entity, Map<String, Double>>> sorted() {
        SortedMap<String, Map.Entry<Entity, Map<String, Double>>> out = new TreeMap<>();
        configured.forEach((e, v) -> out.put(e.key(), Map.entry(e, v)));
        return out;
    }
}
