package io.s3stream.kafka.shell.network;

import io.s3stream.KeyValues;
import org.apache.kafka.common.security.scram.ScramCredential;
import org.apache.kafka.common.security.scram.internals.ScramFormatter;
import org.apache.kafka.common.security.scram.internals.ScramMechanism;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * SCRAM credentials of SASL users, as Kafka keeps them: per user and mechanism, the salt, the iteration count, and the
 * stored and server keys derived from the salted password (RFC 5802) — never the password, which does not even reach
 * the broker (AlterUserScramCredentials carries the salted password, from which the keys are derived here and which
 * is then dropped). Kept in the shared key-value space ({@code kafka/scram/<mechanism>/<user>}), so every shell
 * authenticates the same users; an in-memory snapshot, reread periodically and after every change, serves the
 * handshakes.
 */
public final class ScramCredentials {
    private static final String PREFIX = "kafka/scram/";
    private volatile KeyValues kv;
    private volatile Map<String, ScramCredential> byKey = Map.of();

    /** Credentials with no store yet: none until {@link #attach} (the listener is bound before storage opens). */
    public ScramCredentials() {
    }

    public ScramCredentials(KeyValues kv) {
        attach(kv);
    }

    /** Gives the store the credentials live in, and reads them. */
    public void attach(KeyValues store) {
        this.kv = store;
        refresh();
    }

    private static String key(ScramMechanism mechanism, String user) {
        return PREFIX + mechanism.mechanismName() + "/" + URLEncoder.encode(user, StandardCharsets.UTF_8);
    }

    /** Rereads the credentials (at start, and periodically: another shell may have changed them). */
    public void refresh() {
        if (kv == null) {
            return;
        }
        Map<String, ScramCredential> out = new HashMap<>();
        kv.list(PREFIX).join().forEach((k, v) -> out.put(k, decode(v)));
        byKey = Map.copyOf(out);
    }

    /** The credential of {@code user} for {@code mechanism}, or null. */
    public ScramCredential get(ScramMechanism mechanism, String user) {
        return byKey.get(key(mechanism, user));
    }

    /** Every user with credentials: user → mechanism → iterations (what DescribeUserScramCredentials shows). */
    public Map<String, Map<ScramMechanism, Integer>> describe() {
        Map<String, Map<ScramMechanism, Integer>> out = new java.util.TreeMap<>();
        byKey.forEach((k, c) -> {
            String[] parts = k.substring(PREFIX.length()).split("/", 2);
            out.computeIfAbsent(URLDecoder.decode(parts[1], StandardCharsets.UTF_8), u -> new java.util.TreeMap<>())
                    .put(ScramMechanism.forMechanismName(parts[0]), c.iterations());
        });
        return out;
    }

    /** Stores the credential derived from a salted password. */
    public CompletableFuture<Void> upsert(ScramMechanism mechanism, String user, byte[] salt, byte[] saltedPassword,
                                          int iterations) {
        ScramCredential c;
        try {
            ScramFormatter f = new ScramFormatter(mechanism);
            c = new ScramCredential(salt, f.storedKey(f.clientKey(saltedPassword)), f.serverKey(saltedPassword),
                    iterations);
        } catch (GeneralSecurityException e) {
            return CompletableFuture.failedFuture(e);
        }
        return kv.put(key(mechanism, user), encode(c)).thenRun(this::refresh);
    }

    public CompletableFuture<Void> delete(ScramMechanism mechanism, String user) {
        return kv.delete(key(mechanism, user)).thenRun(this::refresh);
    }

    private static byte[] encode(ScramCredential c) {
        Base64.Encoder b = Base64.getEncoder();
        return (c.iterations() + ":" + b.encodeToString(c.salt()) + ":" + b.encodeToString(c.storedKey()) + ":"
                + b.encodeToString(c.serverKey())).getBytes(StandardCharsets.US_ASCII);
    }

    private static ScramCredential decode(byte[] v) {
        String[] p = new String(v, StandardCharsets.US_ASCII).split(":");
        Base64.Decoder b = Base64.getDecoder();
        return new ScramCredential(b.decode(p[1]), b.decode(p[2]), b.decode(p[3]), Integer.parseInt(p[0]));
    }
}
