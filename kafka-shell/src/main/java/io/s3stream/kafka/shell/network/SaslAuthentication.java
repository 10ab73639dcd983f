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
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.internals.BrokerSecurityConfigs;
import org.apache.kafka.common.security.JaasContext;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.authenticator.SaslInternalConfigs;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.internals.OAuthBearerSaslServer;
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
 *
 * <p>OAUTHBEARER (KIP-255, KIP-768) takes tokens from an identity provider: Kafka's {@link OAuthBearerSaslServer}
 * with its JWKS-validating {@link OAuthBearerValidatorCallbackHandler}, configured with Kafka's keys
 * ({@code sasl.oauthbearer.jwks.endpoint.url}, expected audience and issuer, claim names, clock skew, refresh), per
 * listener as {@code listener.name.<listener>.oauthbearer.<key>} or broker-wide. The principal is the token's
 * subject; with {@code connections.max.reauth.ms} a session also ends when its token expires, as in Kafka. Unsecured
 * (unsigned) tokens are never accepted: without a JWKS endpoint the listener does not start.
 */
public final class SaslAuthentication implements AutoCloseable {
    public static final String PLAIN = "PLAIN";
    public static final String OAUTHBEARER = "OAUTHBEARER";
    /** The settings of Kafka's token validation this class passes on. */
    private static final List<String> OAUTH_KEYS = List.of(SaslConfigs.SASL_OAUTHBEARER_JWKS_ENDPOINT_URL,
            SaslConfigs.SASL_OAUTHBEARER_JWKS_ENDPOINT_REFRESH_MS,
            SaslConfigs.SASL_OAUTHBEARER_JWKS_ENDPOINT_RETRY_BACKOFF_MS,
            SaslConfigs.SASL_OAUTHBEARER_JWKS_ENDPOINT_RETRY_BACKOFF_MAX_MS,
            SaslConfigs.SASL_OAUTHBEARER_EXPECTED_AUDIENCE, SaslConfigs.SASL_OAUTHBEARER_EXPECTED_ISSUER,
            SaslConfigs.SASL_OAUTHBEARER_SCOPE_CLAIM_NAME, SaslConfigs.SASL_OAUTHBEARER_SUB_CLAIM_NAME,
            SaslConfigs.SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS);
    /**
     * Kafka's validator logs each refused token at WARNING with a stack trace and, for a bad signature, the whole
     * token (a credential, for a token meant for another service). Its records are replaced by one line without
     * either, at most one per 10 s. Held here: java.util.logging keeps loggers weakly.
     */
    private static final java.util.logging.Logger VALIDATOR_LOG =
            java.util.logging.Logger.getLogger(OAuthBearerValidatorCallbackHandler.class.getName());
    private static final RateLimitedLog TOKEN_REFUSED = new RateLimitedLog(
            System.getLogger(SaslAuthentication.class.getName()), System.Logger.Level.WARNING,
            java.util.concurrent.TimeUnit.SECONDS.toNanos(10));
    /** Three base64url parts joined by dots: a JWT (or JWS) in a message. */
    private static final java.util.regex.Pattern TOKEN =
            java.util.regex.Pattern.compile("[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]*");

    static {
        VALIDATOR_LOG.setFilter(record -> {
            if (record.getLevel().intValue() < java.util.logging.Level.WARNING.intValue()) {
                return true;
            }
            String message = record.getMessage() == null ? "" : record.getMessage();
            TOKEN_REFUSED.log(() -> "OAUTHBEARER token refused: " + withoutTokens(message));
            return false;
        });
    }

    /** {@code message} with every token-shaped string replaced. */
    static String withoutTokens(String message) {
        return TOKEN.matcher(message).replaceAll("<token>");
    }

    private final List<String> mechanisms;
    private final Map<String, byte[]> passwords;
    private final ScramCredentials scram;
    /** connections.max.reauth.ms per mechanism; absent or 0: sessions do not expire. */
    private final Map<String, Long> reauthMs;
    /** Validates OAUTHBEARER tokens against the JWKS endpoint's keys; null when the mechanism is off. */
    private final AuthenticateCallbackHandler oauthValidator;

    private SaslAuthentication(List<String> mechanisms, Map<String, byte[]> passwords, ScramCredentials scram,
                               Map<String, Long> reauthMs, AuthenticateCallbackHandler oauthValidator) {
        this.mechanisms = mechanisms;
        this.passwords = passwords;
        this.scram = scram;
        this.reauthMs = reauthMs;
        this.oauthValidator = oauthValidator;
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
     * The mechanisms of {@code sasl.enabled.mechanisms} (default PLAIN), as {@code setting} reads it.
     *
     * @throws InvalidConfigException for a mechanism other than PLAIN, SCRAM and OAUTHBEARER, or none
     */
    static List<String> enabledMechanisms(Function<String, String> setting) {
        String enabled = setting.apply("sasl.enabled.mechanisms");
        List<String> mechanisms = new java.util.ArrayList<>();
        for (String m : (enabled == null ? PLAIN : enabled).split(",")) {
            String name = m.trim();
            if (name.isEmpty()) {
                continue;
            }
            if (!name.equals(PLAIN) && !name.equals(OAUTHBEARER) && !ScramMechanism.isScram(name)) {
                throw new InvalidConfigException("sasl.enabled.mechanisms: " + name + " is not supported; "
                        + "kafka-shell's SASL listeners offer PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER");
            }
            mechanisms.add(name);
        }
        if (mechanisms.isEmpty()) {
            throw new InvalidConfigException("sasl.enabled.mechanisms names no mechanism");
        }
        return mechanisms;
    }

    /**
     * The authentication of a listener named {@code listenerName}, from Kafka's settings as {@code setting} reads them.
     *
     * @param scram the SCRAM credentials (SCRAM-SHA-256 and SCRAM-SHA-512 users)
     * @throws InvalidConfigException when a mechanism other than PLAIN, SCRAM and OAUTHBEARER is enabled, PLAIN is
     *                                and no JAAS config names a user, or OAUTHBEARER is without a usable JWKS endpoint
     */
    public static SaslAuthentication fromConfig(String listenerName, Function<String, String> setting,
                                                ScramCredentials scram) {
        List<String> mechanisms = enabledMechanisms(setting);
        Map<String, Long> reauth = reauthMs(listenerName, mechanisms, setting);
        Map<String, byte[]> passwords = mechanisms.contains(PLAIN) ? plainPasswords(listenerName, setting) : Map.of();
        AuthenticateCallbackHandler oauth = mechanisms.contains(OAUTHBEARER) ? oauthValidator(listenerName, setting)
                : null;
        return new SaslAuthentication(List.copyOf(mechanisms), passwords, scram, reauth, oauth);
    }

    /** The PLAIN users of the listener's JAAS config. */
    private static Map<String, byte[]> plainPasswords(String listenerName, Function<String, String> setting) {
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
        return Map.copyOf(passwords);
    }

    /**
     * Kafka's JWKS-validating callback handler, configured from the listener's OAUTHBEARER settings. Kafka 4 lets a
     * JVM fetch keys only from URLs listed in the system property {@code org.apache.kafka.sasl.oauthbearer.allowed.urls};
     * when it is unset, it is set to the configured endpoint (the shell reads its SASL settings only from its
     * properties at start, so no client can make it fetch another URL). A JWKS endpoint that cannot be read or whose
     * answer holds no key fails the start, naming the setting.
     */
    private static AuthenticateCallbackHandler oauthValidator(String listenerName, Function<String, String> setting) {
        String prefix = "listener.name." + listenerName.toLowerCase(java.util.Locale.ROOT) + ".oauthbearer.";
        String handler = setting.apply(prefix + "sasl.server.callback.handler.class");
        if (handler == null) {
            handler = setting.apply("sasl.server.callback.handler.class");
        }
        if (handler != null && !handler.trim().equals(OAuthBearerValidatorCallbackHandler.class.getName())) {
            throw new InvalidConfigException("sasl.server.callback.handler.class: " + handler.trim() + " is not "
                    + "supported; OAUTHBEARER tokens are validated by " + OAuthBearerValidatorCallbackHandler.class
                    .getName() + " against sasl.oauthbearer.jwks.endpoint.url (no plug-ins are loaded)");
        }
        Map<String, Object> raw = new HashMap<>();
        for (String key : OAUTH_KEYS) {
            String v = setting.apply(prefix + key);
            if (v == null) {
                v = setting.apply(key);
            }
            if (v != null) {
                raw.put(key, v.trim());
            }
        }
        Object jwks = raw.get(SaslConfigs.SASL_OAUTHBEARER_JWKS_ENDPOINT_URL);
        if (jwks == null || jwks.toString().isEmpty()) {
            throw new InvalidConfigException("listener " + listenerName + " enables OAUTHBEARER but "
                    + SaslConfigs.SASL_OAUTHBEARER_JWKS_ENDPOINT_URL + " is not set: kafka-shell validates tokens "
                    + "against the identity provider's keys and never accepts unsigned tokens");
        }
        String allowed = BrokerSecurityConfigs.ALLOWED_SASL_OAUTHBEARER_URLS_CONFIG;
        if (System.getProperty(allowed) == null) {
            System.setProperty(allowed, jwks.toString());
        }
        ConfigDef def = new ConfigDef();
        SaslConfigs.addClientSaslSupport(def);
        OAuthBearerValidatorCallbackHandler validator = new OAuthBearerValidatorCallbackHandler();
        try {
            validator.configure(def.parse(raw), OAUTHBEARER, List.of(new AppConfigurationEntry(
                    OAuthBearerLoginModule.class.getName(), AppConfigurationEntry.LoginModuleControlFlag.REQUIRED,
                    Map.of())));
        } catch (ConfigException | IllegalArgumentException | IllegalStateException e) {
            validator.close();
            throw new InvalidConfigException("listener " + listenerName + ": OAUTHBEARER validation cannot start: "
                    + e.getMessage());
        }
        return validator;
    }

    /** Stops the OAUTHBEARER key refresh, if any. */
    @Override
    public void close() {
        if (oauthValidator != null) {
            oauthValidator.close();
        }
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
            } else if (mechanism.equals(OAUTHBEARER)) {
                server = new OAuthBearerSaslServer(oauthValidator);
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
                    javax.security.sasl.SaslServer completed = server;
                    server = null;
                    if (principal != null && !principal.equals(authenticated)) {
                        failed = true; // as Kafka: re-authentication may not change who the connection is
                        return new SaslAuthenticateResponse(out.setErrorCode(Errors.SASL_AUTHENTICATION_FAILED.code())
                                .setErrorMessage("Cannot change principals during re-authentication from "
                                        + principal + ": " + authenticated));
                    }
                    principal = authenticated;
                    long lifetimeMs = reauthMs.getOrDefault(mechanism, 0L);
                    if (lifetimeMs > 0 && completed.getNegotiatedProperty(
                            SaslInternalConfigs.CREDENTIAL_LIFETIME_MS_SASL_NEGOTIATED_PROPERTY_KEY) instanceof Long end) {
                        // A token's session ends when the token does (Kafka: only with re-authentication on).
                        lifetimeMs = Math.max(1, Math.min(lifetimeMs, end - System.currentTimeMillis()));
                    }
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
