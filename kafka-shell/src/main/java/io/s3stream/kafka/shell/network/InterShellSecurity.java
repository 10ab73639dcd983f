package io.s3stream.kafka.shell.network;

import io.s3stream.InvalidConfigException;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.message.SaslAuthenticateRequestData;
import org.apache.kafka.common.message.SaslHandshakeRequestData;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.SaslAuthenticateRequest;
import org.apache.kafka.common.requests.SaslAuthenticateResponse;
import org.apache.kafka.common.requests.SaslHandshakeRequest;
import org.apache.kafka.common.requests.SaslHandshakeResponse;
import org.apache.kafka.common.security.JaasContext;
import org.apache.kafka.common.security.scram.internals.ScramSaslClientProvider;

import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.PasswordCallback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.sasl.Sasl;
import javax.security.sasl.SaslClient;
import javax.security.sasl.SaslException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * How a shell connects to the inter-broker listener of another shell (to write transaction markers), set up as a
 * Kafka broker sets up its inter-broker client: from the settings of that same listener.
 * <ul>
 *   <li>TLS ({@code SSL}, {@code SASL_SSL}): trusts {@code ssl.truststore.*} (the JDK's default trust when unset),
 *       presents {@code ssl.keystore.*} to a listener that asks for a client certificate (mutual TLS: the shells'
 *       principal is their certificate's), and checks the other shell's host name against its certificate unless
 *       {@code ssl.endpoint.identification.algorithm} is empty.</li>
 *   <li>SASL ({@code SASL_PLAINTEXT}, {@code SASL_SSL}): logs in with {@code sasl.mechanism.inter.broker.protocol}
 *       (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; unset: PLAIN when enabled, else the first SCRAM mechanism enabled) as
 *       the {@code username} and {@code password} of that mechanism's JAAS config on the listener
 *       ({@code listener.name.<listener>.<mechanism>.sasl.jaas.config}, else {@code sasl.jaas.config}), the options
 *       a Kafka broker's own login uses.</li>
 * </ul>
 * With ACLs, the shells' principal needs CLUSTER_ACTION on the cluster, or a place in {@code super.users}.
 * Invalid settings stop the start, naming the setting. A SASL listener whose JAAS config holds no login of the shell's
 * own (a single shell needs none) is {@link #problem() reported} at start, and each marker write to another shell
 * fails with that reason (and is retried); a refused login fails the same way.
 */
public final class InterShellSecurity {
    /** No TLS, no SASL. */
    public static final InterShellSecurity PLAINTEXT = new InterShellSecurity(null, null, false, null, null, null,
            null);

    private final SSLSocketFactory tls;
    private final String[] protocols;
    private final boolean verifyHostName;
    private final String mechanism;
    private final String username;
    private final String password;
    private final String problem;

    private InterShellSecurity(SSLSocketFactory tls, String[] protocols, boolean verifyHostName, String mechanism,
                               String username, String password, String problem) {
        this.problem = problem;
        this.tls = tls;
        this.protocols = protocols;
        this.verifyHostName = verifyHostName;
        this.mechanism = mechanism;
        this.username = username;
        this.password = password;
    }

    /**
     * The client side of the listener {@code listenerName} speaking {@code protocol}; {@code setting} reads a key
     * with the listener's prefix first ({@code listener.name.<listener>.<key>}), then the key itself.
     *
     * @throws InvalidConfigException naming the setting at fault
     */
    public static InterShellSecurity forListener(String listenerName, String protocol, Function<String, String> setting) {
        SSLSocketFactory tls = null;
        String[] protocols = null;
        boolean verify = false;
        if (protocol.endsWith("SSL")) {
            tls = TlsContexts.client(setting);
            protocols = TlsContexts.protocols(setting);
            String algorithm = setting.apply("ssl.endpoint.identification.algorithm");
            verify = algorithm == null || !algorithm.isBlank();
            if (verify && algorithm != null && !algorithm.equalsIgnoreCase("https")) {
                throw new InvalidConfigException("ssl.endpoint.identification.algorithm must be https or empty, was '"
                        + algorithm + "'");
            }
        }
        if (!protocol.startsWith("SASL_")) {
            return new InterShellSecurity(tls, protocols, verify, null, null, null, null);
        }
        String mechanism = mechanism(setting);
        if (mechanism == null) {
            return new InterShellSecurity(tls, protocols, verify, null, null, null, "the shells log in to each "
                    + "other's listener " + listenerName + " with PLAIN or SCRAM, and sasl.enabled.mechanisms="
                    + setting.apply("sasl.enabled.mechanisms") + " enables neither");
        }
        String lower = listenerName.toLowerCase(Locale.ROOT);
        String key = "listener.name." + lower + "." + mechanism.toLowerCase(Locale.ROOT) + ".sasl.jaas.config";
        String jaas = setting.apply(key);
        if (jaas == null) {
            key = "sasl.jaas.config";
            jaas = setting.apply(key);
        }
        String hint = "the shells log in to each other's listener " + listenerName + " with " + mechanism + " as the "
                + "username and password of " + key + " (" + loginModule(mechanism) + " required username=\"...\" "
                + "password=\"...\" ...;)";
        if (jaas == null) {
            return new InterShellSecurity(tls, protocols, verify, null, null, null, hint + ", which is not set");
        }
        String user = null;
        String pass = null;
        try {
            JaasContext context = JaasContext.loadServerContext(ListenerName.normalised(listenerName), mechanism,
                    Map.of(mechanism.toLowerCase(Locale.ROOT) + ".sasl.jaas.config", new Password(jaas)));
            for (AppConfigurationEntry e : context.configurationEntries()) {
                if (e.getOptions().get("username") instanceof String u) {
                    user = u;
                }
                if (e.getOptions().get("password") instanceof String p) {
                    pass = p;
                }
            }
        } catch (IllegalArgumentException e) {
            // JaasConfig's message quotes the config, passwords included: say where, not what.
            throw new InvalidConfigException(key + " is not a valid JAAS configuration (its value is not shown: it "
                    + "holds passwords)");
        }
        if (user == null || pass == null) {
            return new InterShellSecurity(tls, protocols, verify, null, null, null,
                    hint + ": it has no username or no password option");
        }
        if (mechanism.startsWith("SCRAM-")) {
            ScramSaslClientProvider.initialize();
        }
        return new InterShellSecurity(tls, protocols, verify, mechanism, user, pass, null);
    }

    /** The mechanism the shells log in with; null when none is named and neither PLAIN nor SCRAM is enabled. */
    private static String mechanism(Function<String, String> setting) {
        String enabled = setting.apply("sasl.enabled.mechanisms");
        List<String> on = SaslAuthentication.enabledMechanisms(setting);
        String chosen = setting.apply("sasl.mechanism.inter.broker.protocol");
        if (chosen == null || chosen.isBlank()) {
            return on.contains("PLAIN") ? "PLAIN"
                    : on.stream().filter(m -> m.startsWith("SCRAM-")).findFirst().orElse(null);
        }
        chosen = chosen.trim().toUpperCase(Locale.ROOT);
        if (!List.of("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512").contains(chosen)) {
            throw new InvalidConfigException("sasl.mechanism.inter.broker.protocol=" + chosen + " is not supported: "
                    + "the shells log in to each other with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512");
        }
        if (!on.contains(chosen)) {
            throw new InvalidConfigException("sasl.mechanism.inter.broker.protocol=" + chosen + " is not in "
                    + "sasl.enabled.mechanisms=" + (enabled == null ? "PLAIN (the default)" : enabled));
        }
        return chosen;
    }

    private static String loginModule(String mechanism) {
        return mechanism.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
    }

    /**
     * Why this shell cannot log in to other shells (their transaction markers will fail), or empty when it can or the
     * listener needs no login.
     */
    public java.util.Optional<String> problem() {
        return java.util.Optional.ofNullable(problem);
    }

    /** Connects to {@code host:port}, with the TLS handshake done when the listener uses TLS. */
    Socket connect(String host, int port, int timeoutMs) throws IOException {
        if (problem != null) {
            throw new IOException(problem);
        }
        Socket s = new Socket();
        try {
            s.connect(new InetSocketAddress(host, port), timeoutMs);
            s.setSoTimeout(timeoutMs);
            s.setTcpNoDelay(true);
            if (tls == null) {
                return s;
            }
            SSLSocket ssl = (SSLSocket) tls.createSocket(s, host, port, true);
            SSLParameters parameters = ssl.getSSLParameters();
            parameters.setProtocols(protocols);
            if (verifyHostName) {
                parameters.setEndpointIdentificationAlgorithm("HTTPS");
            }
            ssl.setSSLParameters(parameters);
            ssl.startHandshake();
            return ssl;
        } catch (IOException | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    /** Logs in on {@code connection} when the listener uses SASL: SaslHandshake, then SaslAuthenticate rounds. */
    void authenticate(BlockingKafkaConnection connection, String host) throws IOException {
        if (mechanism == null) {
            return;
        }
        SaslHandshakeResponse handshake = (SaslHandshakeResponse) connection.call(ApiKeys.SASL_HANDSHAKE, (short) 1,
                new SaslHandshakeRequest.Builder(new SaslHandshakeRequestData().setMechanism(mechanism)).build((short) 1));
        if (handshake.error() != Errors.NONE) {
            throw new IOException("SASL " + mechanism + " refused by " + host + ": " + handshake.error()
                    + " (it enables " + handshake.data().mechanisms() + ")");
        }
        SaslClient client = Sasl.createSaslClient(new String[]{mechanism}, null, "kafka", host, Map.of(),
                callbacks -> {
                    for (Callback c : callbacks) {
                        if (c instanceof NameCallback n) {
                            n.setName(username);
                        } else if (c instanceof PasswordCallback p) {
                            p.setPassword(password.toCharArray());
                        } else {
                            throw new UnsupportedCallbackException(c);
                        }
                    }
                });
        if (client == null) {
            throw new IOException("no SASL client for " + mechanism + " in this JVM");
        }
        try {
            byte[] token = client.hasInitialResponse() ? client.evaluateChallenge(new byte[0]) : new byte[0];
            while (true) {
                SaslAuthenticateResponse response = (SaslAuthenticateResponse) connection.call(
                        ApiKeys.SASL_AUTHENTICATE, (short) 2, new SaslAuthenticateRequest.Builder(
                                new SaslAuthenticateRequestData().setAuthBytes(token)).build((short) 2));
                if (response.error() != Errors.NONE) {
                    throw new IOException("SASL " + mechanism + " login as '" + username + "' refused by " + host + ": "
                            + response.error() + (response.errorMessage() == null ? "" : " (" + response.errorMessage()
                            + ")"));
                }
                if (client.isComplete()) {
                    return;
                }
                token = client.evaluateChallenge(response.saslAuthBytes());
                if (client.isComplete()) {
                    return; // SCRAM: the server's final message, checked
                }
            }
        } catch (SaslException e) {
            throw new IOException("SASL " + mechanism + " login to " + host + " failed: " + e.getMessage(), e);
        } finally {
            client.dispose();
        }
    }
}
