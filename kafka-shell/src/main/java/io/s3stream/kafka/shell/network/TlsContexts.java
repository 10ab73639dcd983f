package io.s3stream.kafka.shell.network;

import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.s3stream.InvalidConfigException;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/**
 * The server side of TLS for an {@code SSL://} listener, from Kafka's own {@code ssl.*} keys, so that an operator's
 * broker settings carry over: {@code ssl.keystore.type} (PKCS12, JKS or PEM), {@code ssl.keystore.location},
 * {@code ssl.keystore.password}, {@code ssl.key.password}; {@code ssl.truststore.type}, {@code .location},
 * {@code .password} for client certificates; {@code ssl.client.auth} ({@code none}, {@code requested},
 * {@code required}); {@code ssl.enabled.protocols} (default TLSv1.3,TLSv1.2) and {@code ssl.cipher.suites}.
 *
 * <p>A PEM key store is one file holding the private key (PKCS#8, encrypted with {@code ssl.key.password} or not) and
 * the certificate chain; a PEM trust store, one or more certificates. Everything is read at start: a missing file, a
 * wrong password or an unreadable key stops the shell with one line naming the setting (never the password).
 * {@link ReloadingTls} builds a new context when the files change.
 *
 * <p>The TLS implementation is {@code s3stream.kafka.ssl.engine}: {@code jdk} (the JDK's {@code SSLEngine}, the
 * default) or {@code openssl} (BoringSSL through netty-tcnative, whose native library ships for Linux, macOS and Windows
 * on x86-64 and Linux and macOS on ARM64). Both read the same stores and keys. Design note: the JDK's is the default
 * because OpenSSL was not measurably faster here: 0.90× and 1.02× the JDK engine's median produce throughput over
 * TLS 1.3 in two side-by-side runs (benchmarks/README.md, "TLS engines"); OpenSSL stays an option for machines where
 * it measures better.
 */
public final class TlsContexts {
    /** The setting that chooses the TLS implementation. */
    public static final String ENGINE = "s3stream.kafka.ssl.engine";

    private TlsContexts() {
    }

    /**
     * The implementation {@code engine} (the value of {@link #ENGINE}) names: the JDK's when null or blank.
     *
     * @throws InvalidConfigException for an unknown name, or {@code openssl} where netty-tcnative cannot load
     */
    public static SslProvider provider(String engine) {
        String name = engine == null || engine.isBlank() ? "jdk" : engine.trim().toLowerCase(Locale.ROOT);
        return switch (name) {
            case "jdk" -> SslProvider.JDK;
            case "openssl" -> {
                if (!OpenSsl.isAvailable()) {
                    throw new InvalidConfigException(ENGINE + "=openssl, but netty-tcnative's BoringSSL cannot be "
                            + "loaded here (" + rootMessage(OpenSsl.unavailabilityCause()) + "); use " + ENGINE
                            + "=jdk");
                }
                yield SslProvider.OPENSSL;
            }
            default -> throw new InvalidConfigException(ENGINE + " must be jdk or openssl, was '" + engine + "'");
        };
    }

    /** The server context for {@code settings} (a view of the shell's configuration: key → value or null). */
    public static SslContext server(Function<String, String> settings) {
        String type = upper(settings.apply("ssl.keystore.type"), "PKCS12");
        String location = required(settings, "ssl.keystore.location");
        String storePassword = settings.apply("ssl.keystore.password");
        String keyPassword = settings.apply("ssl.key.password");
        SslContextBuilder builder;
        try {
            if (type.equals("PEM")) {
                File pem = readable("ssl.keystore.location", location).toFile();
                builder = SslContextBuilder.forServer(pem, pem, keyPassword);
            } else {
                builder = SslContextBuilder.forServer(keyManagers(type, location, storePassword, keyPassword));
            }
            trust(builder, settings);
            builder.clientAuth(switch (upper(settings.apply("ssl.client.auth"), "NONE")) {
                case "NONE" -> ClientAuth.NONE;
                case "REQUESTED" -> ClientAuth.OPTIONAL;
                case "REQUIRED" -> ClientAuth.REQUIRE;
                default -> throw new InvalidConfigException("ssl.client.auth must be none, requested or required, was '"
                        + settings.apply("ssl.client.auth") + "'");
            });
            builder.protocols(protocols(settings));
            String ciphers = settings.apply("ssl.cipher.suites");
            if (ciphers != null && !ciphers.isBlank()) {
                builder.ciphers(list(ciphers));
            }
            return builder.sslProvider(provider(settings.apply(ENGINE))).build();
        } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
            // The message of a KeyStore or PEM failure names the problem (wrong password, bad format), not a secret.
            throw new InvalidConfigException("TLS for the SSL listener cannot be set up from ssl.keystore.location="
                    + location + " (ssl.keystore.type=" + type + "): " + rootMessage(e), e);
        }
    }

    /**
     * The client side of TLS with which a shell reaches another shell's listener (transaction markers), from that
     * listener's own settings, as a Kafka broker's inter-broker client: it trusts {@code ssl.truststore.*} (the JDK's
     * default trust when unset) and presents {@code ssl.keystore.*}, if set, to a listener that asks for a client
     * certificate. The JDK's TLS: the few marker connections are long-lived and carry little.
     *
     * @throws InvalidConfigException naming the setting at fault
     */
    public static SSLSocketFactory client(Function<String, String> settings) {
        String location = settings.apply("ssl.keystore.location");
        String type = upper(settings.apply("ssl.keystore.type"), "PKCS12");
        SslContextBuilder builder = SslContextBuilder.forClient();
        try {
            if (location != null && !location.isBlank()) {
                if (type.equals("PEM")) {
                    File pem = readable("ssl.keystore.location", location).toFile();
                    builder.keyManager(pem, pem, settings.apply("ssl.key.password"));
                } else {
                    builder.keyManager(keyManagers(type, location, settings.apply("ssl.keystore.password"),
                            settings.apply("ssl.key.password")));
                }
            }
            trust(builder, settings);
            return ((JdkSslContext) builder.sslProvider(SslProvider.JDK).build()).context().getSocketFactory();
        } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
            throw new InvalidConfigException("TLS to other shells cannot be set up from ssl.truststore.location="
                    + settings.apply("ssl.truststore.location") + " and ssl.keystore.location=" + location + ": "
                    + rootMessage(e), e);
        }
    }

    /** The protocols of {@code ssl.enabled.protocols} (default TLSv1.3,TLSv1.2). */
    public static String[] protocols(Function<String, String> settings) {
        String protocols = settings.apply("ssl.enabled.protocols");
        return list(protocols == null ? "TLSv1.3,TLSv1.2" : protocols).toArray(String[]::new);
    }

    private static KeyManagerFactory keyManagers(String type, String location, String storePassword,
                                                 String keyPassword) throws IOException, GeneralSecurityException {
        KeyStore ks = load("ssl.keystore", type, location, storePassword);
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        char[] keyPw = keyPassword != null ? keyPassword.toCharArray()
                : storePassword != null ? storePassword.toCharArray() : new char[0];
        kmf.init(ks, keyPw);
        return kmf;
    }

    /** The certificates of {@code ssl.truststore.*}, when set. */
    private static void trust(SslContextBuilder builder, Function<String, String> settings)
            throws IOException, GeneralSecurityException {
        String trustLocation = settings.apply("ssl.truststore.location");
        if (trustLocation != null && !trustLocation.isBlank()) {
            String trustType = upper(settings.apply("ssl.truststore.type"), "PKCS12");
            if (trustType.equals("PEM")) {
                builder.trustManager(readable("ssl.truststore.location", trustLocation).toFile());
            } else {
                TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                tmf.init(load("ssl.truststore", trustType, trustLocation, settings.apply("ssl.truststore.password")));
                builder.trustManager(tmf);
            }
        }
    }

    private static KeyStore load(String setting, String type, String location, String password)
            throws IOException, GeneralSecurityException {
        if (!type.equals("PKCS12") && !type.equals("JKS")) {
            throw new InvalidConfigException(setting + ".type must be PKCS12, JKS or PEM, was '" + type + "'");
        }
        KeyStore ks = KeyStore.getInstance(type);
        try (InputStream in = Files.newInputStream(readable(setting + ".location", location))) {
            ks.load(in, password == null ? null : password.toCharArray());
        } catch (IOException e) {
            throw new InvalidConfigException(setting + ".location=" + location + " cannot be read as " + type + ": "
                    + rootMessage(e) + " (a wrong " + setting + ".password reads the same way)", e);
        }
        return ks;
    }

    private static Path readable(String setting, String location) {
        Path p = Path.of(location);
        if (!Files.isReadable(p)) {
            throw new InvalidConfigException(setting + "=" + location + ": no such readable file");
        }
        return p;
    }

    private static String required(Function<String, String> settings, String key) {
        String v = settings.apply(key);
        if (v == null || v.isBlank()) {
            throw new InvalidConfigException("an SSL listener needs " + key + " (and ssl.keystore.password unless the "
                    + "store has none)");
        }
        return v;
    }

    private static String upper(String v, String fallback) {
        return v == null || v.isBlank() ? fallback : v.trim().toUpperCase(Locale.ROOT);
    }

    private static List<String> list(String csv) {
        return Arrays.stream(csv.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t.getMessage() != null ? t.getMessage() : t.toString();
    }
}
