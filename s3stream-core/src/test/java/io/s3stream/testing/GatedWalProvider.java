package io.s3stream.testing;

import io.netty.buffer.ByteBuf;
import io.s3stream.internal.wal.InMemoryWal;
import io.s3stream.spi.UriSettings;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.spi.WriteAheadLogProvider;

import java.net.URI;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@code gated://name?capacity=64MiB}: the in-memory WAL {@code mem://name} whose appends are acknowledged only while
 * its gate is open: {@link #hold} closes it, {@link #release} opens it and acknowledges what waited, so tests can keep
 * appends in flight. Registered only on the test class path.
 */
public final class GatedWalProvider implements WriteAheadLogProvider {
    private static final Map<String, CompletableFuture<Void>> GATES = new ConcurrentHashMap<>();

    /** Appends to {@code gated://name} from now on stay unacknowledged until {@link #release}. */
    public static void hold(String name) {
        GATES.put(name, new CompletableFuture<>());
    }

    /** Acknowledges the held appends of {@code gated://name}; later ones complete as they are written. */
    public static void release(String name) {
        CompletableFuture<Void> gate = GATES.remove(name);
        if (gate != null) {
            gate.complete(null);
        }
    }

    @Override
    public String scheme() {
        return "gated";
    }

    @Override
    public Optional<URI> defaultUri(Path dataDir) {
        return Optional.empty();
    }

    @Override
    public WriteAheadLog open(URI uri, WalContext context) {
        Map<String, String> q = UriSettings.query(uri, Set.of("capacity"));
        long capacity = q.containsKey("capacity") ? UriSettings.parseBytes(uri + ": capacity", q.get("capacity"))
                : 64L * 1024 * 1024;
        String name = uri.getAuthority();
        WriteAheadLog wal = InMemoryWal.open(name, capacity, context);
        return new ForwardingWal(wal, "gated") {
            @Override
            public CompletableFuture<WalAppendResult> append(ByteBuf record) {
                CompletableFuture<WalAppendResult> written = super.append(record);
                CompletableFuture<Void> gate = GATES.get(name);
                return gate == null ? written : written.thenCombine(gate, (r, v) -> r);
            }
        };
    }
}
