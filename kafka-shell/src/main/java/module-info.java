/**
 * kafka-shell: a Kafka-protocol broker on s3stream. An operator or a test starts one with
 * {@link io.s3stream.kafka.shell.KafkaShell} and a {@link io.s3stream.kafka.shell.config.ShellConfig}; those two
 * packages are exported and everything else (the API families, the group coordinator, the cluster) is the broker's
 * own. kafka-clients and snappy-java have no module name in their jars, so they are required by the ones their file
 * names give.
 */
module io.s3stream.kafka.shell {
    requires transitive io.s3stream.core;
    requires kafka.clients;
    requires snappy.java; // the produce validator guards snappy-java's stream format (log.CompressedRecords)
    requires transitive java.logging; // ShellLogging (exported .config) speaks java.util.logging Levels
    requires io.netty.buffer;
    requires io.netty.common;
    requires io.netty.transport;
    requires io.netty.transport.classes.epoll; // s3stream.kafka.network.transport=epoll (network.SocketTransport)
    requires io.netty.codec;
    requires io.netty.handler; // IdleStateHandler (connections.max.idle.ms)
    requires io.s3stream.metrics.micrometer;
    requires micrometer.registry.prometheus;
    requires jdk.httpserver; // metrics.port
    requires java.security.sasl; // SASL listeners (Kafka's PlainSaslServer is a javax.security.sasl.SaslServer)

    exports io.s3stream.kafka.shell;
    exports io.s3stream.kafka.shell.config;
}
