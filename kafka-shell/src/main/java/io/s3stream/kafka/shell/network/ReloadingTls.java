package io.s3stream.kafka.shell.network;

import io.netty.handler.ssl.SslContext;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * A TLS listener's server context that follows its key and trust store files: {@link #check} rebuilds the context
 * when the content of {@code ssl.keystore.location} or {@code ssl.truststore.location} changed (a renewed certificate
 * written in place, or a Kubernetes secret's symbolic link swapped), so new connections get the new certificate and
 * trust without a restart; connections already open keep theirs, as in Kafka. Files that changed but do not make a
 * context (a half-written file, a wrong password) are reported once and the previous context keeps serving; the next
 * change is tried again.
 *
 * <p>Thread-safe: handshakes read the current context; checks are serialized.
 */
public final class ReloadingTls implements Supplier<SslContext> {
    private static final System.Logger LOG = System.getLogger(ReloadingTls.class.getName());
    private final String listener;
    private final Function<String, String> settings;
    private final List<Path> files = new ArrayList<>();
    private volatile SslContext current;
    /** Digests of the files the current context was built from, or of the last content that failed. */
    private byte[] seen;

    /**
     * Builds the first context; a problem stops the start.
     *
     * @throws io.s3stream.InvalidConfigException naming the setting at fault
     */
    public ReloadingTls(String listener, Function<String, String> settings) {
        this.listener = listener;
        this.settings = settings;
        for (String key : List.of("ssl.keystore.location", "ssl.truststore.location")) {
            String location = settings.apply(key);
            if (location != null && !location.isBlank()) {
                files.add(Path.of(location));
            }
        }
        this.seen = digest();
        this.current = TlsContexts.server(settings);
    }

    @Override
    public SslContext get() {
        return current;
    }

    /** Rebuilds the context if a store file's content changed; whether a new context now serves. */
    public synchronized boolean check() {
        byte[] now = digest();
        if (now == null || Arrays.equals(now, seen)) {
            return false; // unchanged, or a file missing for a moment (a swap in progress): look again next time
        }
        seen = now;
        try {
            current = TlsContexts.server(settings);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, () -> "listener " + listener + ": the TLS key or trust store changed "
                    + "but cannot be used (" + e.getMessage() + "); still serving the previous certificate");
            return false;
        }
        LOG.log(System.Logger.Level.INFO, () -> "listener " + listener + ": TLS key and trust stores reloaded from "
                + files + "; new connections use them");
        return true;
    }

    /** One SHA-256 over every store file, or null when one cannot be read now. */
    private byte[] digest() {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (Path f : files) {
                md.update(Files.readAllBytes(f));
                md.update((byte) 0);
            }
            return md.digest();
        } catch (IOException e) {
            return null;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
