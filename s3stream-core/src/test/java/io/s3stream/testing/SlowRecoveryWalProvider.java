package io.s3stream.testing;

import io.s3stream.internal.wal.InMemoryWal;
import io.s3stream.spi.UriSettings;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.spi.WriteAheadLogProvider;

import java.net.URI;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * {@code slowrecovery://name?capacity=64MiB&recordDelayMs=2}: the in-memory WAL {@code mem://name} whose
 * {@code recover()} pauses before each record and after the last one, the way a WAL read from a disk takes
 * time, so tests can watch what the engine does while {@code StreamStorage.open} is still recovering. Registered only on the test class path.
 */
public final class SlowRecoveryWalProvider implements WriteAheadLogProvider {
    @Override
    public String scheme() {
        return "slowrecovery";
    }

    @Override
    public Optional<URI> defaultUri(Path dataDir) {
        return Optional.empty();
    }

    @Override
    public WriteAheadLog open(URI uri, WalContext context) {
        Map<String, String> q = UriSettings.query(uri, Set.of("capacity", "recordDelayMs"));
        long capacity = q.containsKey("capacity") ? UriSettings.parseBytes(uri + ": capacity", q.get("capacity"))
                : 64L * 1024 * 1024;
        long delayMs = Long.parseLong(q.getOrDefault("recordDelayMs", "2"));
        WriteAheadLog wal = InMemoryWal.open(uri.getAuthority(), capacity, context);
        return new ForwardingWal(wal, "slow-recovery") {
            private void pause(long ms) {
                try {
                    Thread.sleep(ms);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }

            @Override
            public RecoveryResult recover(RecordHandler handler) {
                RecoveryResult result = super.recover((position, next, record) -> {
                    pause(delayMs);
                    handler.onRecord(position, next, record);
                });
                pause(5 * delayMs); // reading on past the last record until the scan finds where the log ends
                return result;
            }
        };
    }
}
