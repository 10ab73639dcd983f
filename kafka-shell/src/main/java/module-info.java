/**
 * kafka-shell: a Kafka-protocol broker on s3stream. An operator or a test starts one with
 * {@link io.s3stream.kafka.shell.KafkaShell} and a {@link io.s3stream.kafka.shell.config.ShellConfig}; those two
 * packages are exported and everything else (the API families, the group coordinator, the cluster) is the broker's
 * own. kafka-clients has no module name in its jar, so it is required by the one its file name gives.
 */
module io.s3stream.kafka.shell {
    requires transitive io.s3stream.core;
    requires kafka.clients;
    requires transitive java.logging; // ShellLogging (exported .config) speaks java.util.logging Levels
    requires io.netty.buffer;
    requires io.netty.common;
    requires io.netty.transport;
    requires io.netty.codec;
    requires io.netty.handler; // IdleStateHandler (connections.max.idle.ms)
    requires io.s3stream.metrics.micrometer;
    requires micrometer.registry.prometheus;
    requires jdk.httpserver; // metrics.port
    requires java.security.sasl; // SASL listeners (Kafka's PlainSaslServer is a javax.security.sasl.SaslServer)

    exports io.s3stream.kafka.shell;
    exports io.s3stream.kafka.shell.config;
}
