package io.s3stream.kafka.shell.config;

import io.s3stream.InvalidConfigException;
import io.s3stream.StorageConfig;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * Immutable broker settings, read once from Kafka-style properties (plus {@code s3stream.*} keys for the storage
 * engine) and validated with messages that name the key. Unknown keys are kept (DescribeConfigs shows them) and
 * otherwise ignored, so an existing Kafka {@code server.properties} can be reused.
 */
public final class ShellConfig {
    static final long MIB = 1024L * 1024;
    /**
     * Requests buffered at once across connections. Kafka leaves this unbounded (-1); a shell that embeds its storage
     * in the same direct memory cannot: 40 clients sending large frames slowly took 270 MB before there was a budget.
     */
    static final long DEFAULT_QUEUED_MAX_REQUEST_BYTES = 128 * MIB;

    private final Map<String, String> raw;
    private final List<Listener> listeners;
    private final Listener interBroker;
    private final String host;
    private final String listenerName;
    private final String securityProtocol;
    private final int port;
    private final String advertisedHost;
    private final int advertisedPort;
    private final int nodeId;
    private final String clusterId;
    private final int numPartitions;
    private final boolean autoCreateTopics;
    private final int groupMinSessionTimeoutMs;
    private final int groupMaxSessionTimeoutMs;
    private final int groupInitialRebalanceDelayMs;
    private final int groupConsumerHeartbeatIntervalMs;
    private final int groupConsumerSessionTimeoutMs;
    private final int messageMaxBytes;
    private final int socketRequestMaxBytes;
    private final long queuedMaxRequestBytes;
    private final long connectionsMaxIdleMs;
    private final long logRetentionMs;
    private final long logRetentionBytes;
    private final Path dataDir;
    private final long retentionCheckIntervalMs;
    private final long reconcileMs;
    private final long offsetsCommitLingerMs;
    private final long offsetsRetentionMs;
    private final long offsetsRetentionCheckIntervalMs;
    private final long transactionSweepMs;
    private final long leaseRenewMs;
    private final long leaseTimeoutMs;
    private final long leaseStartupGraceMs;
    private final long orphanStreamGraceMs;
    private final boolean failoverEnabled;
    private final long balanceIntervalMs;
    private final double balanceBand;
    private final long balanceMinBytesPerSec;

    /** The shell's own s3stream.* settings; every other s3stream.* key is an engine setting. */
    private static final java.util.Set<String> SHELL_KEYS = java.util.Set.of("s3stream.data.dir", "s3stream.node.id",
            "s3stream.metrics.log.interval.ms", "s3stream.kafka.reconcile.ms", "s3stream.kafka.lease.renew.ms",
            "s3stream.kafka.lease.timeout.ms", "s3stream.kafka.failover.enable", "s3stream.kafka.balance.interval.ms",
            "s3stream.kafka.balance.band", "s3stream.kafka.balance.min.bytes.per.sec", "s3stream.kafka.transaction.sweep.ms",
            "s3stream.kafka.ssl.reload.check.ms", "s3stream.kafka.ssl.engine", "s3stream.kafka.network.transport",
            "s3stream.kafka.fetch.held.max.bytes", "s3stream.kafka.offsets.commit.linger.ms",
            "s3stream.kafka.offsets.retention.ms", "s3stream.kafka.lease.startup.grace.ms",
            "s3stream.kafka.orphan.stream.grace.ms");

    private ShellConfig(Map<String, String> raw) {
        this.raw = Map.copyOf(raw);
        this.listeners = parseListeners(get("listeners", null), get("advertised.listeners", null),
                get("listener.security.protocol.map", null), get("host.name", "127.0.0.1"), get("port", "9092"));
        this.interBroker = interBrokerListener(listeners, get("inter.broker.listener.name", null),
                get("security.inter.broker.protocol", null));
        Listener first = listeners.getFirst();
        this.securityProtocol = first.protocol();
        this.listenerName = first.name();
        this.host = first.host();
        this.port = first.port();
        this.advertisedHost = first.advertisedHost();
        this.advertisedPort = first.advertisedPort();
        this.nodeId = intValue("node.id", get("node.id", get("broker.id", "0")), 0, Integer.MAX_VALUE);
        this.clusterId = get("cluster.id", "s3stream-kafka-shell");
        this.numPartitions = intValue("num.partitions", get("num.partitions", "1"), 1, 100_000);
        this.autoCreateTopics = Boolean.parseBoolean(get("auto.create.topics.enable", "true"));
        this.groupMinSessionTimeoutMs = intValue("group.min.session.timeout.ms",
                get("group.min.session.timeout.ms", "6000"), 0, Integer.MAX_VALUE);
        this.groupMaxSessionTimeoutMs = intValue("group.max.session.timeout.ms",
                get("group.max.session.timeout.ms", "1800000"), groupMinSessionTimeoutMs, Integer.MAX_VALUE);
        this.groupInitialRebalanceDelayMs = intValue("group.initial.rebalance.delay.ms",
                get("group.initial.rebalance.delay.ms", "3000"), 0, Integer.MAX_VALUE);
        this.groupConsumerHeartbeatIntervalMs = intValue("group.consumer.heartbeat.interval.ms",
                get("group.consumer.heartbeat.interval.ms", "5000"), 1, Integer.MAX_VALUE);
        this.groupConsumerSessionTimeoutMs = intValue("group.consumer.session.timeout.ms",
                get("group.consumer.session.timeout.ms", "45000"), groupConsumerHeartbeatIntervalMs + 1,
                Integer.MAX_VALUE);
        this.messageMaxBytes = intValue("message.max.bytes", get("message.max.bytes", "1048588"), 0, Integer.MAX_VALUE);
        this.socketRequestMaxBytes = intValue("socket.request.max.bytes",
                get("socket.request.max.bytes", "104857600"), 1024, Integer.MAX_VALUE);
        this.queuedMaxRequestBytes = longValue("queued.max.request.bytes",
                get("queued.max.request.bytes", String.valueOf(DEFAULT_QUEUED_MAX_REQUEST_BYTES)));
        this.connectionsMaxIdleMs = longValue("connections.max.idle.ms", get("connections.max.idle.ms", "600000"));
        this.logRetentionMs = longValue("log.retention.ms", get("log.retention.ms",
                String.valueOf(Long.parseLong(get("log.retention.hours", "168")) * 3_600_000L)));
        this.logRetentionBytes = longValue("log.retention.bytes", get("log.retention.bytes", "-1"));
        this.dataDir = Path.of(get("s3stream.data.dir", "data/kafka-shell"));
        this.retentionCheckIntervalMs = intValue("log.retention.check.interval.ms",
                get("log.retention.check.interval.ms", "300000"), 1, Integer.MAX_VALUE);
        this.reconcileMs = intValue("s3stream.kafka.reconcile.ms", get("s3stream.kafka.reconcile.ms", "500"), 10, Integer.MAX_VALUE);
        this.offsetsCommitLingerMs = intValue("s3stream.kafka.offsets.commit.linger.ms",
                get("s3stream.kafka.offsets.commit.linger.ms", "0"), 0, 10_000);
        long retentionMinutes = intValue("offsets.retention.minutes", get("offsets.retention.minutes", "10080"), 1,
                Integer.MAX_VALUE);
        String retentionMs = get("s3stream.kafka.offsets.retention.ms", null);
        this.offsetsRetentionMs = retentionMs == null ? retentionMinutes * 60_000L
                : intValue("s3stream.kafka.offsets.retention.ms", retentionMs, 1, Integer.MAX_VALUE);
        this.offsetsRetentionCheckIntervalMs = intValue("offsets.retention.check.interval.ms",
                get("offsets.retention.check.interval.ms", "600000"), 1, Integer.MAX_VALUE);
        this.transactionSweepMs = intValue("s3stream.kafka.transaction.sweep.ms",
                get("s3stream.kafka.transaction.sweep.ms", "1000"), 10, Integer.MAX_VALUE);
        this.leaseRenewMs = intValue("s3stream.kafka.lease.renew.ms", get("s3stream.kafka.lease.renew.ms", "1000"), 50,
                Integer.MAX_VALUE);
        this.leaseTimeoutMs = intValue("s3stream.kafka.lease.timeout.ms", get("s3stream.kafka.lease.timeout.ms", "6000"),
                100, Integer.MAX_VALUE);
        this.leaseStartupGraceMs = intValue("s3stream.kafka.lease.startup.grace.ms",
                get("s3stream.kafka.lease.startup.grace.ms", "300000"), 0, Integer.MAX_VALUE);
        this.orphanStreamGraceMs = intValue("s3stream.kafka.orphan.stream.grace.ms",
                get("s3stream.kafka.orphan.stream.grace.ms", "600000"), 1000, Integer.MAX_VALUE);
        String failover = get("s3stream.kafka.failover.enable", "true");
        if (!failover.equals("true") && !failover.equals("false")) {
            throw new InvalidConfigException("s3stream.kafka.failover.enable must be true or false, was '" + failover
                    + "'");
        }
        this.failoverEnabled = Boolean.parseBoolean(failover);
        this.balanceIntervalMs = intValue("s3stream.kafka.balance.interval.ms",
                get("s3stream.kafka.balance.interval.ms", "15000"), 0, Integer.MAX_VALUE);
        String bandText = get("s3stream.kafka.balance.band", "0.2");
        try {
            this.balanceBand = Double.parseDouble(bandText);
        } catch (NumberFormatException e) {
            throw new InvalidConfigException("s3stream.kafka.balance.band must be a fraction such as 0.2, was '"
                    + bandText + "'");
        }
        if (!(balanceBand > 0 && balanceBand <= 1)) {
            throw new InvalidConfigException("s3stream.kafka.balance.band must be in (0, 1], was " + bandText);
        }
        this.balanceMinBytesPerSec = longValue("s3stream.kafka.balance.min.bytes.per.sec",
                get("s3stream.kafka.balance.min.bytes.per.sec", "1048576"));
    }

    /** Reads settings; {@code overrides} win over {@code file}. */
    public static ShellConfig of(Properties file, Map<String, String> overrides) {
        Map<String, String> all = new TreeMap<>();
        for (String k : file.stringPropertyNames()) {
            all.put(k, file.getProperty(k).trim());
        }
        all.putAll(overrides);
        return new ShellConfig(all);
    }

    public static ShellConfig of(Map<String, String> settings) {
        return of(new Properties(), settings);
    }

    /** The engine's settings: {@code s3stream.*} keys, defaults that fit a 1 GiB machine. */
    public StorageConfig storageConfig() {
        StorageConfig.Builder b = StorageConfig.builder()
                .nodeId(longValue("s3stream.node.id", get("s3stream.node.id", String.valueOf(nodeId))))
                .dataDir(dataDir)
                .uploadThresholdBytes(longValue("s3stream.upload.threshold.bytes",
                        get("s3stream.upload.threshold.bytes", String.valueOf(32 * MIB))))
                .uploadInterval(Duration.ofMillis(longValue("s3stream.upload.interval.ms",
                        get("s3stream.upload.interval.ms", "10000"))));
        // Cache budgets: derived from the JVM's direct-memory limit unless set (see StorageConfig, "Memory budgets").
        if (get("s3stream.log.cache.bytes", null) != null) {
            b.logCacheBytes(longValue("s3stream.log.cache.bytes", get("s3stream.log.cache.bytes", null)));
        }
        if (get("s3stream.block.cache.bytes", null) != null) {
            b.blockCacheBytes(longValue("s3stream.block.cache.bytes", get("s3stream.block.cache.bytes", null)));
        }
        if (get("s3stream.read.ahead.bytes", null) != null) {
            b.readAheadBytes(longValue("s3stream.read.ahead.bytes", get("s3stream.read.ahead.bytes", null)));
        }
        long uploadThreshold = longValue("s3stream.upload.threshold.bytes",
                get("s3stream.upload.threshold.bytes", String.valueOf(32 * MIB)));
        b.maxBatchBytes((int) longValue("s3stream.max.batch.bytes", get("s3stream.max.batch.bytes",
                String.valueOf(Math.min(8 * MIB, uploadThreshold)))));
        String wal = get("s3stream.wal", null);
        if (wal != null) {
            b.wal(wal);
        } else if (!WalDefaults.anyDefault(dataDir)) {
            // No durable WAL module on the class path (wal-blockdev not yet a dependency): run, but say it loudly.
            System.err.println("kafka-shell: WARNING no durable WAL module on the class path and s3stream.wal is not set;"
                    + " using an in-memory WAL: acknowledged records are lost if the process dies before upload");
            b.wal("mem://kafka-shell-" + nodeId + "?capacity=256MiB");
        }
        String objects = get("s3stream.object.store", null);
        b.objectStore(objects != null ? objects : URI.create(dataDir.toAbsolutePath().resolve("objects").toUri().toString()).toString());
        String metadata = get("s3stream.metadata", null);
        if (metadata != null) {
            b.metadata(metadata);
        }
        // Every other engine setting by its key (StorageConfig.settings()) as s3stream.<key>; a misspelt one is an
        // error naming the known keys, not silently ignored.
        for (Map.Entry<String, String> e : new TreeMap<>(raw).entrySet()) {
            String key = e.getKey();
            if (key.startsWith("s3stream.kafka.")) {
                if (!SHELL_KEYS.contains(key)) {
                    throw new InvalidConfigException("unknown kafka-shell setting '" + key + "'; known: "
                            + new java.util.TreeSet<>(SHELL_KEYS));
                }
            } else if (key.startsWith("s3stream.") && !SHELL_KEYS.contains(key)) {
                b.set(key.substring("s3stream.".length()), e.getValue());
            }
        }
        return b.build();
    }

    /** Every setting as given (file and overrides), for the parts that read their own keys (logging). */
    public Map<String, String> settings() {
        return raw;
    }

    public String get(String key, String fallback) {
        return raw.getOrDefault(key, fallback);
    }

    public Map<String, String> raw() {
        return raw;
    }

    /**
     * One listener of {@code listeners}: its name (upper case), security protocol, the address it binds, and the one
     * it advertises (from {@code advertised.listeners} by name, else its own; port 0 means "the bound port").
     *
     * @param name           the listener's name, upper case
     * @param protocol       PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
     * @param host           the address bound (0.0.0.0 for every interface)
     * @param port           the port bound, 0 for a free one
     * @param advertisedHost the host clients are told
     * @param advertisedPort the port clients are told, 0 for the bound one
     */
    public record Listener(String name, String protocol, String host, int port, String advertisedHost,
                           int advertisedPort) {
    }

    /** Every listener, in the order of {@code listeners}; the first is the one {@link #host()} etc. describe. */
    public List<Listener> listeners() { return listeners; }

    /**
     * The listener other shells reach this one on (transaction markers): {@code inter.broker.listener.name}, else the
     * listener named by {@code security.inter.broker.protocol} (default PLAINTEXT), else the only listener.
     */
    public Listener interBrokerListener() { return interBroker; }

    private static List<Listener> parseListeners(String spec, String advertisedSpec, String protocolMap,
                                                 String defaultHost, String defaultPort) {
        if (spec == null) {
            spec = "PLAINTEXT://" + defaultHost + ":" + defaultPort;
        }
        Map<String, String[]> advertised = new java.util.HashMap<>();
        if (advertisedSpec != null) {
            for (String entry : advertisedSpec.split(",")) {
                String[] nameAndAddress = endpoint("advertised.listeners", entry.trim());
                advertised.put(nameAndAddress[0], nameAndAddress);
            }
        }
        List<Listener> out = new ArrayList<>();
        java.util.Set<String> names = new java.util.HashSet<>();
        for (String entry : spec.split(",")) {
            String[] e = endpoint("listeners", entry.trim());
            if (!names.add(e[0])) {
                throw new InvalidConfigException("listeners: the name " + e[0] + " is used twice in '" + spec
                        + "'; each listener needs its own name (map names to protocols in listener.security.protocol.map)");
            }
            String host = e[1].isEmpty() ? "0.0.0.0" : e[1];
            int port = intValue("port of listener " + e[0], e[2], 0, 65535);
            String[] adv = advertised.remove(e[0]);
            String advertisedHost = adv != null ? adv[1] : host.equals("0.0.0.0") ? "127.0.0.1" : host;
            int advertisedPort = adv != null ? intValue("advertised.listeners", adv[2], 0, 65535) : port;
            out.add(new Listener(e[0], securityProtocol(e[0], protocolMap), host, port, advertisedHost, advertisedPort));
        }
        if (!advertised.isEmpty()) {
            throw new InvalidConfigException("advertised.listeners names " + new TreeMap<>(advertised).keySet()
                    + ", which listeners does not define (" + spec + ")");
        }
        java.util.Set<Integer> ports = new java.util.HashSet<>();
        for (Listener l : out) {
            if (l.port() != 0 && !ports.add(l.port())) {
                throw new InvalidConfigException("listeners: port " + l.port() + " is used by two listeners in '"
                        + spec + "'");
            }
        }
        return List.copyOf(out);
    }

    /** {@code NAME://host:port} → {name (upper case), host, port}. */
    private static String[] endpoint(String key, String entry) {
        int scheme = entry.indexOf("://");
        int colon = entry.lastIndexOf(':');
        if (scheme <= 0 || colon <= scheme) {
            throw new InvalidConfigException(key + " must look like PLAINTEXT://127.0.0.1:9092, was '" + entry + "'");
        }
        return new String[] {entry.substring(0, scheme).toUpperCase(java.util.Locale.ROOT),
                entry.substring(scheme + 3, colon), entry.substring(colon + 1)};
    }

    private static Listener interBrokerListener(List<Listener> listeners, String name, String protocol) {
        if (name != null && protocol != null) {
            throw new InvalidConfigException("set inter.broker.listener.name or security.inter.broker.protocol, "
                    + "not both (as in Kafka)");
        }
        String wanted = (name != null ? name : protocol != null ? protocol : "PLAINTEXT").toUpperCase(java.util.Locale.ROOT);
        for (Listener l : listeners) {
            if (l.name().equals(wanted)) {
                return l;
            }
        }
        if (name == null && protocol == null && listeners.size() == 1) {
            return listeners.getFirst(); // one listener: shells reach each other on it
        }
        throw new InvalidConfigException((name != null ? "inter.broker.listener.name" : protocol != null
                ? "security.inter.broker.protocol" : "inter.broker.listener.name (unset, so PLAINTEXT)") + ": no listener "
                + "named " + wanted + " among " + listeners.stream().map(Listener::name).toList()
                + "; name the listener other shells use");
    }

    public String host() { return host; }
    /** The listener's name as {@code listeners} gives it (the part before {@code ://}), upper case. */
    public String listenerName() { return listenerName; }
    /** The listener's security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. */
    public String securityProtocol() { return securityProtocol; }

    /**
     * The security protocol of listener {@code name}: the name itself when it is one (PLAINTEXT, SSL), else what
     * {@code listener.security.protocol.map} maps it to, as Kafka reads it.
     */
    private static String securityProtocol(String name, String map) {
        String protocol = name.toUpperCase(java.util.Locale.ROOT);
        if (map != null) {
            for (String entry : map.split(",")) {
                String[] kv = entry.trim().split(":");
                if (kv.length == 2 && kv[0].trim().equalsIgnoreCase(name)) {
                    protocol = kv[1].trim().toUpperCase(java.util.Locale.ROOT);
                }
            }
        }
        return switch (protocol) {
            case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL" -> protocol;
            default -> throw new InvalidConfigException("listener " + name + ": unknown security protocol '" + protocol
                    + "' (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, or map the name in "
                    + "listener.security.protocol.map)");
        };
    }
    public int port() { return port; }
    public String advertisedHost() { return advertisedHost; }
    public int advertisedPort() { return advertisedPort; }
    public int nodeId() { return nodeId; }
    public String clusterId() { return clusterId; }
    public int numPartitions() { return numPartitions; }
    public boolean autoCreateTopics() { return autoCreateTopics; }
    public int groupMinSessionTimeoutMs() { return groupMinSessionTimeoutMs; }
    public int groupMaxSessionTimeoutMs() { return groupMaxSessionTimeoutMs; }
    public int groupInitialRebalanceDelayMs() { return groupInitialRebalanceDelayMs; }
    /** KIP-848 groups: how often members heartbeat (Kafka's {@code group.consumer.heartbeat.interval.ms}). */
    public int groupConsumerHeartbeatIntervalMs() { return groupConsumerHeartbeatIntervalMs; }
    /** KIP-848 groups: a member silent this long is removed (Kafka's {@code group.consumer.session.timeout.ms}). */
    public int groupConsumerSessionTimeoutMs() { return groupConsumerSessionTimeoutMs; }
    public int messageMaxBytes() { return messageMaxBytes; }
    public int socketRequestMaxBytes() { return socketRequestMaxBytes; }
    /** Bytes of requests buffered or in flight across connections; -1 for no limit (Kafka's default). */
    public long queuedMaxRequestBytes() { return queuedMaxRequestBytes; }
    /** A connection with no traffic this long is closed; -1 for never. */
    public long connectionsMaxIdleMs() { return connectionsMaxIdleMs; }
    public long logRetentionMs() { return logRetentionMs; }
    public long logRetentionBytes() { return logRetentionBytes; }
    public Path dataDir() { return dataDir; }
    public long retentionCheckIntervalMs() { return retentionCheckIntervalMs; }
    public long reconcileMs() { return reconcileMs; }

    /**
     * How long the first offset commit waits for others before they are written together (0: written at once;
     * commits that arrive while one is written still go together in the next change). Each change is one
     * object-store write.
     */
    public long offsetsCommitLingerMs() { return offsetsCommitLingerMs; }
    /**
     * How long an empty group keeps its committed offsets: {@code offsets.retention.minutes} (7 days), or
     * {@code s3stream.kafka.offsets.retention.ms} when set.
     */
    public long offsetsRetentionMs() { return offsetsRetentionMs; }
    /** How often the coordinator looks for expired offsets ({@code offsets.retention.check.interval.ms}). */
    public long offsetsRetentionCheckIntervalMs() { return offsetsRetentionCheckIntervalMs; }
    /**
     * How often TLS listeners look for new key and trust store files ({@code s3stream.kafka.ssl.reload.check.ms},
     * default 30 s); 0 never.
     */
    public long sslReloadCheckMs() {
        return intValue("s3stream.kafka.ssl.reload.check.ms", get("s3stream.kafka.ssl.reload.check.ms", "30000"), 0,
                Integer.MAX_VALUE);
    }

    /**
     * How many bytes of fetched batches may wait in the storage library's buffers for their connections
     * ({@code s3stream.kafka.fetch.held.max.bytes}, default 64 MiB; past it reads are copied to the heap; 0 always).
     */
    public long fetchHeldMaxBytes() {
        long v = longValue("s3stream.kafka.fetch.held.max.bytes", get("s3stream.kafka.fetch.held.max.bytes",
                Long.toString(64L << 20)));
        if (v < 0) {
            throw new InvalidConfigException("s3stream.kafka.fetch.held.max.bytes must be >= 0, was " + v);
        }
        return v;
    }

    /**
     * How many incremental fetch sessions (KIP-227) the shell keeps ({@code max.incremental.fetch.session.cache.slots},
     * Kafka's key and default, 1000); 0 answers every fetch in full.
     */
    public int fetchSessionCacheSlots() {
        return intValue("max.incremental.fetch.session.cache.slots",
                get("max.incremental.fetch.session.cache.slots", "1000"), 0, Integer.MAX_VALUE);
    }

    /** Port of the Prometheus endpoint ({@code metrics.port}): -1 (the default) off, 0 any free port. */
    public int metricsPort() {
        return intValue("metrics.port", get("metrics.port", "-1"), -1, 65535);
    }

    /** Address the Prometheus endpoint binds ({@code metrics.host}), by default the listener's. */
    public String metricsHost() {
        return get("metrics.host", host);
    }

    /**
     * How long a transactional id with no transaction in progress is kept after its last change (Kafka's
     * {@code transactional.id.expiration.ms}, 7 days).
     */
    public int transactionalIdExpirationMs() {
        return intValue("transactional.id.expiration.ms", get("transactional.id.expiration.ms", "604800000"), 1,
                Integer.MAX_VALUE);
    }

    /** The longest transaction timeout a producer may ask for (Kafka's {@code transaction.max.timeout.ms}). */
    public int transactionMaxTimeoutMs() {
        return intValue("transaction.max.timeout.ms", get("transaction.max.timeout.ms", "900000"), 1, Integer.MAX_VALUE);
    }

    /** How often the transaction coordinator aborts timed-out transactions and finishes half-ended ones. */
    public long transactionSweepMs() { return transactionSweepMs; }
    public long leaseRenewMs() { return leaseRenewMs; }
    public long leaseTimeoutMs() { return leaseTimeoutMs; }
    /** How long a shell that registered again may take to write its first lease before it is taken over anyway. */
    public long leaseStartupGraceMs() { return leaseStartupGraceMs; }
    /** How long a topic's stream must go unrecorded before it is taken for an unfinished creation's and destroyed. */
    public long orphanStreamGraceMs() { return orphanStreamGraceMs; }
    public boolean failoverEnabled() { return failoverEnabled; }
    public long balanceIntervalMs() { return balanceIntervalMs; }
    /** Half-width of the byte band, as a fraction of the mean traffic per shell. */
    public double balanceBand() { return balanceBand; }
    /** Traffic differences below this (bytes per second) are never balanced by bytes. */
    public long balanceMinBytesPerSec() { return balanceMinBytesPerSec; }

    private static int intValue(String key, String value, int min, int max) {
        long v = longValue(key, value);
        if (v < min || v > max) {
            throw new InvalidConfigException(key + " must be between " + min + " and " + max + ", was " + value);
        }
        return (int) v;
    }

    private static long longValue(String key, String value) {
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new InvalidConfigException(key + " must be a number, was '" + value + "'", e);
        }
    }
}
