package io.s3stream.kafka.shell;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.s3stream.InvalidConfigException;
import io.s3stream.NodeFencedException;
import io.s3stream.StorageMetrics;
import io.s3stream.StreamStorage;
import io.s3stream.kafka.shell.acl.AclApis;
import io.s3stream.kafka.shell.acl.AclAuthorizer;
import io.s3stream.kafka.shell.acl.Authorization;
import io.s3stream.kafka.shell.acl.RequestGuard;
import io.s3stream.kafka.shell.cluster.Balancer;
import io.s3stream.kafka.shell.cluster.ClusterApis;
import io.s3stream.kafka.shell.cluster.ClusterMembership;
import io.s3stream.kafka.shell.config.ShellConfig;
import io.s3stream.kafka.shell.config.ShellLogging;
import io.s3stream.kafka.shell.fetch.FetchApis;
import io.s3stream.kafka.shell.fetch.FetchSessions;
import io.s3stream.kafka.shell.group.GroupApis;
import io.s3stream.kafka.shell.group.GroupCoordinator;
import io.s3stream.kafka.shell.log.KafkaKeyCompaction;
import io.s3stream.kafka.shell.quota.ClientQuotas;
import io.s3stream.kafka.shell.quota.QuotaApis;
import io.s3stream.kafka.shell.log.PartitionLog;
import io.s3stream.kafka.shell.log.ReadRecords;
import io.s3stream.kafka.shell.log.Retention;
import io.s3stream.kafka.shell.metrics.ShellMetrics;
import io.s3stream.kafka.shell.network.ApiDispatcher;
import io.s3stream.kafka.shell.network.ConnectionInitializer;
import io.s3stream.kafka.shell.network.InterShellSecurity;
import io.s3stream.kafka.shell.network.OpenConnections;
import io.s3stream.kafka.shell.network.ReloadingTls;
import io.s3stream.kafka.shell.network.RequestMemoryPool;
import io.s3stream.kafka.shell.network.SaslAuthentication;
import io.s3stream.kafka.shell.network.SocketTransport;
import io.s3stream.kafka.shell.network.ScramApis;
import io.s3stream.kafka.shell.network.ScramCredentials;
import io.s3stream.kafka.shell.produce.ProduceApis;
import io.s3stream.kafka.shell.topic.TopicApis;
import io.s3stream.kafka.shell.topic.TopicConfigs;
import io.s3stream.kafka.shell.topic.TopicRegistry;
import io.s3stream.kafka.shell.txn.TransactionCoordinator;
import io.s3stream.kafka.shell.txn.TxnApis;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A Kafka-protocol broker on s3stream: {@link #start} opens the storage engine, the topics and the group coordinator,
 * then listens; {@link #close} stops listening and closes the engine, which uploads the log cache.
 *
 * <p>Run it with {@code bin/kafka-shell [server.properties] [--override key=value ...]}.
 */
public final class KafkaShell implements AutoCloseable {
    private final ShellConfig config;
    private final StreamStorage storage;
    /** SCRAM users; given their store once storage is open (the listener is bound before). */
    private final ScramCredentials scram = new ScramCredentials();
    /** ACLs (authorizer.class.name), or null; configured before the port is bound, given its store once storage opens. */
    private final AclAuthorizer acls;
    /** Set before the listener accepts its first connection. */
    private volatile ApiDispatcher apis;
    /** The memory budget of requests in flight, across connections ({@code queued.max.request.bytes}). */
    private final RequestMemoryPool requestMemory;
    private final OpenConnections connections = new OpenConnections();
    private final ExecutorService blocking;
    private final ScheduledExecutorService timer;
    private final GroupCoordinator groups;
    private final TransactionCoordinator transactions;
    private final ShellMetrics metrics;
    private final int metricsPort;
    private final TopicRegistry topics;
    private final SocketTransport transport;
    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    /** The TLS contexts of the SSL and SASL_SSL listeners, which follow their store files. */
    private final List<ReloadingTls> tlsContexts = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** The SASL set-ups of the listeners (OAUTHBEARER's refreshes its keys until closed). */
    private final List<SaslAuthentication> saslSetups = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** One server channel per listener, in the order of {@code listeners}. */
    private final List<Channel> servers;
    /** The bound port of each listener, by name. */
    private final Map<String, Integer> ports;
    private final int port;
    private final ClusterMembership membership;
    private volatile boolean closed;
    private boolean drained;
    private final Balancer balancer;
    private volatile java.util.function.Consumer<String> onFenced = reason -> { };

    private KafkaShell(ShellConfig config) {
        this.config = config;
        this.requestMemory = new RequestMemoryPool(config.queuedMaxRequestBytes());
        this.acls = AclAuthorizer.fromConfig(config.settings()); // a bad setting fails before anything starts
        // Per JVM (a static bound): several shells in one JVM, as in tests, share it.
        ReadRecords.maxHeldBytes(config.fetchHeldMaxBytes());
        ShellConfig.Listener internal = config.interBrokerListener();
        InterShellSecurity interShell = InterShellSecurity.forListener(internal.name(), internal.protocol(),
                listenerSettings(config, internal));
        interShell.problem().ifPresent(problem -> System.getLogger(KafkaShell.class.getName()).log(
                System.Logger.Level.WARNING, () -> problem + ": with several shells, a transaction over partitions of "
                        + "another shell cannot be completed"));
        // The port first: a shell that cannot listen must fail before it opens (and recovers) the engine. The server
        // socket accepts nothing until everything below is ready (AUTO_READ off): clients wait in the backlog.
        this.transport = SocketTransport.of(config.get(SocketTransport.SETTING, null));
        this.boss = new MultiThreadIoEventLoopGroup(1, transport.ioHandlers());
        this.workers = new MultiThreadIoEventLoopGroup(Math.max(2, Runtime.getRuntime().availableProcessors()),
                transport.ioHandlers());
        this.servers = bindAll(config);
        Map<String, Integer> bound = new LinkedHashMap<>();
        for (int i = 0; i < servers.size(); i++) {
            bound.put(config.listeners().get(i).name(), ((InetSocketAddress) servers.get(i).localAddress()).getPort());
        }
        this.ports = Map.copyOf(bound);
        this.port = bound.get(config.listenerName());
        this.blocking = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("kafka-shell-append-", 0).factory());
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kafka-shell-timer");
            t.setDaemon(true);
            return t;
        });
        StreamStorage opened = null;
        ShellMetrics startedMetrics = null;
        try {
            opened = StreamStorage.open(config.storageConfig());
            this.storage = opened;
            TopicRegistry topics = new TopicRegistry(storage, blocking, config.nodeId(), config.orphanStreamGraceMs());
            this.topics = topics;
            topics.reconcile();
            this.groups = new GroupCoordinator(config, storage.keyValues());
            groups.load();
            Authorization auth = Authorization.by(acls);
            ClusterApis cluster = new ClusterApis(config, topics, auth);
            java.util.SequencedMap<String, String> endpoints = new LinkedHashMap<>();
            for (ShellConfig.Listener l : config.listeners()) {
                endpoints.put(l.name(), l.advertisedHost() + ":"
                        + (l.advertisedPort() == 0 ? ports.get(l.name()) : l.advertisedPort()));
            }
            cluster.endpoints(endpoints);
            GroupApis groupApis = new GroupApis(config.nodeId(), topics, groups, cluster::brokers, cluster::liveIds,
                    auth);
            this.metrics = startedMetrics = new ShellMetrics(config.nodeId(), storage);
            // Markers go to other shells on their inter-broker listener.
            this.transactions = new TransactionCoordinator(storage.keyValues(), topics, groupApis::coordinates,
                    () -> topics.brokersOn(internal.name()), interShell, config.transactionMaxTimeoutMs(),
                    config.transactionalIdExpirationMs());
            FetchSessions fetchSessions = new FetchSessions(config.fetchSessionCacheSlots());
            fetchSessions.bindTo(metrics.registry());
            connections.bindTo(metrics.registry());
            ClientQuotas quotas = new ClientQuotas(storage.keyValues());
            quotas.refresh();
            scram.attach(storage.keyValues());
            if (acls != null) {
                acls.attach(storage.keyValues());
            }
            this.apis = new ApiDispatcher(List.of(cluster, groupApis, new QuotaApis(quotas, blocking),
                    new ScramApis(scram, blocking), new AclApis(acls, blocking),
                    new ProduceApis(config, topics, metrics, auth),
                    new TxnApis(transactions, topics, auth),
                    new FetchApis(topics, timer, metrics, auth, fetchSessions),
                    new TopicApis(config, topics, topic -> {
                        groups.forgetTopic(topic);
                        metrics.forgetTopic(topic);
                    }, blocking, cluster::brokers, auth)), metrics, quotas::throttleMs, new RequestGuard(auth));
            if (config.listeners().stream().anyMatch(l -> l.protocol().startsWith("SASL_"))) {
                apis.advertiseSasl();
            }
            this.metricsPort = config.metricsPort() < 0 ? -1 : metrics.serve(config.metricsHost(), config.metricsPort());
            periodically(config.retentionCheckIntervalMs(), () -> true, () -> applyRetention(topics));
            this.membership = new ClusterMembership(config.nodeId(), storage, topics, config.leaseRenewMs(),
                    config.leaseTimeoutMs(), config.leaseStartupGraceMs(), config.failoverEnabled(), reason -> {
                        System.err.println("kafka-shell: FENCED: " + reason + "; no longer serving");
                        onFenced.accept(reason);
                    });
            membership.join();
            topics.servingWhile(membership::canServe);
            cluster.liveShells(membership::live);
            topics.registerBroker(endpoints);
            periodically(config.leaseRenewMs(), () -> !closed, membership::tick);
            long balanceMs = config.balanceIntervalMs();
            this.balancer = new Balancer(config.nodeId(), storage.keyValues(), topics, config.balanceBand(),
                    config.balanceMinBytesPerSec(), Math.max(1, balanceMs));
            if (balanceMs > 0) {
                // Every shell reports its partitions' traffic; the lowest live shell alone moves, one move at a time.
                periodically(balanceMs, () -> !closed && membership.canServe(), () -> {
                    try {
                        balancer.publishLoad();
                        java.util.SortedMap<Integer, Long> live = membership.live();
                        if (!live.isEmpty() && live.firstKey() == config.nodeId()) {
                            String move = balancer.balanceOnce(live.keySet());
                            if (move != null) {
                                System.getLogger(KafkaShell.class.getName()).log(System.Logger.Level.INFO,
                                        "balancer: " + move);
                            }
                        }
                    } catch (RuntimeException e) {
                        System.getLogger(KafkaShell.class.getName()).log(System.Logger.Level.WARNING,
                                "balancer round failed", e);
                    }
                });
            }
            periodically(config.reconcileMs(), () -> !closed, () -> {
                topics.reconcile();
                groups.retainOnly(groupApis::coordinates);
                syncKeyCompaction(topics);
                quotas.refresh(); // quotas, SCRAM users and ACLs altered on another shell
                scram.refresh();
                if (acls != null) {
                    acls.refresh();
                }
            });
            transactions.start(config.transactionSweepMs());
            if (config.sslReloadCheckMs() > 0 && !tlsContexts.isEmpty()) {
                periodically(config.sslReloadCheckMs(), () -> !closed, () -> tlsContexts.forEach(ReloadingTls::check));
            }
            servers.forEach(server -> server.config().setAutoRead(true)); // accept connections from now on
        } catch (RuntimeException e) {
            // Nothing may keep the JVM alive after a failed start: the event loops are not daemon threads.
            if (startedMetrics != null) {
                startedMetrics.close();
            }
            timer.shutdownNow();
            blocking.shutdownNow();
            servers.forEach(server -> server.close().syncUninterruptibly());
            boss.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            workers.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            if (opened != null) {
                try {
                    opened.close();
                } catch (RuntimeException closeError) {
                    e.addSuppressed(closeError);
                }
            }
            throw e;
        }
    }

    /**
     * Runs {@code task} on the blocking executor every {@code periodMs} while {@code when} holds, never two runs at once
     * (a slow run makes the next tick skip rather than pile up behind it).
     */
    private void periodically(long periodMs, java.util.function.BooleanSupplier when, Runnable task) {
        java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean();
        timer.scheduleWithFixedDelay(() -> {
            if (when.getAsBoolean() && running.compareAndSet(false, true)) {
                blocking.execute(() -> {
                    try {
                        task.run();
                    } finally {
                        running.set(false);
                    }
                });
            }
        }, periodMs, periodMs, TimeUnit.MILLISECONDS);
    }

    /**
     * Binds every listener, or closes what was bound, shuts the event loops down and says which listener, address and
     * setting could not be used.
     */
    private List<Channel> bindAll(ShellConfig config) {
        List<Channel> bound = new java.util.ArrayList<>();
        try {
            for (ShellConfig.Listener l : config.listeners()) {
                bound.add(bind(config, l));
            }
        } catch (RuntimeException e) {
            bound.forEach(c -> c.close().syncUninterruptibly());
            boss.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            workers.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            throw e;
        }
        return List.copyOf(bound);
    }

    /** A listener's view of the settings: {@code listener.name.<name>.<key>} first, then {@code <key>}. */
    private static java.util.function.Function<String, String> listenerSettings(ShellConfig config,
                                                                               ShellConfig.Listener listener) {
        String prefix = "listener.name." + listener.name().toLowerCase(java.util.Locale.ROOT) + ".";
        return k -> config.get(prefix + k, config.get(k, null));
    }

    /**
     * Binds one listener with its TLS and SASL set up from Kafka's keys: {@code listener.name.<name>.<key>} first, then
     * {@code <key>}, as Kafka reads per-listener settings.
     */
    private Channel bind(ShellConfig config, ShellConfig.Listener listener) {
        int maxFrame = config.socketRequestMaxBytes();
        java.util.function.Function<String, String> setting = listenerSettings(config, listener);
        String protocol = listener.protocol();
        ReloadingTls tls = protocol.endsWith("SSL") ? new ReloadingTls(listener.name(), setting) : null;
        if (tls != null) {
            tlsContexts.add(tls);
        }
        org.apache.kafka.common.security.ssl.SslPrincipalMapper principals = null;
        if (protocol.equals("SSL")) {
            String rules = setting.apply("ssl.principal.mapping.rules");
            try {
                principals = org.apache.kafka.common.security.ssl.SslPrincipalMapper.fromRules(
                        rules == null ? "DEFAULT" : rules);
            } catch (IllegalArgumentException e) {
                throw new InvalidConfigException("ssl.principal.mapping.rules: " + e.getMessage());
            }
        }
        SaslAuthentication sasl = protocol.startsWith("SASL_")
                ? SaslAuthentication.fromConfig(listener.name(), setting, scram) : null;
        if (sasl != null) {
            saslSetups.add(sasl);
        }
        InetSocketAddress address = new InetSocketAddress(listener.host(), listener.port());
        try {
            return new ServerBootstrap().group(boss, workers).channel(transport.serverChannel())
                    .option(ChannelOption.SO_REUSEADDR, true)
                    .option(ChannelOption.AUTO_READ, false)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ConnectionInitializer(() -> apis, maxFrame, requestMemory,
                            config.connectionsMaxIdleMs(), tls, sasl, listener.name(),
                            org.apache.kafka.common.security.auth.SecurityProtocol.forName(protocol), principals,
                            connections))
                    .bind(address).syncUninterruptibly().channel();
        } catch (Exception e) { // Netty rethrows the checked BindException without declaring it
            // Name the listener, the address and the setting that chose it.
            throw new InvalidConfigException("cannot listen on " + listener.host() + ":" + listener.port()
                    + " (listener " + listener.name() + " of listeners=" + config.get("listeners", "PLAINTEXT://"
                    + config.host() + ":" + config.port()) + "): " + e.getMessage()
                    + "; stop what holds the port or choose another in listeners", e);
        }
    }

    /** Log compaction on each partition led here whose topic's cleanup.policy includes compact, and off elsewhere. */
    private void syncKeyCompaction(TopicRegistry topics) {
        for (TopicRegistry.Topic t : topics.all()) {
            String name = t.name();
            java.util.function.Supplier<java.util.Map<String, String>> current = () -> {
                TopicRegistry.Topic now = topics.get(name);
                return TopicConfigs.effective(config, now == null ? java.util.Map.of() : now.configs());
            };
            for (PartitionLog p : t.ledHere()) {
                if (p != null) {
                    p.syncKeyCompaction(current);
                }
            }
        }
    }

    private void applyRetention(TopicRegistry topics) {
        long now = System.currentTimeMillis();
        for (TopicRegistry.Topic t : topics.all()) {
            java.util.Map<String, String> cfg = TopicConfigs.effective(config, t.configs());
            if (!KafkaKeyCompaction.deletes(cfg)) {
                continue; // cleanup.policy=compact alone: no retention by time or size, as in Kafka
            }
            for (PartitionLog p : t.ledHere()) {
                if (closed || p == null) {
                    return;
                }
                try {
                    Retention.apply(p, cfg, now);
                } catch (RuntimeException e) {
                    System.getLogger(KafkaShell.class.getName()).log(System.Logger.Level.WARNING,
                            () -> "retention of " + t.name() + "-" + p.partition() + " failed; retried next round", e);
                }
            }
        }
    }

    /** Starts a broker; the engine has recovered its WAL and the port is bound when this returns. */
    public static KafkaShell start(ShellConfig config) {
        return new KafkaShell(config);
    }

    /** The socket transport under the listeners ({@link SocketTransport#SETTING}). */
    SocketTransport transport() {
        return transport;
    }

    /** The port the broker listens on (useful with {@code listeners=PLAINTEXT://127.0.0.1:0}): its first listener's. */
    public int port() {
        return port;
    }

    /** The port listener {@code name} (as in {@code listeners}, any case) is bound to. */
    public int port(String name) {
        Integer p = ports.get(name.toUpperCase(java.util.Locale.ROOT));
        if (p == null) {
            throw new IllegalArgumentException("no listener named " + name + " (" + ports.keySet() + ")");
        }
        return p;
    }

    /** The port of the Prometheus endpoint, -1 when {@code metrics.port} is off. */
    public int metricsPort() {
        return metricsPort;
    }

    /** The engine's counters (requests and bytes by kind, caches, uploads). */
    public StorageMetrics metrics() {
        return storage.metrics();
    }

    /**
     * One greppable line of the engine's counters, {@code kafka-shell metrics: key=value ...}: what
     * {@code s3stream.metrics.log.interval.ms} prints, parsed by {@code benchmarks/compare/object-cost.sh}.
     */
    static String metricsLine(StorageMetrics m) {
        StringBuilder sb = new StringBuilder("kafka-shell metrics: timeMs=").append(System.currentTimeMillis())
                .append(" appendedBatches=").append(m.appends().batches())
                .append(" appendedBytes=").append(m.appends().bytes())
                .append(" uploadedObjects=").append(m.uploads().objects())
                .append(" uploadedBytes=").append(m.uploads().bytes())
                .append(" logCacheBytes=").append(m.logCache().bytes())
                .append(" blockCacheBytes=").append(m.blockCache().bytes())
                .append(" blockCacheHits=").append(m.blockCache().hits())
                .append(" blockCacheMisses=").append(m.blockCache().misses())
                .append(" readAheadBlocks=").append(m.readAhead().blocks())
                .append(" catchUpLimit=").append(m.reads().catchUpLimit())
                .append(" catchUpCuts=").append(m.reads().catchUpCuts())
                .append(" bytesOut=").append(m.objectStore().bytesOut())
                .append(" bytesIn=").append(m.objectStore().bytesIn());
        new java.util.TreeMap<>(m.objectStore().requests()).forEach((k, v) -> sb.append(" req.").append(k).append('=').append(v));
        return sb.toString();
    }

    /** The group coordinator, for tests in this package. */
    GroupCoordinator groupsForTest() {
        return groups;
    }

    /** The engine's key-value space (topics, leaders, leases, offsets), for tests in this package. */
    io.s3stream.KeyValues keyValuesForTest() {
        return storage.keyValues();
    }

    /** The ACL authorizer, null without {@code authorizer.class.name}; for tests in this package. */
    AclAuthorizer aclsForTest() {
        return acls;
    }

    /** The request memory budget, for tests in this package. */
    RequestMemoryPool requestMemoryForTest() {
        return requestMemory;
    }

    /** The topic registry, for tests in this package. */
    TopicRegistry topicsForTest() {
        return topics;
    }

    public String bootstrapServers() {
        return config.advertisedHost() + ":" + port;
    }

    /**
     * Hands each partition this shell leads to another live shell (its stream closed, so its data is uploaded, and
     * reopened there), while this shell still serves: the drain of a clean shutdown, so a rolling restart costs a move
     * per partition rather than an outage. Returns how many partitions moved; 0 when no other shell is live (they
     * then wait for this one to come back) or this shell is fenced. {@link #close()} drains if this was not called.
     */
    public synchronized int drain() {
        if (drained || closed) {
            return 0;
        }
        drained = true;
        java.util.Set<Integer> others = new java.util.TreeSet<>(membership.live().keySet());
        others.remove(config.nodeId());
        if (others.isEmpty() || !membership.canServe()) {
            return 0;
        }
        long started = System.nanoTime();
        int moved = topics.drainTo(others);
        System.getLogger(KafkaShell.class.getName()).log(System.Logger.Level.INFO, "drained " + moved
                + " partitions to nodes " + others + " in " + (System.nanoTime() - started) / 1_000_000 + " ms");
        return moved;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        try {
            drain();
        } catch (RuntimeException e) {
            System.getLogger(KafkaShell.class.getName()).log(System.Logger.Level.WARNING, "drain failed", e);
        }
        closed = true;
        servers.forEach(server -> server.close().syncUninterruptibly());
        connections.closeAll(5_000); // before the event loops stop: they may not close them (OpenConnections)
        saslSetups.forEach(SaslAuthentication::close);
        checkpointTimeIndexes();
        membership.close();
        try {
            balancer.forget(config.nodeId());
            topics.unregisterBroker();
        } catch (RuntimeException e) {
            System.getLogger(KafkaShell.class.getName()).log(System.Logger.Level.WARNING, "could not unregister", e);
        }
        boss.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
        workers.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
        transactions.close();
        metrics.close();
        groups.close();
        timer.shutdownNow();
        storage.close();
        blocking.shutdown();
    }

    /**
     * Stores the time index of each partition led here (the requests are drained), so that the next start continues it
     * instead of leaving this run's last batches unindexed. Waits up to 10 s; what is not written then is read by the
     * searches that need it.
     */
    private void checkpointTimeIndexes() {
        try {
            java.util.List<CompletableFuture<Void>> writes = new java.util.ArrayList<>();
            for (TopicRegistry.Topic t : topics.all()) {
                for (PartitionLog p : t.ledHere()) {
                    writes.add(p.timeIndex().writeAll(p.logStartOffset(), p.highWatermark()));
                }
            }
            CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            System.getLogger(KafkaShell.class.getName()).log(System.Logger.Level.WARNING, "not every partition's time "
                    + "index checkpoint was written while stopping: " + e);
        }
    }

    /** Whether {@code e} or one of its causes says this shell's node epoch was fenced by a newer instance. */
    static boolean fencedCause(Throwable e) {
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable t = e; t != null && seen.add(t); t = t.getCause()) {
            if (t instanceof NodeFencedException) {
                return true;
            }
        }
        return false;
    }

    /**
     * The one line printed when the shell cannot start. Taken over while starting (the start outlasted the lease of
     * the instance it replaces, or a newer instance opened the WAL first) reads "fenced" whichever component noticed,
     * like a fenced exit while serving, and exits with the same status: the remedy is the same, start again.
     */
    static String startFailure(Throwable e) {
        return "kafka-shell: cannot start: " + (fencedCause(e) ? "fenced by a newer instance: " : "") + causes(e);
    }

    /** The messages of {@code e} and its causes, each once, joined: one line for an operator. */
    static String causes(Throwable e) {
        StringBuilder sb = new StringBuilder();
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable t = e; t != null && seen.add(t); t = t.getCause()) {
            String m = t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
            if (t instanceof java.util.concurrent.CompletionException || sb.indexOf(m) >= 0) {
                continue; // wrappers repeat their cause's message
            }
            if (!sb.isEmpty()) {
                sb.append(": ");
            }
            sb.append(m);
        }
        return sb.toString();
    }

    /** {@code kafka-shell [server.properties] [--override key=value]...} */
    public static void main(String[] args) throws IOException, InterruptedException {
        Properties file = new Properties();
        Map<String, String> overrides = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--override") && i + 1 < args.length) {
                String kv = args[++i];
                int eq = kv.indexOf('=');
                if (eq < 0) {
                    System.err.println("kafka-shell: --override needs key=value, was '" + kv + "'");
                    System.exit(2);
                }
                overrides.put(kv.substring(0, eq), kv.substring(eq + 1));
            } else if (args[i].equals("-h") || args[i].equals("--help")) {
                System.out.println("usage: kafka-shell [server.properties] [--override key=value]...");
                return;
            } else {
                try (InputStream in = Files.newInputStream(Path.of(args[i]))) {
                    file.load(in);
                }
            }
        }
        KafkaShell shell;
        try {
            ShellConfig parsed = ShellConfig.of(file, overrides);
            ShellLogging.configure(ShellLogging.levels(parsed.settings(), System.getenv(ShellLogging.ENVIRONMENT)));
            shell = start(parsed);
        } catch (InvalidConfigException e) {
            System.err.println("kafka-shell: invalid configuration: " + e.getMessage());
            System.exit(2);
            return;
        } catch (Exception e) {
            // A store that is down, a WAL that cannot be opened: one line that says why, not a stack trace, and an
            // exit status a supervisor sees. (The stack trace is still there for those who ask for it.)
            System.err.println(startFailure(e));
            System.getLogger(KafkaShell.class.getName()).log(System.Logger.Level.DEBUG, "start failed", e);
            System.exit(fencedCause(e) ? 3 : 1);
            return;
        }
        ShellConfig config = shell.config;
        // Taken over by another shell (this one was paused or cut off): its engine is fenced and it must not serve
        // or write again under this identity. Exit at once; a restart rejoins as a new member.
        shell.onFenced = reason -> {
            System.err.println("kafka-shell: exiting: " + reason);
            Runtime.getRuntime().halt(3);
        };
        CountDownLatch stopped = new CountDownLatch(1);
        long metricsIntervalMs = Long.parseLong(config.get("s3stream.metrics.log.interval.ms", "0"));
        if (metricsIntervalMs > 0) {
            // Counters for cost measurements without JMX: one line every interval on stderr.
            Thread.ofPlatform().daemon().name("kafka-shell-metrics").start(() -> {
                while (stopped.getCount() > 0) {
                    try {
                        Thread.sleep(metricsIntervalMs);
                    } catch (InterruptedException e) {
                        return;
                    }
                    if (stopped.getCount() > 0) {
                        System.err.println(metricsLine(shell.metrics()));
                    }
                }
            });
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // Reported on stderr, not through System.Logger: JUL's own shutdown hook may already have closed its handlers.
            long draining = System.nanoTime();
            try {
                int moved = shell.drain();
                System.err.println("kafka-shell: drained " + moved + " partitions to the other live shells in "
                        + (System.nanoTime() - draining) / 1_000_000 + " ms");
            } catch (RuntimeException e) {
                System.err.println("kafka-shell: drain failed, partitions wait for this shell or a takeover: " + e);
            }
            System.err.println("kafka-shell: shutting down (uploading the log cache)");
            shell.close();
            if (metricsIntervalMs > 0) {
                try {
                    System.err.println(metricsLine(shell.metrics()));
                } catch (RuntimeException e) {
                    System.err.println("kafka-shell: no final metrics: " + e);
                }
            }
            stopped.countDown();
        }, "kafka-shell-shutdown"));
        StringBuilder others = new StringBuilder();
        for (ShellConfig.Listener l : config.listeners().subList(1, config.listeners().size())) {
            others.append(", ").append(l.name()).append(" on ").append(l.host()).append(':').append(shell.port(l.name()));
        }
        System.err.println("kafka-shell: listening on " + config.host() + ":" + shell.port() + others
                + " (node " + config.nodeId() + ", data " + config.dataDir().toAbsolutePath() + ", "
                + shell.transport.name().toLowerCase(java.util.Locale.ROOT) + " sockets)");
        stopped.await();
    }
}
