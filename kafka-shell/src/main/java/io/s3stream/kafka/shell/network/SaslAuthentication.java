package io.s3stream.kafka.shell.network;

import io.s3stream.InvalidConfigException;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.message.SaslAuthenticateResponseData;
import org.apache.kafka.common.message.SaslHandshakeResponseData;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.SaslAuthenticateRequest;
import org.apache.kafka.common.requests.SaslAuthenticateResponse;
import org.apache.kafka.common.requests.SaslHandshakeRequest;
import org.apache.kafka.common.requests.SaslHandshakeResponse;
import org.apache.kafka.common.security.JaasContext;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.plain.PlainAuthenticateCallback;
import org.apache.kafka.common.security.plain.internals.PlainSaslServer;
import org.apache.kafka.common.security.scram.ScramCredentialCallback;
import org.apache.kafka.common.security.scram.internals.ScramMechanism;
import org.apache.kafka.common.security.scram.internals.ScramSaslServer;

import javax.security.auth.callback.Callback;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * SASL authentication of a SASL_PLAINTEXT or SASL_SSL listener, with the PLAIN mechanism (RFC 4616) as Kafka
 * configures it: the users and their passwords are the {@code user_<name>="<password>"} options of the listener's JAAS
 * config ({@code listener.name.<listener>.plain.sasl.jaas.config}, or {@code sasl.jaas.config}). The exchange is
 * Kafka's (KIP-152): SaslHandshake v1 names the mechanism, SaslAuthenticate carries the tokens; until it succeeds a
 * connection may send only ApiVersions and those two, anything else closes it. The authenticated user is the
 * connection's principal ({@code User:<name>}), which quotas use.
 *
 * <p>Kafka's own {@link PlainSaslServer} parses the tokens; this class supplies the password check (a constant-time
 * comparison). Passwords are kept as UTF-8 bytes in memory and never logged or answered.
 */
public final class SaslAuthentication {
    public static final String PLAIN = "PLAIN";
    private final List<String> mechanisms;
    private final Map<String, byte[]> passwords;
    private final ScramCredentials scram;
    /** connections.max.reauth.ms per mechanism; absent or 0: sessions do not expire. */
    private final Map<String, Long> reauthMs;

    private SaslAuthentication(List<String> mechanisms, Map<String, byte[]> passwords, ScramCredentials scram,
                               Map<String, Long> reauthMs) {
        this.mechanisms = mechanisms;
        this.passwords = passwords;
        this.scram = scram;
        this.reauthMs = reauthMs;
    }

    /**
     * {@code connections.max.reauth.ms} of each mechanism, as Kafka reads it:
     * {@code listener.name.<listener>.<mechanism>.connections.max.reauth.ms}, then the broker-wide key; 0 (the
     * default) never expires a session.
     */
    private static Map<String, Long> reauthMs(String listenerName, List<String> mechanisms,
                                              Function<String, String> setting) {
        Map<String, Long> out = new HashMap<>();
        for (String m : mechanisms) {
            String key = "listener.name." + listenerName.toLowerCase(java.util.Locale.ROOT) + "."
                    + m.toLowerCase(java.util.Locale.ROOT) + ".connections.max.reauth.ms";
            String v = setting.apply(key);
            if (v == null) {
                key = "connections.max.reauth.ms";
                v = setting.apply(key);
            }
            if (v != null) {
                long ms;
                try {
                    ms = Long.parseLong(v.trim());
                } catch (NumberFormatException e) {
                    ms = -1;
                }
                if (ms < 0) {
                    throw new InvalidConfigException(key + " must be a number of milliseconds >= 0, was '" + v + "'");
                }
                out.put(m, ms);
            }
        }
        return Map.copyOf(out);
    }

    /**
     * The authentication of a listener named {@code listenerName}, from Kafka's settings as {@code setting} reads them.
     *
     * @param scram the SCRAM credentials (SCRAM-SHA-256 and SCRAM-SHA-512 users)
     * @throws InvalidConfigException when a mechanism other than PLAIN and SCRAM is enabled, or PLAIN is and no JAAS
     *                                config names a user
     */
    public static SaslAuthentication fromConfig(String listenerName, Function<String, String> setting,
                                                ScramCredentials scram) {
        String enabled = setting.apply("sasl.enabled.mechanisms");
        List<String> mechanisms = new java.util.ArrayList<>();
        for (String m : (enabled == null ? PLAIN : enabled).split(",")) {
            String name = m.trim();
            if (name.isEmpty()) {
                continue;
            }
            if (!name.equals(PLAIN) && !ScramMechanism.isScram(name)) {
                throw new InvalidConfigException("sasl.enabled.mechanisms: " + name + " is not supported; "
                        + "kafka-shell's SASL listeners offer PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (issue 19)");
            }
            mechanisms.add(name);
        }
        if (mechanisms.isEmpty()) {
            throw new InvalidConfigException("sasl.enabled.mechanisms names no mechanism");
        }
        Map<String, Long> reauth = reauthMs(listenerName, mechanisms, setting);
        if (!mechanisms.contains(PLAIN)) {
            return new SaslAuthentication(List.copyOf(mechanisms), Map.of(), scram, reauth);
        }
        String key = "listener.name." + listenerName.toLowerCase(java.util.Locale.ROOT) + ".plain.sasl.jaas.config";
        String jaas = setting.apply(key);
        if (jaas == null) {
            key = "sasl.jaas.config";
            jaas = setting.apply(key);
        }
        if (jaas == null) {
            throw new InvalidConfigException("listener " + listenerName + " uses SASL but neither listener.name."
                    + listenerName.toLowerCase(java.util.Locale.ROOT) + ".plain.sasl.jaas.config nor sasl.jaas.config "
                    + "is set (org.apache.kafka.common.security.plain.PlainLoginModule required user_<name>=\"<password>\";)");
        }
        Map<String, byte[]> passwords = new HashMap<>();
        try {
            JaasContext context = JaasContext.loadServerContext(ListenerName.normalised(listenerName), PLAIN,
                    Map.of("plain.sasl.jaas.config", new Password(jaas)));
            for (AppConfigurationEntry e : context.configurationEntries()) {
                e.getOptions().forEach((k, v) -> {
                    if (k.startsWith("user_") && v instanceof String password) {
                        passwords.put(k.substring("user_".length()), password.getBytes(StandardCharsets.UTF_8));
                    }
                });
            }
        } catch (IllegalArgumentException e) {
            // JaasConfig's message quotes the config, passwords included: say where, not what.
            throw new InvalidConfigException(key + " is not a valid JAAS configuration (its value is not shown: it holds "
                    + "passwords)");
        }
        if (passwords.isEmpty()) {
            throw new InvalidConfigException(key + " defines no user (options user_<name>=\"<password>\")");
        }
        return new SaslAuthentication(List.copyOf(mechanisms), Map.copyOf(passwords), scram, reauth);
    }

    /** The users that may authenticate (for logs: names only). */
    public List<String> users() {
        return passwords.keySet().stream().sorted().toList();
    }

    /** One connection's authentication state. Owned by the connection's event loop. */
    Session session() {
        return new Session();
    }

    /**
     * One connection's authentication. With {@code connections.max.reauth.ms} (KIP-368) a session lasts that long:
     * SaslAuthenticate v1+ tells the client so, the client authenticates again on the same connection (the same
     * mechanism and principal; in-flight requests are unaffected), and a connection that sends anything else once its
     * session has expired is closed.
     */
    final class Session {
        /** The exchange under way (the first authentication or a re-authentication), else null. */
        private javax.security.sasl.SaslServer server;
        private KafkaPrincipal principal;
        private String mechanism;
        private long expiresAtNanos;
        private boolean expires;
        private boolean failed;

        boolean authenticated() {
            return principal != null;
        }

        /** Whether the session has expired without being re-authenticated (closes the connection). */
        boolean expired(long nowNanos) {
            return principal != null && expires && nowNanos - expiresAtNanos >= 0;
        }

        /** Whether the connection must be closed once the last response is written (a failed authentication). */
        boolean failed() {
            return failed;
        }

        KafkaPrincipal principal() {
            return principal;
        }

        AbstractResponse handshake(SaslHandshakeRequest request) {
            var out = new SaslHandshakeResponseData().setMechanisms(mechanisms);
            String mechanism = request.data().mechanism();
            if (server != null || (principal != null && !mechanism.equals(this.mechanism))) {
                // A handshake inside an exchange, or a re-authentication with another mechanism (Kafka refuses it).
                failed = true;
                return new SaslHandshakeResponse(out.setErrorCode(Errors.ILLEGAL_SASL_STATE.code()));
            }
            if (!mechanisms.contains(mechanism)) {
                failed = true;
                return new SaslHandshakeResponse(out.setErrorCode(Errors.UNSUPPORTED_SASL_MECHANISM.code()));
            }
            this.mechanism = mechanism;
            if (mechanism.equals(PLAIN)) {
                server = new PlainSaslServer(this::check);
            } else {
                ScramMechanism m = ScramMechanism.forMechanismName(mechanism);
                try {
                    server = new ScramSaslServer(m, Map.of(), callbacks -> {
                        String user = null;
                        for (Callback c : callbacks) {
                            if (c instanceof NameCallback n) {
                                user = n.getDefaultName();
                            } else if (c instanceof ScramCredentialCallback s) {
                                s.scramCredential(user == null ? null : scram.get(m, user));
                            } else {
                                throw new UnsupportedCallbackException(c);
                            }
                        }
                    });
                } catch (java.security.NoSuchAlgorithmException e) {
                    throw new IllegalStateException(mechanism + " needs " + m.hashAlgorithm(), e);
                }
            }
            return new SaslHandshakeResponse(out.setErrorCode(Errors.NONE.code()));
        }

        AbstractResponse authenticate(SaslAuthenticateRequest request) {
            var out = new SaslAuthenticateResponseData().setAuthBytes(new byte[0]);
            if (server == null) {
                failed = true;
                return new SaslAuthenticateResponse(out.setErrorCode(Errors.ILLEGAL_SASL_STATE.code())
                        .setErrorMessage("SaslAuthenticate without a SaslHandshake before it"));
            }
            try {
                byte[] challenge = server.evaluateResponse(request.data().authBytes());
                if (server.isComplete()) {
                    KafkaPrincipal authenticated = new KafkaPrincipal(KafkaPrincipal.USER_TYPE,
                            server.getAuthorizationID());
                    server = null;
                    if (principal != null && !principal.equals(authenticated)) {
                        failed = true; // as Kafka: re-authentication may not change who the connection is
                        return new SaslAuthenticateResponse(out.setErrorCode(Errors.SASL_AUTHENTICATION_FAILED.code())
                                .setErrorMessage("Cannot change principals during re-authentication from "
                                        + principal + ": " + authenticated));
                    }
                    principal = authenticated;
                    long lifetimeMs = reauthMs.getOrDefault(mechanism, 0L);
                    expires = lifetimeMs > 0;
                    if (expires) {
                        expiresAtNanos = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(lifetimeMs);
                        if (request.version() >= 1) {
                            out.setSessionLifetimeMs(lifetimeMs); // the client re-authenticates before then
                        }
                    }
                }
                return new SaslAuthenticateResponse(out.setAuthBytes(challenge).setErrorCode(Errors.NONE.code()));
            } catch (SaslAuthenticationException e) {
                failed = true;
                return new SaslAuthenticateResponse(out.setErrorCode(Errors.SASL_AUTHENTICATION_FAILED.code())
                        .setErrorMessage(e.getMessage()));
            } catch (javax.security.sasl.SaslException e) {
                // Kafka's answer: the cause is not told to an unauthenticated client.
                failed = true;
                return new SaslAuthenticateResponse(out.setErrorCode(Errors.SASL_AUTHENTICATION_FAILED.code())
                        .setErrorMessage("Authentication failed during authentication due to invalid credentials with "
                                + "SASL mechanism " + mechanism));
            }
        }

        private void check(Callback[] callbacks) throws UnsupportedCallbackException {
            String user = null;
            for (Callback c : callbacks) {
                if (c instanceof NameCallback n) {
                    user = n.getDefaultName();
                } else if (c instanceof PlainAuthenticateCallback p) {
                    byte[] expected = user == null ? null : passwords.get(user);
                    ByteBuffer given = StandardCharsets.UTF_8.encode(CharBuffer.wrap(p.password()));
                    byte[] bytes = new byte[given.remaining()];
                    given.get(bytes);
                    p.authenticated(expected != null && MessageDigest.isEqual(expected, bytes));
                    Arrays.fill(bytes, (byte) 0);
                } else {
                    throw new UnsupportedCallbackException(c);
                }
            }
        }
    }
}
